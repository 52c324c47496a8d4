//! Test inputs from a tool's JSON Schema: a proptest strategy of values the schema accepts,
//! and one of values it rejects, each with the reason it must be rejected.
//!
//! Covered: `type` (one or a list), `enum`, `const`, `minimum`/`maximum` (and exclusive),
//! `minLength`/`maxLength`, `pattern` (when proptest can generate from it), `format`
//! date-time/date/uuid/email/uri, `required`, nested `properties`, `items`,
//! `minItems`/`maxItems`, `additionalProperties`, `anyOf`/`oneOf` (a branch at a time), local
//! `$ref`. What is not covered generates conservatively (a default, or the empty object) so a
//! "valid" input is never one the schema rejects.

use proptest::prelude::*;
use serde_json::{Map, Number, Value, json};

/// How deep nested objects and arrays are generated.
const MAX_DEPTH: u32 = 4;

/// A strategy of values `schema` accepts; `root` resolves local `$ref`s.
pub fn valid(schema: &Value, root: &Value) -> BoxedStrategy<Value> {
    valid_at(schema, root, 0)
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema["$ref"].as_str().and_then(|r| r.strip_prefix('#')) {
        Some(pointer) => root.pointer(pointer).unwrap_or(schema),
        None => schema,
    }
}

fn valid_at(schema: &Value, root: &Value, depth: u32) -> BoxedStrategy<Value> {
    let schema = resolve(schema, root);
    if schema == &Value::Bool(true) || schema.as_object().is_some_and(|o| o.is_empty()) {
        return prop_oneof![Just(json!("x")), Just(json!(1)), Just(json!(true))].boxed();
    }
    if let Some(c) = schema.get("const") {
        return Just(c.clone()).boxed();
    }
    if let Some(values) = schema["enum"].as_array().filter(|v| !v.is_empty()) {
        return proptest::sample::select(values.clone()).boxed();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema[key].as_array().filter(|b| !b.is_empty()) {
            // A branch refines the schema around it (`required: [a]` beside `properties`):
            // generate from the two merged.
            let branches: Vec<Value> = branches
                .iter()
                .map(|b| merge(schema, key, resolve(b, root)))
                .collect();
            // oneOf: a value of one branch may match another too; only the first branch is
            // safe to generate from without solving the schema.
            let branches: Vec<BoxedStrategy<Value>> = if key == "oneOf" {
                vec![valid_at(&branches[0], root, depth)]
            } else {
                branches.iter().map(|b| valid_at(b, root, depth)).collect()
            };
            return proptest::strategy::Union::new(branches).boxed();
        }
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ if schema.get("properties").is_some() => vec!["object"],
        _ => vec![],
    };
    if types.is_empty() {
        return match schema.get("default") {
            Some(d) => Just(d.clone()).boxed(),
            None => Just(json!({})).boxed(),
        };
    }
    let strategies: Vec<BoxedStrategy<Value>> = types
        .iter()
        .map(|t| of_type(t, schema, root, depth))
        .collect();
    proptest::strategy::Union::new(strategies).boxed()
}

