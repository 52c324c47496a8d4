//! The bodies of the prompt routes: what a prompt is as clients see it, and what rendering one
//! answers.
//!
//! A prompt's arguments are described twice: `arguments` (MCP's list of names, for people and
//! agents) and `args_schema` (a JSON Schema of the arguments object, what `POST /prompts/{name}`
//! validates against, with the same check and `INVALID_ARGUMENTS` details as `/call-tool`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PromptArgument {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the prompt cannot be rendered without it.
    #[serde(default)]
    pub required: bool,
}

/// A prompt a provider offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PromptInfo {
    /// The served name: what `POST /prompts/{name}` takes (the qualified name works too).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub arguments: Vec<PromptArgument>,
    /// JSON Schema (`type: object`) of the arguments object. For an MCP prompt it is derived
    /// from `arguments`: every argument a string property, the required ones in `required`.
    #[schema(value_type = Object)]
    pub args_schema: Value,
    /// The configured name of the provider that offers it.
    pub provider: String,
    /// `{provider}.{name}`.
    pub qualified_name: String,
    /// The provider's own MCP form of it (an MCP server's, as sent), which the MCP surface
    /// answers unchanged; not part of the REST contract.
    #[serde(skip)]
    #[schema(ignore)]
    pub native: Option<Value>,
}

/// One message of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// An MCP content block: `{"type": "text", "text": …}`, an image, an embedded resource….
    #[schema(value_type = Object)]
    pub content: Value,
}

/// A rendered prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PromptResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
    /// The provider's own MCP form of it (an MCP server's, as sent), which the MCP surface
    /// answers unchanged; not part of the REST contract.
    #[serde(skip)]
    #[schema(ignore)]
    pub native: Option<Value>,
}

/// `data` of GET /prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PromptsResponse {
    pub service: String,
    /// Every prompt of every provider, in provider order (configuration), then as listed.
    pub prompts: Vec<PromptInfo>,
}

/// `data` of POST /prompts/{name}.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PromptResponse {
    /// The served name of the prompt that was rendered.
    pub prompt: String,
    /// The provider that rendered it.
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
    /// The provider's own MCP form of it (an MCP server's, as sent), which the MCP surface
    /// answers unchanged; not part of the REST contract.
    #[serde(skip)]
    #[schema(ignore)]
    pub native: Option<Value>,
}

/// The JSON Schema of a prompt's arguments when all the prompt has is an MCP argument list:
/// an object whose properties are strings, the required ones listed in `required`.
pub fn args_schema_of(arguments: &[PromptArgument]) -> Value {
    let mut properties = serde_json::Map::new();
    for a in arguments {
        let mut p = serde_json::json!({"type": "string"});
        if let Some(d) = &a.description {
            p["description"] = Value::String(d.clone());
        }
        properties.insert(a.name.clone(), p);
    }
    let required: Vec<Value> = arguments
        .iter()
        .filter(|a| a.required)
        .map(|a| Value::String(a.name.clone()))
        .collect();
    serde_json::json!({"type": "object", "properties": properties, "required": required})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_schema_from_an_argument_list() {
        let args = [
            PromptArgument {
                name: "city".into(),
                description: Some("Where".into()),
                required: true,
            },
            PromptArgument {
                name: "state".into(),
                description: None,
                required: false,
            },
        ];
        let schema = args_schema_of(&args);
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "Where"},
                    "state": {"type": "string"}
                },
                "required": ["city"]
            })
        );
        let validator = crate::ArgumentValidator::compile(&schema).unwrap();
        assert!(
            validator
                .check(&serde_json::json!({"city": "Paris"}))
                .is_ok()
        );
        assert!(validator.check(&serde_json::json!({"state": "x"})).is_err());
        assert!(validator.check(&serde_json::json!({"city": 5})).is_err());
    }
}
