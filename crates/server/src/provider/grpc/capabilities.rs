//! What a gRPC provider offers, read from `ListCapabilities` into the contract's shapes and
//! cached in memory until the next connect (the gateway is stateless: nothing is stored).
//!
//! JSON Schemas travel as JSON text (see the proto's header); a tool whose input schema is
//! missing or is not a JSON object is left out with a warning rather than failing the whole
//! provider; an output schema or a prompt's `args_schema_json` that is not an object leaves
//! out the same way. Resources and prompts become the contract's shapes (`provider` and
//! `qualified_name` are the service's to set); a prompt's `arguments` are read from its
//! `args_schema` (its properties, the `required` ones marked).

use contract::{PromptArgument, PromptInfo, ResourceInfo, ResourceTemplateInfo, ToolSchema};
use provider_proto::v1::ListCapabilitiesResponse;
use serde_json::{Value, json};

use super::error::GrpcError;

/// Everything one `ListCapabilities` answered.
#[derive(Debug, Clone, Default)]
pub(super) struct Capabilities {
    pub(super) tools: Vec<ToolSchema>,
    pub(super) resources: Vec<ResourceInfo>,
    pub(super) resource_templates: Vec<ResourceTemplateInfo>,
    pub(super) prompts: Vec<PromptInfo>,
}

impl Capabilities {
    /// Reads an answer; what cannot be used is logged (with `service` and `provider`) and
    /// left out.
    pub(super) fn read(answer: ListCapabilitiesResponse, service: &str, provider: &str) -> Self {
        let mut tools = Vec::with_capacity(answer.tools.len());
        for tool in answer.tools {
            match tool_schema(&tool) {
                Ok(schema) => tools.push(schema),
                Err(why) => {
                    tracing::warn!(service, provider, tool = %tool.name, "tool left out: {why}")
                }
            }
        }
        let mut prompts = Vec::with_capacity(answer.prompts.len());
        for prompt in answer.prompts {
            match object_schema(&prompt.args_schema_json, "args_schema_json") {
                Ok(args_schema) => {
                    let args_schema = args_schema.unwrap_or_else(|| json!({"type": "object"}));
                    prompts.push(PromptInfo {
                        arguments: arguments_of(&args_schema),
                        name: prompt.name,
                        title: None,
                        description: optional(prompt.description),
                        args_schema,
                        provider: String::new(),
                        qualified_name: String::new(),
                        native: None,
                    })
                }
                Err(why) => {
                    tracing::warn!(service, provider, prompt = %prompt.name, "prompt left out: {why}")
                }
            }
        }
        let resources = answer
            .resources
            .into_iter()
            .map(|r| ResourceInfo {
                uri: r.uri,
                name: r.name,
                title: None,
                description: optional(r.description),
                mime_type: optional(r.mime_type),
                provider: String::new(),
                qualified_name: String::new(),
                native: None,
            })
            .collect();
        let resource_templates = answer
            .resource_templates
            .into_iter()
            .map(|t| ResourceTemplateInfo {
                uri_template: t.uri_template,
                name: t.name,
                title: None,
                description: optional(t.description),
                mime_type: optional(t.mime_type),
                provider: String::new(),
                qualified_name: String::new(),
                native: None,
            })
            .collect();
        Capabilities {
            tools,
            resources,
            resource_templates,
            prompts,
        }
    }
}

/// A listed tool as the contract's [`ToolSchema`] (its name as the provider gives it; the
/// service decides the served name).
fn tool_schema(tool: &provider_proto::v1::Tool) -> Result<ToolSchema, GrpcError> {
    if tool.name.is_empty() {
        return Err(GrpcError::NoName);
    }
    let input_schema = object_schema(&tool.input_schema_json, "input_schema_json")?
        .ok_or(GrpcError::NoInputSchema)?;
    let output_schema = object_schema(&tool.output_schema_json, "output_schema_json")?;
    Ok(ToolSchema {
        name: tool.name.clone(),
        title: None,
        description: tool.description.clone(),
        input_schema,
        output_schema,
        untyped_result: contract::UntypedResult::AnyJson,
        annotations: None,
        qualified_name: None,
        icons: None,
        score: None,
    })
}

