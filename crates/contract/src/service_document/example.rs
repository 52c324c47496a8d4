//! Examples made from a tool's JSON Schema: a value the schema accepts (for the request body
//! and, from the output schema, the 200 answer), and arguments it refuses with the validation
//! issues the gateway would answer (for the 400 example).
//!
//! A value is built from what the schema says: the schema's own `examples`/`example`,
//! `default`, `const` or first `enum` value first; else the first alternative of
//! `anyOf`/`oneOf`, the required properties (and the optional ones that have a default), a
//! string shaped by its `format`, `pattern` (a small subset of regular expressions) and
//! lengths, a number within its bounds. `$ref`s are followed within the schema up to
//! [`MAX_DEPTH`], so a recursive model ends. The result is checked against the schema before
//! it is published: an example the schema refuses is worse than none, so it is dropped.

use serde_json::{Map, Value, json};

use crate::{ArgumentValidator, ValidationIssue};

/// How many `$ref`s/nested objects deep an example goes.
const MAX_DEPTH: usize = 6;

/// A value `schema` (compiled: `validator`) accepts, when one can be made.
pub fn example(schema: &Value, validator: &ArgumentValidator) -> Option<Value> {
    let value = Builder { root: schema }.build(schema, 0)?;
    validator.check(&value).is_ok().then_some(value)
}

/// Arguments `schema` (compiled: `validator`) refuses, made from `valid` (an example it
/// accepts) by giving one top-level property a value of the wrong kind (or, failing that,
/// leaving out a required one), with the issues the gateway answers for them.
pub fn refused(
    schema: &Value,
    validator: &ArgumentValidator,
    valid: &Value,
) -> Option<(Value, Vec<ValidationIssue>)> {
    let object = valid.as_object()?;
    let mut attempts: Vec<Value> = Vec::new();
    for (name, value) in object {
        let wrong = if value.is_string() {
            json!(42)
        } else {
            json!("not valid here")
        };
        let mut changed = object.clone();
        changed.insert(name.clone(), wrong);
        attempts.push(Value::Object(changed));
    }
    for name in schema["required"].as_array().into_iter().flatten() {
        if let Some(name) = name.as_str() {
            let mut changed = object.clone();
            changed.remove(name);
            attempts.push(Value::Object(changed));
        }
    }
    attempts
        .into_iter()
        .find_map(|arguments| match validator.check(&arguments) {
            Err(issues) => Some((arguments, issues)),
            Ok(()) => None,
        })
}

struct Builder<'a> {
    root: &'a Value,
}

