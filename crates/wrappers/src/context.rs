//! What the templates see: a service's tools from GET /tools turned into names and types for
//! generated code. The keys are documented in docs/wrappers.md (for `--templates` authors).

use contract::{ErrorCode, ToolSchema, ToolsResponse};
use serde::Serialize;
use serde_json::Value;

use crate::filters::one_line_text;
use crate::names::{error_class, numbered, param_safe_name, pascal, tool_safe_name};

pub const GENERATOR: &str = concat!("mcp-wrappers ", env!("CARGO_PKG_VERSION"));

#[derive(Debug, Clone, Serialize)]
pub struct Context {
    pub generator: String,
    pub service: ServiceContext,
    pub tools: Vec<ToolContext>,
    pub error_codes: Vec<ErrorCodeContext>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServiceContext {
    pub name: String,
    pub url: String,
    pub safe_name: String,
    pub class_name: String,
    pub env_prefix: String,
    pub version: String,
    /// Where the generated scripts are, as commands and skills should run them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scripts_dir: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolContext {
    pub name: String,
    pub safe_name: String,
    pub class_name: String,
    pub description: String,
    pub summary: String,
    pub input_schema: Value,
    pub annotations: Value,
    pub params: Vec<Param>,
    pub required_params: Vec<Param>,
    pub optional_params: Vec<Param>,
    pub args_class_name: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Param {
    pub name: String,
    pub safe_name: String,
    pub flag: String,
    pub required: bool,
    pub json_type: String,
    pub nullable: bool,
    pub py_type: String,
    pub description: String,
    pub has_default: bool,
    pub default: Value,
    #[serde(rename = "enum")]
    pub enum_values: Option<Vec<Value>>,
    pub items_type: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ErrorCodeContext {
    pub code: String,
    pub class_name: String,
    pub http_status: u16,
    pub description: String,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "tools '{first}' and '{second}' of service '{service}' both map to the name '{safe_name}' in generated code; rename one of them"
)]
pub struct NameCollision {
    pub service: String,
    pub first: String,
    pub second: String,
    pub safe_name: String,
}

/// `type` of a schema: its first non-null type (`any` when missing or unknown) and whether
/// `null` is allowed.
fn first_type(schema: &Value) -> (String, bool) {
    let (ty, nullable) = match &schema["type"] {
        Value::Array(types) => (
            types.iter().find(|t| *t != "null").and_then(Value::as_str),
            types.iter().any(|t| t == "null"),
        ),
        other => (other.as_str(), false),
    };
    const KNOWN: [&str; 6] = ["string", "integer", "number", "boolean", "array", "object"];
    let ty = ty.filter(|t| KNOWN.contains(t)).unwrap_or("any");
    (ty.to_owned(), nullable)
}

fn scalar_py(json_type: &str) -> Option<&'static str> {
    Some(match json_type {
        "string" => "str",
        "integer" => "int",
        "number" => "float",
        "boolean" => "bool",
        _ => return None,
    })
}

fn py_type(schema: &Value, json_type: &str, items_type: Option<&str>) -> String {
    if let Some(values) = schema["enum"].as_array().filter(|v| !v.is_empty()) {
        let strings = values.iter().all(Value::is_string);
        let integers = values.iter().all(|v| v.is_i64() || v.is_u64());
        if strings || integers {
            let literals: Vec<String> = values
                .iter()
                .map(|v| {
                    crate::filters::py_repr(minijinja::Value::from(minijinja::value::Serde(v)))
                        .unwrap_or_default()
                })
                .collect();
            return format!("Literal[{}]", literals.join(", "));
        }
    }
    if let Some(py) = scalar_py(json_type) {
        return py.to_owned();
    }
    match json_type {
        "array" => format!("list[{}]", items_type.and_then(scalar_py).unwrap_or("Any")),
        "object" => "dict[str, Any]".to_owned(),
        _ => "Any".to_owned(),
    }
}

fn params(schema: &Value) -> Vec<Param> {
    let empty = serde_json::Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .filter(|n| properties.contains_key(*n))
                .collect()
        })
        .unwrap_or_default();
    let mut optional: Vec<&str> = properties
        .keys()
        .map(String::as_str)
        .filter(|n| !required.contains(n))
        .collect();
    optional.sort_unstable();
    let names: Vec<&str> = required.iter().copied().chain(optional).collect();
    let safe_names = numbered(names.iter().map(|n| param_safe_name(n)).collect());
    names
        .iter()
        .zip(safe_names)
        .map(|(name, safe_name)| {
            let property = &properties[*name];
            let (json_type, nullable) = first_type(property);
            let items_type = (json_type == "array" && property["items"].is_object())
                .then(|| first_type(&property["items"]).0);
            Param {
                name: (*name).to_owned(),
                flag: safe_name.trim_end_matches('_').replace('_', "-"),
                required: required.contains(name),
                py_type: py_type(property, &json_type, items_type.as_deref()),
                json_type,
                nullable,
                description: property["description"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                has_default: property.get("default").is_some(),
                default: property.get("default").cloned().unwrap_or(Value::Null),
                enum_values: property["enum"].as_array().cloned(),
                items_type,
                safe_name,
            }
        })
        .collect()
}

