//! A tool's JSON Schema moved into the document's `components/schemas`: the schema itself
//! under one name, each of its `$defs` (and draft-07 `definitions`) under a name of its own,
//! every internal `$ref` rewritten to point at those names.
//!
//! Why: a tool's schema written inline into an operation keeps `$ref: "#/$defs/Person"`,
//! which a reader of the document resolves against the document's root, where there is no
//! `$defs` — Swagger UI and client generators then fail. Hoisted, every `$ref` resolves, a
//! recursive model included (its `$ref` names its own component). `$schema` (and the root's
//! `$id`) are dropped: the document's dialect is OpenAPI 3.1's, and a viewer would otherwise
//! show `$schema` as if it were a field. The tool's original schema is left as the upstream
//! wrote it; the gateway validates calls against that one.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Keywords whose value is one subschema.
const ONE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
/// Keywords whose value is an array of subschemas.
const MANY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas.
const NAMED: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// Where a `$ref` into a tool's schema lands once hoisted.
pub struct Names {
    /// Component name of the schema itself (what `#` meant).
    pub root: String,
    /// Component name of each of the root's `$defs`/`definitions`, by its name there.
    pub defs: BTreeMap<String, String>,
}

/// The components a tool's schema becomes: `(name, schema)`, the root first.
pub struct Hoisted {
    pub root: String,
    /// The component name of each definition, by its name in the schema.
    pub defs: BTreeMap<String, String>,
    pub components: Vec<(String, Value)>,
}

/// The root's `$defs` and draft-07 `definitions` as written, by name.
pub fn definitions(schema: &Value) -> Map<String, Value> {
    let mut found = Map::new();
    for keyword in ["$defs", "definitions"] {
        if let Some(defs) = schema.get(keyword).and_then(Value::as_object) {
            found.extend(defs.clone());
        }
    }
    found
}

/// Hoists `schema` under `root` (a free component name); `name_def` gives the component name
/// of each definition (and must answer names not yet taken).
pub fn hoist(schema: &Value, root: String, mut name_def: impl FnMut(&str) -> String) -> Hoisted {
    let mut body = schema.clone();
    let defs = definitions(schema);
    if let Some(object) = body.as_object_mut() {
        object.remove("$defs");
        object.remove("definitions");
        // The root's own identity: with it, a reader would resolve `#…` against that URI.
        object.remove("$id");
    }
    let names = Names {
        root: root.clone(),
        defs: defs
            .iter()
            .map(|(name, _)| (name.clone(), name_def(name)))
            .collect(),
    };
    let mut components = vec![(root.clone(), body)];
    for (name, def) in defs {
        components.push((names.defs[&name].clone(), def));
    }
    for (_, component) in &mut components {
        tidy(component, &names);
        // Client generators name a class after a schema's `title`; two tools with a model of
        // the same title (or one model in both the input and output schema) would make two
        // classes of one name. The component's name is unique, so it names the class.
        if let Some(object) = component.as_object_mut() {
            object.remove("title");
        }
    }
    Hoisted {
        root,
        defs: names.defs,
        components,
    }
}

/// Rewrites every `$ref` of `schema` (a subschema of a tool's schema) and drops `$schema`.
fn tidy(schema: &mut Value, names: &Names) {
    each_schema(schema, &mut |object| {
        object.remove("$schema");
        // A titled inline object or enum would also become a class named by its title.
        if object.contains_key("properties") || object.contains_key("enum") {
            object.remove("title");
        }
        if let Some(Value::String(target)) = object.get_mut("$ref") {
            *target = rewrite(target, names);
        }
        // Draft-07 tuples: `items: [..]` (+ `additionalItems`) is `prefixItems` (+ `items`)
        // in the document's dialect, where an array under `items` is not a schema.
        if object.get("items").is_some_and(Value::is_array) {
            let tuple = object.remove("items").unwrap_or_default();
            object.insert("prefixItems".into(), tuple);
            if let Some(rest) = object.remove("additionalItems") {
                object.insert("items".into(), rest);
            }
        }
    });
}

/// The `$ref` a hoisted schema needs for `target`, written against the tool's own schema.
/// Only same-document references (`#…`) change; any other is left as it was.
pub fn rewrite(target: &str, names: &Names) -> String {
    let Some(fragment) = target.strip_prefix('#') else {
        return target.to_owned();
    };
    let pointer = percent_decode(fragment);
    let component = |name: &str| format!("#/components/schemas/{}", escape(name));
    let mut segments = pointer.split('/').skip(1);
    if let Some("$defs" | "definitions") = segments.next()
        && let Some(def) = segments.next().map(unescape)
        && let Some(name) = names.defs.get(&def)
    {
        let rest = pointer
            .split('/')
            .skip(3)
            .fold(String::new(), |acc, s| acc + "/" + s);
        return component(name) + &rest;
    }
    component(&names.root) + &pointer
}