fn of_type(kind: &str, schema: &Value, root: &Value, depth: u32) -> BoxedStrategy<Value> {
    match kind {
        "null" => Just(Value::Null).boxed(),
        "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
        "integer" => {
            let (low, high) = integer_bounds(schema);
            (low..=high).prop_map(|n| json!(n)).boxed()
        }
        "number" => {
            let low = schema["minimum"]
                .as_f64()
                .or(schema["exclusiveMinimum"].as_f64().map(|m| m + 1e-6));
            let high = schema["maximum"]
                .as_f64()
                .or(schema["exclusiveMaximum"].as_f64().map(|m| m - 1e-6));
            let (low, high) = match (low, high) {
                (Some(l), Some(h)) => (l, h),
                (Some(l), None) => (l, l + 1e6),
                (None, Some(h)) => (h - 1e6, h),
                (None, None) => (-1e6, 1e6),
            };
            let integral = (low.ceil() as i64)..=(high.floor() as i64);
            let fractional = (low..=high)
                .prop_map(|f| Number::from_f64(f).map(Value::Number).unwrap_or(json!(0)));
            if integral.start() <= integral.end() {
                prop_oneof![integral.prop_map(|n| json!(n)), fractional].boxed()
            } else {
                fractional.boxed()
            }
        }
        "string" => string(schema),
        "array" => {
            let (min, max) = size_bounds(schema, "minItems", "maxItems", 4);
            let max = if depth >= MAX_DEPTH { min } else { max };
            let items = schema
                .get("items")
                .cloned()
                .unwrap_or(json!({"type": "string"}));
            proptest::collection::vec(valid_at(&items, root, depth + 1), min..=max)
                .prop_map(Value::Array)
                .boxed()
        }
        "object" => object(schema, root, depth),
        _ => Just(Value::Null).boxed(),
    }
}

fn integer_bounds(schema: &Value) -> (i64, i64) {
    let low = schema["minimum"]
        .as_f64()
        .map(|m| m.ceil() as i64)
        .or(schema["exclusiveMinimum"]
            .as_f64()
            .map(|m| m.floor() as i64 + 1));
    let high = schema["maximum"]
        .as_f64()
        .map(|m| m.floor() as i64)
        .or(schema["exclusiveMaximum"]
            .as_f64()
            .map(|m| m.ceil() as i64 - 1));
    match (low, high) {
        (Some(l), Some(h)) => (l, h.max(l)),
        (Some(l), None) => (l, l.saturating_add(1000)),
        (None, Some(h)) => (h.saturating_sub(1000), h),
        (None, None) => (-1000, 1000),
    }
}

/// A size range from a schema's `min*`/`max*` keywords: at least 0, and up to `span` more than
/// the minimum when there is no maximum.
fn size_bounds(schema: &Value, min_key: &str, max_key: &str, span: usize) -> (usize, usize) {
    let min = schema[min_key].as_u64().unwrap_or(0) as usize;
    let max = schema[max_key]
        .as_u64()
        .map(|m| m as usize)
        .unwrap_or(min + span)
        .max(min);
    (min, max)
}

fn string(schema: &Value) -> BoxedStrategy<Value> {
    let (min, max) = size_bounds(schema, "minLength", "maxLength", 16);
    if let Some(format) = schema["format"].as_str() {
        let fixed = match format {
            "date-time" => Some("2026-01-01T12:00:00Z"),
            "date" => Some("2026-01-01"),
            "uuid" => Some("3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c"),
            "email" => Some("someone@example.com"),
            "uri" | "url" => Some("http://127.0.0.1/"),
            _ => None,
        };
        if let Some(value) = fixed {
            return Just(json!(value)).boxed();
        }
    }
    if let Some(pattern) = schema["pattern"].as_str() {
        // JSON Schema patterns are unanchored; generate a full match of the pattern itself.
        let anchored = pattern.trim_start_matches('^').trim_end_matches('$');
        if let Ok(strategy) = proptest::string::string_regex(anchored) {
            return strategy
                .prop_filter("length bounds", move |s| {
                    (min..=max).contains(&s.chars().count())
                })
                .prop_map(Value::String)
                .boxed();
        }
    }
    // Printable characters from all of Unicode, not only ASCII.
    proptest::collection::vec(prop_oneof![3 => proptest::char::range('a', 'z'), 1 => any::<char>().prop_filter("printable", |c| !c.is_control())], min..=max)
        .prop_map(|chars| Value::String(chars.into_iter().collect()))
        .boxed()
}