fn tool(schema: &ToolSchema, safe_name: String) -> ToolContext {
    let params = params(&schema.input_schema);
    let description = schema.description.clone();
    ToolContext {
        name: schema.name.clone(),
        class_name: pascal(&safe_name),
        summary: one_line_text(&description),
        description,
        input_schema: schema.input_schema.clone(),
        annotations: schema.annotations.clone().unwrap_or(Value::Null),
        required_params: params.iter().filter(|p| p.required).cloned().collect(),
        optional_params: params.iter().filter(|p| !p.required).cloned().collect(),
        params,
        args_class_name: format!("{}Args", pascal(&safe_name)),
        safe_name,
    }
}

/// The context of one service; `url` is where the generated code calls it by default.
pub fn build(
    tools: &ToolsResponse,
    url: &str,
    scripts_dir: Option<String>,
) -> Result<Context, NameCollision> {
    let service_safe = tool_safe_name(&tools.service);
    let mut seen: std::collections::HashMap<String, &str> = Default::default();
    let mut contexts = Vec::with_capacity(tools.tools.len());
    for schema in &tools.tools {
        let safe_name = tool_safe_name(&schema.name);
        if let Some(first) = seen.insert(safe_name.clone(), &schema.name) {
            return Err(NameCollision {
                service: tools.service.clone(),
                first: first.to_owned(),
                second: schema.name.clone(),
                safe_name,
            });
        }
        contexts.push(tool(schema, safe_name));
    }
    Ok(Context {
        generator: GENERATOR.to_owned(),
        service: ServiceContext {
            name: tools.service.clone(),
            url: url.trim_end_matches('/').to_owned(),
            class_name: format!("{}Client", pascal(&service_safe)),
            env_prefix: service_safe.to_ascii_uppercase(),
            safe_name: service_safe,
            version: tools.version.clone(),
            scripts_dir,
        },
        tools: contexts,
        error_codes: ErrorCode::ALL
            .iter()
            .map(|code| ErrorCodeContext {
                code: code.as_str().to_owned(),
                class_name: error_class(code.as_str()),
                http_status: code.http_status(),
                description: code.meaning().to_owned(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// The contexts the templates were written and checked against (rendered by Jinja2 and
    /// minijinja alike from these tool lists, see tests/fixtures).
    #[test]
    fn contexts_match_the_reviewed_ones() {
        for name in ["everything", "code-graph-rag", "nasty"] {
            let tools: ToolsResponse =
                serde_json::from_value(fixture(&format!("{name}-tools.json"))["data"].clone())
                    .unwrap();
            let expected = fixture(&format!("{name}-context.json"));
            let url = expected["service"]["url"].as_str().unwrap().to_owned();
            let mut built = serde_json::to_value(build(&tools, &url, None).unwrap()).unwrap();
            built["generator"] = expected["generator"].clone();
            for (i, tool) in expected["tools"].as_array().unwrap().iter().enumerate() {
                assert_eq!(built["tools"][i], *tool, "{name}: tool {i}");
            }
            assert_eq!(built, expected, "{name}");
        }
    }

    #[test]
    fn tools_that_map_to_one_name_are_an_error_naming_both() {
        let tools: ToolsResponse = serde_json::from_value(serde_json::json!({
            "service": "s", "version": "1", "tools": [
                {"name": "get-sum", "description": "", "input_schema": {"type": "object"}},
                {"name": "get_sum", "description": "", "input_schema": {"type": "object"}}
            ]
        }))
        .unwrap();
        let error = build(&tools, "http://h", None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "tools 'get-sum' and 'get_sum' of service 's' both map to the name 'get_sum' in generated code; rename one of them"
        );
    }
}
