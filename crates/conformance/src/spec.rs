//! The contract as the tester reads it: the OpenAPI document (the committed one, compiled in,
//! or `--spec FILE`), and a compiled JSON Schema (2020-12, formats checked) for every
//! documented response of every operation.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};

/// The committed contract, so the tester needs no file to run.
const COMMITTED: &str = include_str!("../../../openapi/openapi.yaml");

/// What the document says about one response.
pub enum Expectation<'a> {
    /// Validate the body with this schema.
    Schema(&'a jsonschema::Validator),
    /// The operation exists but does not document this status.
    Undocumented {
        operation: String,
        documented: Vec<String>,
    },
}

pub struct Spec {
    pub document: Value,
    /// (path template, method, status) → validator of the JSON body
    responses: HashMap<(String, String, String), jsonschema::Validator>,
    /// For answers to requests the document has no operation for (unknown route, wrong method).
    error_envelope: jsonschema::Validator,
}

impl Spec {
    /// The committed document, or the one at `path`.
    pub fn load(path: Option<&Path>) -> Result<Spec, String> {
        let text = match path {
            Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
            None => COMMITTED.to_owned(),
        };
        let document: Value =
            serde_saphyr::from_str(&text).map_err(|e| format!("the OpenAPI document: {e}"))?;
        Spec::from_document(document)
    }

    pub fn from_document(document: Value) -> Result<Spec, String> {
        let mut responses = HashMap::new();
        let paths = document["paths"]
            .as_object()
            .ok_or("the OpenAPI document has no paths")?;
        for (path, item) in paths {
            for (method, operation) in item.as_object().into_iter().flatten() {
                for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                    let schema = &response["content"]["application/json"]["schema"];
                    if schema.is_null() {
                        continue;
                    }
                    let validator = compile(&document, schema).map_err(|e| {
                        format!("{method} {path} {status}: schema does not compile: {e}")
                    })?;
                    responses.insert(
                        (path.clone(), method.to_ascii_uppercase(), status.clone()),
                        validator,
                    );
                }
            }
        }
        let error_envelope = compile(
            &document,
            &json!({"$ref": "#/components/schemas/ErrorEnvelope"}),
        )
        .map_err(|e| format!("ErrorEnvelope: {e}"))?;
        Ok(Spec {
            document,
            responses,
            error_envelope,
        })
    }

    /// The documented path template a concrete path falls under (`/tools/echo` → `/tools/{name}`).
    pub fn template_of(&self, concrete: &str) -> Option<String> {
        let paths = self.document["paths"].as_object()?;
        if paths.contains_key(concrete) {
            return Some(concrete.to_owned());
        }
        let parts: Vec<&str> = concrete.split('/').collect();
        paths
            .keys()
            .find(|template| {
                let t: Vec<&str> = template.split('/').collect();
                t.len() == parts.len()
                    && t.iter().zip(&parts).all(|(a, b)| {
                        (a.starts_with('{') && a.ends_with('}') && !b.is_empty()) || a == b
                    })
            })
            .cloned()
    }

    /// What a response to `method path` with `status` must look like.
    pub fn expect(&self, method: &str, path: &str, status: u16) -> Expectation<'_> {
        let path = path.split('?').next().unwrap_or(path);
        let Some(template) = self.template_of(path) else {
            return Expectation::Schema(&self.error_envelope);
        };
        let method = method.to_ascii_uppercase();
        let has_operation = self.document["paths"][&template]
            .get(method.to_ascii_lowercase())
            .is_some();
        if !has_operation {
            return Expectation::Schema(&self.error_envelope);
        }
        match self
            .responses
            .get(&(template.clone(), method.clone(), status.to_string()))
        {
            Some(v) => Expectation::Schema(v),
            None => {
                let mut documented: Vec<String> = self
                    .responses
                    .keys()
                    .filter(|(p, m, _)| *p == template && *m == method)
                    .map(|(_, _, s)| s.clone())
                    .collect();
                documented.sort();
                Expectation::Undocumented {
                    operation: format!("{method} {template}"),
                    documented,
                }
            }
        }
    }
}

/// A validator for `schema`, whose `$ref`s point into the OpenAPI document's components.
pub fn compile(document: &Value, schema: &Value) -> Result<jsonschema::Validator, String> {
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "allOf": [schema],
        "components": document["components"],
    });
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&root)
        .map_err(|e| e.to_string())
}

/// The first few validation errors of `instance`, one line each.
pub fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!(
                "{}: {e}",
                if at.is_empty() {
                    "(root)".to_owned()
                } else {
                    at
                }
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_document_compiles_and_judges() {
        let spec = Spec::load(None).unwrap();
        assert_eq!(
            spec.template_of("/tools/echo").as_deref(),
            Some("/tools/{name}")
        );
        assert_eq!(spec.template_of("/tools").as_deref(), Some("/tools"));
        assert!(spec.template_of("/nope/x").is_none());
        let good = json!({"success": false, "error": "x", "code": "TOOL_NOT_FOUND",
            "request_id": "3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c", "timestamp": "2026-01-01T00:00:00.000Z"});
        let Expectation::Schema(v) = spec.expect("POST", "/call-tool", 404) else {
            panic!("404 documented")
        };
        assert!(
            violations(v, &good).is_empty(),
            "{:?}",
            violations(v, &good)
        );
        let bad =
            json!({"success": false, "code": "NOPE", "request_id": "x", "timestamp": "yesterday"});
        assert!(violations(v, &bad).len() >= 3, "{:?}", violations(v, &bad));
        assert!(matches!(
            spec.expect("GET", "/tools", 418),
            Expectation::Undocumented { .. }
        ));
    }
}