/// Calls `visit` on every schema object of `schema`, itself included, following only keywords
/// whose values are schemas (so `properties: {"$ref": …}` names a property, `default` and
/// `const` are data, and none of them is touched).
pub fn each_schema(schema: &mut Value, visit: &mut impl FnMut(&mut Map<String, Value>)) {
    let Value::Object(object) = schema else {
        return;
    };
    visit(object);
    for (keyword, value) in object.iter_mut() {
        let keyword = keyword.as_str();
        match value {
            Value::Object(_) if ONE.contains(&keyword) => each_schema(value, visit),
            Value::Array(items) if MANY.contains(&keyword) => {
                for item in items {
                    each_schema(item, visit);
                }
            }
            Value::Object(named) if NAMED.contains(&keyword) => {
                for sub in named.values_mut() {
                    each_schema(sub, visit);
                }
            }
            _ => {}
        }
    }
}

/// A component name as a JSON-pointer segment (RFC 6901).
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// `%XX` sequences of a URI fragment as the bytes they stand for.
fn percent_decode(fragment: &str) -> String {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = fragment
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names() -> Names {
        Names {
            root: "tool__t__Input".into(),
            defs: BTreeMap::from([
                ("Person".into(), "tool__t__Person".into()),
                ("a/b".into(), "tool__t__a_b".into()),
            ]),
        }
    }

    #[test]
    fn refs_point_at_components() {
        let n = names();
        for (from, to) in [
            ("#", "#/components/schemas/tool__t__Input"),
            ("#/$defs/Person", "#/components/schemas/tool__t__Person"),
            (
                "#/definitions/Person",
                "#/components/schemas/tool__t__Person",
            ),
            (
                "#/$defs/Person/properties/name",
                "#/components/schemas/tool__t__Person/properties/name",
            ),
            ("#/$defs/a~1b", "#/components/schemas/tool__t__a_b"),
            ("#/$defs/%50erson", "#/components/schemas/tool__t__Person"),
            (
                "#/properties/x",
                "#/components/schemas/tool__t__Input/properties/x",
            ),
            ("https://example.com/s.json", "https://example.com/s.json"),
        ] {
            assert_eq!(rewrite(from, &n), to, "{from}");
        }
    }

    #[test]
    fn hoisting_moves_defs_and_leaves_data_alone() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "$id": "urn:x",
            "type": "object",
            "properties": {
                "$ref": {"type": "string"},
                "node": {"$ref": "#/definitions/Node", "default": {"$ref": "#/definitions/Node"}},
                "pair": {"type": "array", "items": [{"type": "string"}], "additionalItems": false},
                "mode": {"title": "Mode", "enum": ["a"]},
                "inner": {"title": "Inner", "type": "object", "properties": {}},
                "plain": {"title": "Plain", "type": "string"},
                "either": {"anyOf": [{"$ref": "#/definitions/Node"}, {"type": "null"}]},
                "choice": {"enum": [{"title": "T", "properties": {}}], "default": {"x": {"$ref": "#/definitions/Node"}}}
            },
            "definitions": {"Node": {"$schema": "x", "properties": {"next": {"$ref": "#/definitions/Node"}}}}
        });
        let hoisted = hoist(&schema, "R".into(), |d| format!("D_{d}"));
        let parts: BTreeMap<_, _> = hoisted.components.into_iter().collect();
        assert_eq!(
            parts["R"],
            json!({
                "type": "object",
                "properties": {
                    "$ref": {"type": "string"},
                    "node": {"$ref": "#/components/schemas/D_Node", "default": {"$ref": "#/definitions/Node"}},
                    "pair": {"type": "array", "prefixItems": [{"type": "string"}], "items": false},
                    // An inline enum or object would become a class named by its title.
                    "mode": {"enum": ["a"]},
                    "inner": {"type": "object", "properties": {}},
                    "plain": {"title": "Plain", "type": "string"},
                    "either": {"anyOf": [{"$ref": "#/components/schemas/D_Node"}, {"type": "null"}]},
                    // `enum` and `default` are data, whatever they hold.
                    "choice": {"enum": [{"title": "T", "properties": {}}], "default": {"x": {"$ref": "#/definitions/Node"}}}
                }
            })
        );
        assert_eq!(
            parts["D_Node"],
            json!({"properties": {"next": {"$ref": "#/components/schemas/D_Node"}}})
        );
    }
}