/// `parent` without `keyword`, refined by `branch`: `required` lists and `properties` maps
/// united, other keywords of the branch winning.
fn merge(parent: &Value, keyword: &str, branch: &Value) -> Value {
    let mut merged = parent.clone();
    let Some(object) = merged.as_object_mut() else {
        return branch.clone();
    };
    object.remove(keyword);
    for (key, value) in branch.as_object().into_iter().flatten() {
        match (key.as_str(), object.get_mut(key)) {
            ("required", Some(Value::Array(existing))) => {
                for name in value.as_array().into_iter().flatten() {
                    if !existing.contains(name) {
                        existing.push(name.clone());
                    }
                }
            }
            ("properties", Some(Value::Object(existing))) => {
                for (name, property) in value.as_object().into_iter().flatten() {
                    existing.insert(name.clone(), property.clone());
                }
            }
            _ => {
                object.insert(key.clone(), value.clone());
            }
        }
    }
    merged
}

/// The names in `required`.
fn required_of(schema: &Value) -> Vec<String> {
    schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_owned))
        .collect()
}

fn object(schema: &Value, root: &Value, depth: u32) -> BoxedStrategy<Value> {
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required = required_of(schema);
    let mut fields: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    for (name, property) in &properties {
        let name = name.clone();
        let value = valid_at(property, root, depth + 1);
        if required.contains(&name) {
            fields.push(value.prop_map(move |v| Some((name.clone(), v))).boxed());
        } else if depth < MAX_DEPTH {
            fields.push(proptest::option::of(value.prop_map(move |v| (name.clone(), v))).boxed());
        }
    }
    // A required name with no property schema: any string satisfies it unless the schema
    // constrains additional properties, which we do not try to solve.
    for name in required.iter().filter(|r| !properties.contains_key(*r)) {
        let name = name.clone();
        fields.push(Just(Some((name, json!("x")))).boxed());
    }
    fields
        .prop_map(|pairs| {
            Value::Object(pairs.into_iter().flatten().collect::<Map<String, Value>>())
        })
        .boxed()
}

/// A strategy of (value the schema rejects, why), or None when no rule of the schema can be
/// broken by the mutations we know (required, type, range, length, additionalProperties).
pub fn invalid(schema: &Value, root: &Value) -> Option<BoxedStrategy<(Value, String)>> {
    let schema = resolve(schema, root);
    let base = valid(schema, root);
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required = required_of(schema);
    let mut mutations: Vec<BoxedStrategy<(Value, String)>> = Vec::new();

    if !required.is_empty() {
        let required = required.clone();
        mutations.push(
            (base.clone(), proptest::sample::select(required))
                .prop_map(|(mut v, name)| {
                    v.as_object_mut().map(|o| o.remove(&name));
                    (v, format!("required property '{name}' removed"))
                })
                .boxed(),
        );
    }
    for (name, property) in &properties {
        let property = resolve(property, root);
        if let Some(wrong) = wrong_type(property) {
            let name = name.clone();
            mutations.push(
                base.clone()
                    .prop_map(move |mut v| {
                        v[&name] = wrong.clone();
                        (
                            v,
                            format!("'{name}' set to {wrong}, a type its schema does not allow"),
                        )
                    })
                    .boxed(),
            );
        }
        for (bad, why) in out_of_range(property) {
            let name = name.clone();
            mutations.push(
                base.clone()
                    .prop_map(move |mut v| {
                        v[&name] = bad.clone();
                        (v, format!("'{name}' {why}"))
                    })
                    .boxed(),
            );
        }
    }
    if schema["additionalProperties"] == Value::Bool(false) {
        mutations.push(
            base.clone()
                .prop_map(|mut v| {
                    v["conformance_unknown_field"] = json!(1);
                    (v, "unknown property 'conformance_unknown_field' with additionalProperties: false".to_owned())
                })
                .boxed(),
        );
    }
    if mutations.is_empty() {
        None
    } else {
        Some(proptest::strategy::Union::new(mutations).boxed())
    }
}