impl Builder<'_> {
    fn build(&self, schema: &Value, depth: usize) -> Option<Value> {
        let object = match schema {
            Value::Object(object) => object,
            // `true` accepts anything; `false` nothing.
            Value::Bool(true) => return Some(json!("example")),
            _ => return None,
        };
        if let Some(given) = object
            .get("examples")
            .and_then(|e| e.as_array()?.first())
            .or_else(|| object.get("example"))
            .or_else(|| object.get("default"))
            .or_else(|| object.get("const"))
            .or_else(|| object.get("enum").and_then(|e| e.as_array()?.first()))
        {
            return Some(given.clone());
        }
        if depth > MAX_DEPTH {
            return None;
        }
        if let Some(target) = object.get("$ref").and_then(Value::as_str) {
            let found = target
                .strip_prefix('#')
                .and_then(|pointer| self.root.pointer(pointer))?;
            return self.build(found, depth + 1);
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(options) = object.get(keyword).and_then(Value::as_array) {
                return options
                    .iter()
                    .filter(|o| o["type"] != "null")
                    .find_map(|o| self.build(o, depth + 1));
            }
        }
        if let Some(parts) = object.get("allOf").and_then(Value::as_array) {
            let mut merged = Map::new();
            for part in parts {
                match self.build(part, depth + 1)? {
                    Value::Object(fields) => merged.extend(fields),
                    other => return Some(other),
                }
            }
            return Some(Value::Object(merged));
        }
        match first_type(object) {
            "object" => self.object(object, depth),
            "array" => self.array(object, depth),
            "string" => Some(Value::String(string(object))),
            "integer" => Some(json!(number(object).round() as i64)),
            "number" => Some(json!(number(object))),
            "boolean" => Some(json!(false)),
            "null" => Some(Value::Null),
            _ => Some(json!("example")),
        }
    }

    fn object(&self, schema: &Map<String, Value>, depth: usize) -> Option<Value> {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Map::new();
        for (name, property) in schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let must = required.contains(&name.as_str());
            let shown = must || property.get("default").is_some();
            if !shown {
                continue;
            }
            match self.build(property, depth + 1) {
                Some(value) => {
                    out.insert(name.clone(), value);
                }
                None if must => return None,
                None => {}
            }
        }
        Some(Value::Object(out))
    }

    fn array(&self, schema: &Map<String, Value>, depth: usize) -> Option<Value> {
        let wanted = schema
            .get("minItems")
            .and_then(Value::as_u64)
            .unwrap_or(1)
            .max(1) as usize;
        let item = match schema.get("prefixItems").and_then(Value::as_array) {
            Some(tuple) => {
                return tuple
                    .iter()
                    .map(|s| self.build(s, depth + 1))
                    .collect::<Option<Vec<_>>>()
                    .map(Value::Array);
            }
            None => schema.get("items").map(|s| self.build(s, depth + 1)),
        };
        match item {
            Some(Some(item)) => Some(Value::Array(vec![item; wanted])),
            // No item schema: any items; none can be made: only the empty array, if allowed.
            Some(None) | None => schema
                .get("minItems")
                .is_none_or(|m| m.as_u64() == Some(0))
                .then(|| json!([])),
        }
    }
}

/// The schema's `type`, the first that is not `null` when it lists several; inferred from
/// `properties`/`items` when absent.
fn first_type(schema: &Map<String, Value>) -> &str {
    match schema.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.contains_key("properties") => "object",
        _ if schema.contains_key("items") || schema.contains_key("prefixItems") => "array",
        _ => "",
    }
}

fn string(schema: &Map<String, Value>) -> String {
    let by_format = match schema.get("format").and_then(Value::as_str) {
        Some("date-time") => Some("2026-01-01T12:00:00Z"),
        Some("date") => Some("2026-01-01"),
        Some("time") => Some("12:00:00Z"),
        Some("uuid") => Some("3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c"),
        Some("email") => Some("user@example.com"),
        Some("uri" | "url" | "iri") => Some("https://example.com/"),
        Some("hostname") => Some("example.com"),
        Some("ipv4") => Some("192.0.2.1"),
        Some("ipv6") => Some("2001:db8::1"),
        _ => None,
    };
    let mut text = by_format
        .map(str::to_owned)
        .or_else(|| {
            schema
                .get("pattern")
                .and_then(Value::as_str)
                .and_then(from_pattern)
        })
        .unwrap_or_else(|| "string".to_owned());
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = schema.get("maxLength").and_then(Value::as_u64);
    while text.chars().count() < min {
        text.push('x');
    }
    if let Some(max) = max {
        text = text.chars().take(max as usize).collect();
    }
    text
}

fn number(schema: &Map<String, Value>) -> f64 {
    let get = |k: &str| schema.get(k).and_then(Value::as_f64);
    let mut value = 1.0_f64;
    if let Some(min) = get("minimum") {
        value = value.max(min);
    }
    if let Some(min) = get("exclusiveMinimum") {
        value = value.max(min.floor() + 1.0);
    }
    if let Some(max) = get("maximum") {
        value = value.min(max);
    }
    if let Some(max) = get("exclusiveMaximum") {
        value = value.min(max.ceil() - 1.0);
    }
    if let Some(step) = get("multipleOf").filter(|s| *s > 0.0) {
        value = (value / step).ceil() * step;
    }
    value
}

