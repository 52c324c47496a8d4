//! Tools from an upstream's OpenAPI 3.x document: one per operation with an `operationId`
//! (filtered by `include`/`exclude`), its path, query and header parameters and its JSON
//! request body (as the `body` argument) making the input schema. Local `$ref`s to
//! `components/schemas` are carried along as `$defs`; remote ones are not followed.

use std::collections::BTreeMap;

use contract::ToolSchema;
use serde_json::{Map, Value, json};

use super::Mapping;
use crate::config::HttpProviderConfig;
use crate::dependency::http::{HttpDependency, without_url};

const IMPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The operations imported: each method as the document's key names it.
const METHODS: [(&str, reqwest::Method); 5] = [
    ("get", reqwest::Method::GET),
    ("post", reqwest::Method::POST),
    ("put", reqwest::Method::PUT),
    ("patch", reqwest::Method::PATCH),
    ("delete", reqwest::Method::DELETE),
];

/// Why an OpenAPI document gives no tools.
#[derive(Debug, thiserror::Error)]
pub enum OpenApiImportError {
    /// Fetching the document failed (reqwest's message without the URL, which may carry a key).
    #[error("{}", without_url(.0))]
    Fetch(#[source] reqwest::Error),
    #[error("GET answered {0}")]
    Status(reqwest::StatusCode),
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("not an OpenAPI document: {0}")]
    NotYaml(#[source] serde_saphyr::Error),
    #[error("only OpenAPI 3.x documents can be imported")]
    NotOpenApi3,
}

/// Reads the document (a file, relative to the config's folder, or a URL the user configured)
/// and turns its operations into tools.
pub async fn import(
    source: &str,
    config: &HttpProviderConfig,
    api: &HttpDependency,
) -> Result<Vec<(ToolSchema, Mapping)>, OpenApiImportError> {
    let text = if source.starts_with("http://") || source.starts_with("https://") {
        // Its own bound: a large generated document may take longer than one tool call.
        let response = api
            .client
            .get(source)
            .timeout(IMPORT_TIMEOUT)
            .send()
            .await
            .map_err(OpenApiImportError::Fetch)?;
        if !response.status().is_success() {
            return Err(OpenApiImportError::Status(response.status()));
        }
        response.text().await.map_err(OpenApiImportError::Fetch)?
    } else {
        std::fs::read_to_string(source).map_err(|e| OpenApiImportError::Read {
            path: source.to_owned(),
            source: e,
        })?
    };
    let document: Value = serde_saphyr::from_str(&text).map_err(OpenApiImportError::NotYaml)?;
    tools_of(&document, &config.include, &config.exclude)
}

/// The tools of a parsed document.
pub fn tools_of(
    document: &Value,
    include: &[String],
    exclude: &[String],
) -> Result<Vec<(ToolSchema, Mapping)>, OpenApiImportError> {
    if !document["openapi"]
        .as_str()
        .is_some_and(|v| v.starts_with('3'))
    {
        return Err(OpenApiImportError::NotOpenApi3);
    }
    let defs = document["components"]["schemas"].clone();
    let mut tools = Vec::new();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        let shared = item["parameters"].as_array().cloned().unwrap_or_default();
        for (method, verb) in METHODS {
            let Some(op) = item.get(method) else { continue };
            let Some(id) = op["operationId"].as_str() else {
                continue;
            };
            if (!include.is_empty() && !include.iter().any(|i| i == id))
                || exclude.iter().any(|e| e == id)
            {
                continue;
            }
            let mut properties = Map::new();
            let mut required = Vec::new();
            let mut query = BTreeMap::new();
            let mut headers = BTreeMap::new();
            let parameters = shared
                .iter()
                .chain(op["parameters"].as_array().into_iter().flatten());
            for parameter in parameters {
                let parameter = resolve(document, parameter);
                let Some(name) = parameter["name"].as_str() else {
                    continue;
                };
                let mut schema = parameter
                    .get("schema")
                    .cloned()
                    .unwrap_or(json!({"type": "string"}));
                if let Some(description) = parameter.get("description") {
                    schema["description"] = description.clone();
                }
                properties.insert(name.to_owned(), schema);
                let location = parameter["in"].as_str().unwrap_or_default();
                if parameter["required"] == true || location == "path" {
                    required.push(json!(name));
                }
                let fill = format!("{{{{ {name} if {name} is defined else '' }}}}");
                match location {
                    "query" => {
                        query.insert(name.to_owned(), fill);
                    }
                    "header" => {
                        headers.insert(name.to_owned(), fill);
                    }
                    _ => {}
                }
            }
            let mut body = None;
            let body_schema =
                &resolve(document, &op["requestBody"])["content"]["application/json"]["schema"];
            if !body_schema.is_null() {
                properties.insert("body".into(), body_schema.clone());
                if op["requestBody"]["required"] == true {
                    required.push(json!("body"));
                }
                body = Some("{{ body | tojson if body is defined else 'null' }}".to_owned());
            }
            let mut input_schema =
                json!({"type": "object", "properties": properties, "required": required});
            if defs.is_object() {
                input_schema["$defs"] = defs.clone();
            }
            let input_schema = rewrite_refs(input_schema);
            let description = op["summary"]
                .as_str()
                .or(op["description"].as_str())
                .unwrap_or(id)
                .to_owned();
            tools.push((
                ToolSchema {
                    qualified_name: None,
                    title: None,
                    output_schema: None,
                    untyped_result: contract::UntypedResult::AnyJson,
                    name: id.to_owned(),
                    description,
                    input_schema,
                    annotations: Some(
                        json!({"readOnlyHint": method == "get", "openWorldHint": true}),
                    ),
                    icons: None,
                    score: None,
                },
                Mapping {
                    method: verb,
                    path: path.clone(),
                    query,
                    headers,
                    body,
                    result: String::new(),
                },
            ));
        }
    }
    Ok(tools)
}