/// Empty text is absent (proto3 has no optional strings here).
fn optional(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// A prompt's arguments as an argument list: each property of its schema, `required` as the
/// schema says, the property's `description`.
fn arguments_of(schema: &Value) -> Vec<PromptArgument> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|properties| {
            properties
                .iter()
                .map(|(name, property)| PromptArgument {
                    name: name.clone(),
                    description: property["description"].as_str().map(str::to_owned),
                    required: required.contains(&name.as_str()),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// An optional JSON Schema given as text: empty is absent; otherwise a JSON object.
fn object_schema(text: &str, field: &'static str) -> Result<Option<Value>, GrpcError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(schema @ Value::Object(_)) => Ok(Some(schema)),
        Ok(_) => Err(GrpcError::SchemaNotObject { field }),
        Err(source) => Err(GrpcError::SchemaNotJson { field, source }),
    }
}

#[cfg(test)]
mod tests {
    use provider_proto::v1::{Prompt, Tool};
    use serde_json::json;

    use super::*;

    fn tool(name: &str, input: &str, output: &str) -> Tool {
        Tool {
            name: name.into(),
            description: format!("{name} does it"),
            input_schema_json: input.into(),
            output_schema_json: output.into(),
        }
    }

    #[test]
    fn the_reasons_a_tool_is_left_out_read_as_before() {
        let why = |t: Tool| tool_schema(&t).unwrap_err().to_string();
        assert_eq!(why(tool("", "{}", "")), "it has no name");
        assert_eq!(
            why(tool("t", "", "")),
            "input_schema_json is empty (it is required)"
        );
        assert_eq!(
            why(tool("t", "{}", "[1]")),
            "output_schema_json is not a JSON object"
        );
        assert!(
            why(tool("t", "{not json", "")).starts_with("input_schema_json is not JSON: key must"),
            "{}",
            why(tool("t", "{not json", ""))
        );
    }

    #[test]
    fn tools_carry_their_input_and_output_schemas_and_bad_ones_are_left_out() {
        let answer = ListCapabilitiesResponse {
            tools: vec![
                tool("echo.v1", r#"{"type":"object"}"#, r#"{"type":"object","required":["message"]}"#),
                tool("plain.v1", r#"{"type":"object"}"#, ""),
                tool("broken.v1", "{not json", ""),
                tool("no_input.v1", "", ""),
                tool("array_out.v1", r#"{"type":"object"}"#, "[1]"),
            ],
            prompts: vec![
                Prompt {
                    name: "plan".into(),
                    description: "d".into(),
                    args_schema_json: r#"{"type":"object","properties":{"goal":{"type":"string","description":"what for"},"steps":{"type":"integer"}},"required":["goal"]}"#.into(),
                    template: "{{goal}}".into(),
                },
                Prompt {
                    name: "bare".into(),
                    ..Prompt::default()
                },
            ],
            ..ListCapabilitiesResponse::default()
        };
        let read = Capabilities::read(answer, "s", "p");
        let names: Vec<&str> = read.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["echo.v1", "plain.v1"]);
        assert_eq!(read.tools[0].input_schema, json!({"type": "object"}));
        assert_eq!(
            read.tools[0].output_schema,
            Some(json!({"type": "object", "required": ["message"]}))
        );
        assert_eq!(read.tools[1].output_schema, None);
        assert_eq!(read.prompts.len(), 2);
        let plan = &read.prompts[0];
        assert_eq!(plan.args_schema["required"], json!(["goal"]));
        assert_eq!(
            plan.arguments,
            vec![
                PromptArgument {
                    name: "goal".into(),
                    description: Some("what for".into()),
                    required: true
                },
                PromptArgument {
                    name: "steps".into(),
                    description: None,
                    required: false
                },
            ]
        );
        assert_eq!(read.prompts[1].args_schema, json!({"type": "object"}));
        assert!(read.prompts[1].arguments.is_empty());
    }
}