/// A string matching `pattern`, for the patterns a schema usually has: literals, escapes
/// (`\d`, `\w`, `\s`, `\.`), classes (`[0-9a-z_]`, not negated), groups with alternatives,
/// and the quantifiers `? * + {n} {n,} {n,m}`. `None` for anything else.
fn from_pattern(pattern: &str) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut at = 0;
    let out = alternatives(&chars, &mut at)?;
    (at == chars.len()).then_some(out)
}

fn alternatives(chars: &[char], at: &mut usize) -> Option<String> {
    let first = sequence(chars, at)?;
    while chars.get(*at) == Some(&'|') {
        *at += 1;
        sequence(chars, at)?;
    }
    Some(first)
}

fn sequence(chars: &[char], at: &mut usize) -> Option<String> {
    let mut out = String::new();
    while let Some(&c) = chars.get(*at) {
        let atom = match c {
            '|' | ')' => break,
            '^' | '$' => {
                *at += 1;
                continue;
            }
            '(' => {
                *at += 1;
                if chars.get(*at) == Some(&'?') {
                    // Only non-capturing groups: `(?:`.
                    if chars.get(*at + 1) != Some(&':') {
                        return None;
                    }
                    *at += 2;
                }
                let inner = alternatives(chars, at)?;
                if chars.get(*at) != Some(&')') {
                    return None;
                }
                *at += 1;
                inner
            }
            '[' => {
                *at += 1;
                if chars.get(*at) == Some(&'^') {
                    return None;
                }
                let first = match chars.get(*at)? {
                    '\\' => escaped(*chars.get(*at + 1)?)?,
                    other => *other,
                };
                while chars.get(*at)? != &']' {
                    *at += if chars[*at] == '\\' { 2 } else { 1 };
                }
                *at += 1;
                first.to_string()
            }
            '\\' => {
                let e = escaped(*chars.get(*at + 1)?)?;
                *at += 2;
                e.to_string()
            }
            '.' => {
                *at += 1;
                "a".to_owned()
            }
            '*' | '+' | '?' | '{' => return None,
            other => {
                *at += 1;
                other.to_string()
            }
        };
        let times = quantifier(chars, at)?;
        out.push_str(&atom.repeat(times));
    }
    Some(out)
}

fn escaped(c: char) -> Option<char> {
    match c {
        'd' => Some('0'),
        'w' => Some('a'),
        's' => Some(' '),
        c if c.is_ascii_alphanumeric() => None,
        c => Some(c),
    }
}

