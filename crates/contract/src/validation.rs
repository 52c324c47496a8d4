//! Checking a call's arguments against the tool's input schema before the provider runs — the
//! contract's INVALID_ARGUMENTS rule, in one place for the server and its benchmarks.
//!
//! Schemas are compiled once per tool (when the tool list is built) and reused for every call.
//! The `jsonschema` crate is built without its resolvers, so a `$ref` to a remote or local file
//! is an error, never a network or disk read.

use crate::ValidationIssue;
use serde_json::Value;

/// A compiled input schema.
pub struct ArgumentValidator(jsonschema::Validator);

impl ArgumentValidator {
    /// Compiles a tool's input schema (draft detected from `$schema`, 2020-12 by default).
    pub fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(ArgumentValidator)
            .map_err(|e| e.to_string())
    }

    /// Every place the arguments fail the schema, by JSON pointer, in document order.
    pub fn check(&self, arguments: &Value) -> Result<(), Vec<ValidationIssue>> {
        let issues: Vec<ValidationIssue> = self
            .0
            .iter_errors(arguments)
            .map(|e| ValidationIssue {
                path: e.instance_path().to_string(),
                message: e.to_string(),
            })
            .collect();
        if issues.is_empty() {
            Ok(())
        } else {
            Err(issues)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_every_failing_path() {
        let v = ArgumentValidator::compile(&json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": 1},
                "b": {"type": "object", "properties": {"c": {"type": "string"}}, "required": ["c"]}
            },
            "required": ["a", "b"],
            "additionalProperties": false
        }))
        .unwrap();
        assert!(v.check(&json!({"a": 1, "b": {"c": "x"}})).is_ok());
        let issues = v
            .check(&json!({"a": 0, "b": {"c": 5}, "z": true}))
            .unwrap_err();
        let mut paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        paths.sort();
        assert_eq!(paths, vec!["", "/a", "/b/c"]);
    }

    #[test]
    fn remote_refs_are_not_fetched() {
        let schema = json!({"$ref": "https://example.invalid/schema.json"});
        assert!(ArgumentValidator::compile(&schema).is_err());
    }
}