/// A value of a type the property's single declared `type` rules out.
fn wrong_type(property: &Value) -> Option<Value> {
    if property.get("enum").is_some() || property.get("const").is_some() {
        return Some(json!({"conformance": "not one of the allowed values"}));
    }
    let types: Vec<&str> = match &property["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let candidates = [
        ("string", json!(12345)),
        ("boolean", json!("yes")),
        ("object", json!([1, 2])),
        ("array", json!({"not": "an array"})),
        ("integer", json!("not a number")),
        ("number", json!("not a number")),
        ("null", json!("not null")),
    ];
    let accepts = |value: &Value| {
        types.iter().any(|t| match (*t, value) {
            ("string", Value::String(_))
            | ("boolean", Value::Bool(_))
            | ("object", Value::Object(_)) => true,
            ("array", Value::Array(_)) | ("null", Value::Null) => true,
            ("number", Value::Number(_)) => true,
            ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
            _ => false,
        })
    };
    candidates
        .into_iter()
        .find(|(t, _)| types.contains(t))
        .map(|(_, v)| v)
        .filter(|v| !accepts(v))
}

/// Values just outside the property's bounds, with what they break.
fn out_of_range(property: &Value) -> Vec<(Value, String)> {
    let mut out = Vec::new();
    let kind = property["type"].as_str().unwrap_or_default();
    if kind == "integer" || kind == "number" {
        if let Some(max) = property["maximum"].as_f64() {
            out.push((json!(max as i64 + 1), format!("above maximum {max}")));
        }
        if let Some(min) = property["minimum"].as_f64() {
            out.push((json!(min as i64 - 1), format!("below minimum {min}")));
        }
        if let Some(max) = property["exclusiveMaximum"].as_f64() {
            out.push((json!(max), format!("not below exclusiveMaximum {max}")));
        }
        if let Some(min) = property["exclusiveMinimum"].as_f64() {
            out.push((json!(min), format!("not above exclusiveMinimum {min}")));
        }
    }
    if kind == "string" {
        if let Some(max) = property["maxLength"].as_u64() {
            out.push((
                json!("x".repeat(max as usize + 1)),
                format!("longer than maxLength {max}"),
            ));
        }
        if let Some(min) = property["minLength"].as_u64().filter(|m| *m > 0) {
            out.push((
                json!("x".repeat(min as usize - 1)),
                format!("shorter than minLength {min}"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::test_runner::TestRunner;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 8},
                "depth": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"enum": ["up", "down"]},
                "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{2,4}$"}, "maxItems": 3},
                "when": {"type": "string", "format": "date-time"},
                "inner": {"type": "object", "properties": {"x": {"type": "number", "exclusiveMaximum": 5}}, "required": ["x"]}
            },
            "required": ["name", "depth"],
            "additionalProperties": false
        })
    }

    /// Runs the valid-value strategy and checks each value against the schema itself.
    fn every_generated_value_validates(schema: &Value) {
        let validator = jsonschema::validator_for(schema).unwrap();
        let mut runner = TestRunner::deterministic();
        runner
            .run(&valid(schema, schema), |v| {
                prop_assert!(validator.is_valid(&v), "{v}");
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn generated_valid_values_validate() {
        let schema = schema();
        every_generated_value_validates(&schema);
    }

    #[test]
    fn generated_invalid_values_do_not_validate() {
        let schema = schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut runner = TestRunner::deterministic();
        runner
            .run(&invalid(&schema, &schema).unwrap(), |(v, why)| {
                prop_assert!(!validator.is_valid(&v), "{why}: {v}");
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn branches_refine_the_object_around_them() {
        let schema = json!({
            "type": "object",
            "properties": {"prompt": {"type": "string"}, "messages": {"type": "array", "minItems": 1}, "model": {"type": "string"}},
            "required": ["model"],
            "anyOf": [{"required": ["prompt"]}, {"required": ["messages"]}],
            "additionalProperties": false
        });
        every_generated_value_validates(&schema);
    }

    #[test]
    fn nothing_to_break_gives_none() {
        assert!(invalid(&json!({"type": "object"}), &json!({})).is_none());
    }
}