/// How many times the atom before `at` is repeated (the least its quantifier allows, one for
/// `+`).
fn quantifier(chars: &[char], at: &mut usize) -> Option<usize> {
    let times = match chars.get(*at) {
        Some('?' | '*') => {
            *at += 1;
            0
        }
        Some('+') => {
            *at += 1;
            1
        }
        Some('{') => {
            let end = chars[*at..].iter().position(|c| *c == '}')? + *at;
            let inside: String = chars[*at + 1..end].iter().collect();
            *at = end + 1;
            inside.split(',').next()?.trim().parse().ok()?
        }
        _ => return Some(1),
    };
    // A lazy or possessive mark changes nothing about the least count.
    if matches!(chars.get(*at), Some('?' | '+')) {
        *at += 1;
    }
    Some(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compiled(schema: &Value) -> ArgumentValidator {
        ArgumentValidator::compile(schema).unwrap()
    }

    #[test]
    fn patterns_make_matching_strings() {
        for (pattern, made) in [
            ("^[0-9]{5}$", "00000"),
            (r"^\d{3}-[A-Z]{2,4}$", "000-AA"),
            ("^(foo|bar)+x?$", "foo"),
            (r"^[a-z_][a-z0-9_]*\.py$", "a.py"),
            ("^x(?:ab|cd)-y$", "xab-y"),
            (r"^[\d][\w-]{2}$", "0aa"),
            ("^a{2,}b{0,3}c+?$", "aac"),
            ("^x.y$", "xay"),
            ("^a++b$", "ab"),
        ] {
            assert_eq!(from_pattern(pattern).as_deref(), Some(made), "{pattern}");
        }
        for unsupported in ["^[^x]$", r"\bword", "(?=x)"] {
            assert_eq!(from_pattern(unsupported), None, "{unsupported}");
        }
    }

    #[test]
    fn examples_follow_refs_defaults_and_bounds() {
        let schema = json!({
            "$defs": {"Node": {"type": "object", "properties": {
                "label": {"type": "string", "minLength": 8},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                "required": ["label", "children"]}},
            "type": "object",
            "properties": {
                "tree": {"$ref": "#/$defs/Node"},
                "mode": {"enum": ["fast", "slow"]},
                "level": {"type": "integer", "minimum": 3, "maximum": 9, "default": 4},
                "when": {"type": "string", "format": "date-time"}
            },
            "required": ["tree", "mode", "when"]
        });
        let made = example(&schema, &compiled(&schema)).expect("an example");
        assert_eq!(made["mode"], "fast");
        assert_eq!(made["level"], 4);
        assert_eq!(made["when"], "2026-01-01T12:00:00Z");
        assert_eq!(made["tree"]["label"], "stringxx");
        // The recursion ends: the deepest `children` is empty.
        let mut node = &made["tree"];
        let mut levels = 0;
        while let Some(child) = node["children"].get(0) {
            node = child;
            levels += 1;
        }
        assert!(levels <= MAX_DEPTH, "{levels}");
    }

    /// Each rule of the builder, with the one value it makes: an example that is merely valid
    /// would let a changed rule pass unseen (the validator accepts "string" for a `date`).
    #[test]
    fn each_schema_keyword_makes_its_own_value() {
        for (schema, made) in [
            (json!(true), json!("example")),
            (json!({"description": "anything"}), json!("example")),
            (json!({"type": "boolean"}), json!(false)),
            (json!({"type": "null"}), json!(null)),
            (json!({"type": ["null", "integer"]}), json!(1)),
            (json!({"type": "integer", "minimum": 3}), json!(3)),
            (
                json!({"type": "integer", "exclusiveMinimum": 1.5}),
                json!(2),
            ),
            (json!({"type": "integer", "maximum": -4}), json!(-4)),
            (
                json!({"type": "integer", "exclusiveMaximum": -2.5}),
                json!(-3),
            ),
            (
                json!({"type": "integer", "minimum": 7, "multipleOf": 3}),
                json!(9),
            ),
            (json!({"type": "number", "minimum": 0.25}), json!(1.0)),
            (
                json!({"type": "string", "format": "date"}),
                json!("2026-01-01"),
            ),
            (
                json!({"type": "string", "format": "time"}),
                json!("12:00:00Z"),
            ),
            (
                json!({"type": "string", "format": "uuid"}),
                json!("3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c"),
            ),
            (
                json!({"type": "string", "format": "email"}),
                json!("user@example.com"),
            ),
            (
                json!({"type": "string", "format": "iri"}),
                json!("https://example.com/"),
            ),
            (
                json!({"type": "string", "format": "hostname"}),
                json!("example.com"),
            ),
            (
                json!({"type": "string", "format": "ipv4"}),
                json!("192.0.2.1"),
            ),
            (
                json!({"type": "string", "format": "ipv6"}),
                json!("2001:db8::1"),
            ),
            (json!({"type": "string", "maxLength": 3}), json!("str")),
            (
                json!({"anyOf": [{"type": "null"}, {"type": "integer"}]}),
                json!(1),
            ),
            (
                json!({"allOf": [{"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"]},
                                 {"type": "object", "properties": {"b": {"const": 2}}, "required": ["b"]}]}),
                json!({"a": 1, "b": 2}),
            ),
            // Without `type`: inferred from `properties`, `items` or `prefixItems`.
            (
                json!({"properties": {"a": {"type": "integer"}}, "required": ["a"]}),
                json!({"a": 1}),
            ),
            (json!({"items": {"type": "integer"}}), json!([1])),
            (
                json!({"prefixItems": [{"type": "integer"}, {"type": "boolean"}]}),
                json!([1, false]),
            ),
            (
                json!({"type": "array", "items": {"type": "integer"}, "minItems": 3}),
                json!([1, 1, 1]),
            ),
            // Items that cannot be made: the empty array where it is allowed.
            (
                json!({"type": "array", "items": false, "minItems": 0}),
                json!([]),
            ),
            // A first alternative that cannot be made (its required `x` accepts nothing)
            // gives way to the next.
            (
                json!({"anyOf": [{"type": "object", "properties": {"x": false}, "required": ["x"]},
                                 {"type": "string"}]}),
                json!("string"),
            ),
        ] {
            assert_eq!(example(&schema, &compiled(&schema)), Some(made), "{schema}");
        }
        let none = json!({"type": "array", "items": false, "minItems": 2});
        assert_eq!(example(&none, &compiled(&none)), None);
        // Why `multipleOf` is only looked at when positive (.cargo/mutants.toml): a schema with
        // 0 is refused before any example is made.
        assert!(ArgumentValidator::compile(&json!({"type": "number", "multipleOf": 0})).is_err());
    }

    /// A value MAX_DEPTH levels down is made; one more level is not, through every construct
    /// that goes a level deeper.
    #[test]
    fn examples_end_exactly_at_the_depth_bound() {
        type Nest = fn(usize) -> Value;
        fn wrapped(levels: usize, wrap: fn(Value) -> Value) -> Value {
            (0..levels).fold(json!({"type": "integer"}), |inner, _| wrap(inner))
        }
        let nests: [(&str, Nest); 6] = [
            ("object", |n| {
                wrapped(
                    n,
                    |inner| json!({"type": "object", "properties": {"a": inner}, "required": ["a"]}),
                )
            }),
            ("items", |n| {
                wrapped(
                    n,
                    |inner| json!({"type": "array", "items": inner, "minItems": 1}),
                )
            }),
            ("prefixItems", |n| {
                wrapped(n, |inner| json!({"type": "array", "prefixItems": [inner]}))
            }),
            ("anyOf", |n| wrapped(n, |inner| json!({"anyOf": [inner]}))),
            ("allOf", |n| wrapped(n, |inner| json!({"allOf": [inner]}))),
            // d0 is the integer, each d<k> refers to d<k-1>, the root to the last.
            ("$ref", |n| {
                let mut defs = serde_json::Map::new();
                defs.insert("d0".into(), json!({"type": "integer"}));
                for k in 1..n {
                    defs.insert(
                        format!("d{k}"),
                        json!({"$ref": format!("#/$defs/d{}", k - 1)}),
                    );
                }
                json!({"$defs": defs, "$ref": format!("#/$defs/d{}", n - 1)})
            }),
        ];
        for (name, nested) in nests {
            let at_bound = nested(MAX_DEPTH);
            assert!(
                Builder { root: &at_bound }.build(&at_bound, 0).is_some(),
                "{name}: {MAX_DEPTH} levels"
            );
            let beyond = nested(MAX_DEPTH + 1);
            assert_eq!(
                Builder { root: &beyond }.build(&beyond, 0),
                None,
                "{name}: {} levels",
                MAX_DEPTH + 1
            );
        }
    }

    #[test]
    fn an_example_the_schema_refuses_is_not_published() {
        // A pattern outside the subset: the made string would not match.
        let schema = json!({"type": "string", "pattern": "^[^s]+$"});
        assert_eq!(example(&schema, &compiled(&schema)), None);
    }

    #[test]
    fn refused_arguments_come_with_the_gateways_issues() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let (arguments, issues) = refused(&schema, &compiled(&schema), &json!({"n": 1})).unwrap();
        assert_eq!(arguments, json!({"n": "not valid here"}));
        assert_eq!(issues[0].path, "/n");
        // No property can be made wrong and none is required: nothing to show.
        let open = json!({"type": "object"});
        assert!(refused(&open, &compiled(&open), &json!({})).is_none());
    }
}