/// Follows a local `$ref` (one level) to a parameter or request body.
fn resolve<'a>(document: &'a Value, value: &'a Value) -> &'a Value {
    match value["$ref"].as_str().and_then(|r| r.strip_prefix('#')) {
        Some(pointer) => document.pointer(pointer).unwrap_or(value),
        None => value,
    }
}

/// `#/components/schemas/X` → `#/$defs/X`, everywhere in the schema.
fn rewrite_refs(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| match (k.as_str(), &v) {
                    ("$ref", Value::String(r)) => {
                        (k, json!(r.replace("#/components/schemas/", "#/$defs/")))
                    }
                    _ => (k, rewrite_refs(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(rewrite_refs).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_become_tools() {
        let doc = json!({
            "openapi": "3.0.3",
            "paths": {
                "/pets/{petId}": {
                    "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "integer"}}],
                    "get": {"operationId": "getPet", "summary": "One pet",
                        "parameters": [{"name": "verbose", "in": "query", "schema": {"type": "boolean"}}]},
                    "delete": {"operationId": "deletePet"}
                },
                "/pets": {"post": {"operationId": "addPet", "requestBody": {"required": true,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}}
            },
            "components": {"schemas": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}
        });
        let mut tools = tools_of(&doc, &[], &["deletePet".into()]).unwrap();
        let names: Vec<&str> = tools.iter().map(|(s, _)| s.name.as_str()).collect();
        assert_eq!(names, vec!["getPet", "addPet"], "in the document's order");
        // The catalog lists them by name.
        tools.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        let (get, mapping) = &tools[1];
        assert_eq!(get.input_schema["required"], json!(["petId"]));
        assert_eq!(get.input_schema["properties"]["verbose"]["type"], "boolean");
        assert_eq!(mapping.path, "/pets/{petId}");
        assert!(mapping.query.contains_key("verbose"));
        let (add, mapping) = &tools[0];
        assert_eq!(
            add.input_schema["properties"]["body"]["$ref"],
            "#/$defs/Pet"
        );
        assert!(
            jsonschema::validator_for(&add.input_schema)
                .unwrap()
                .is_valid(&json!({"body": {"name": "Rex"}}))
        );
        assert!(
            !jsonschema::validator_for(&add.input_schema)
                .unwrap()
                .is_valid(&json!({"body": {}}))
        );
        assert!(mapping.body.is_some());
        assert_eq!(mapping.method, reqwest::Method::POST);
        assert_eq!(tools[1].1.method, reqwest::Method::GET);
        let only = tools_of(&doc, &["getPet".into()], &[]).unwrap();
        assert_eq!(only.len(), 1);
    }

    #[test]
    fn the_reasons_read_as_before() {
        assert_eq!(
            tools_of(&json!({"swagger": "2.0"}), &[], &[])
                .unwrap_err()
                .to_string(),
            "only OpenAPI 3.x documents can be imported"
        );
        let missing = OpenApiImportError::Read {
            path: "api.yaml".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not there"),
        };
        assert_eq!(missing.to_string(), "api.yaml: not there");
        let not_yaml = serde_saphyr::from_str::<Value>("a: [").unwrap_err();
        let shown = format!("not an OpenAPI document: {not_yaml}");
        assert_eq!(OpenApiImportError::NotYaml(not_yaml).to_string(), shown);
    }
}
