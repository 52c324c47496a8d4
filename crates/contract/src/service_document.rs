//! The per-service OpenAPI document served at GET /openapi.json: the contract, typed with the
//! service's tools and prompts, built once per change of the tool list.
//!
//! What it adds to the static contract:
//! - each tool's input and output schema hoisted into `components/schemas` under names
//!   namespaced by tool ([`hoist`]), so every `$ref` resolves (recursive models included) and
//!   no `$schema` is shown as a field;
//! - `POST /call-tool` typed: its body is a `oneOf` of one `{tool: const, arguments}` schema
//!   per tool, discriminated by `tool`;
//! - one operation per tool, `POST /tools/<name>`, with its own summary, description,
//!   request example, and 200/400 examples of its own shape; its 200 answer types `data` with
//!   the tool's output schema, or with the shape the gateway answers when it has none; these
//!   replace the contract's template `POST /tools/{name}`, whose "any object" body would be a
//!   promise the gateway does not keep;
//! - likewise one operation per prompt, `POST /prompts/<name>`, with the prompt's
//!   `args_schema` as its body ([`prompts`]), in place of `POST /prompts/{name}`;
//! - the service's address in `servers`, and the security schemes only when API keys are on.

mod example;
mod hoist;
mod prompts;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::{ArgumentValidator, ErrorCode, PromptInfo, ToolSchema, UntypedResult};

/// The limits a client needs to know, published as `x-limits` at the document's root.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_body_bytes: u64,
    pub call_timeout_ms: u64,
    /// How a JSON body is read (duplicate keys are always refused).
    pub json: crate::strict_json::JsonLimits,
    pub max_header_bytes: u64,
    pub max_headers: u64,
}

/// What the document says about the service itself.
#[derive(Debug, Clone)]
pub struct Publication<'a> {
    /// `service.name`.
    pub service: &'a str,
    /// The version GET /tools reports.
    pub version: &'a str,
    /// Where the service listens, `http://HOST:PORT` (the document's `servers`).
    pub server_url: String,
    /// Whether API keys are required (`security.api_keys`, or the older `api_keys_enabled`):
    /// the security schemes are published only then.
    pub api_keys_enabled: bool,
    /// The OAuth issuer when bearer tokens are taken (`security.oauth`): its flows are
    /// published, so Swagger UI's Authorize button and generated clients get tokens from it.
    pub oauth: Option<OAuthPublication>,
    pub limits: Limits,
}

/// What the document says of the service's OAuth issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthPublication {
    pub issuer: String,
    /// The issuer's endpoints, when known (configured, or read from its metadata at start):
    /// then the flows are published as `oauth2`; else its OpenID Connect discovery URL.
    pub authorization_url: Option<String>,
    pub token_url: Option<String>,
    /// Token scopes the service maps to tools, with their descriptions.
    pub scopes: BTreeMap<String, String>,
}

/// The component that types `data` for a tool that declares no output schema and is not an
/// MCP tool's.
const GENERIC_RESULT: &str = "ToolResult";
/// The component that types `data` for an MCP tool that declares no output schema.
const MCP_RESULT: &str = "McpToolResult";

/// Builds the document for a service's current tools and prompts. Run when they or the
/// settings change, never per request.
pub fn service_document(
    publication: &Publication<'_>,
    tools: &[ToolSchema],
    prompts: &[PromptInfo],
) -> Value {
    let mut doc = crate::openapi::document_json();
    doc["info"]["title"] = json!(format!("{} (mcp-http-gateway)", publication.service));
    doc["info"]["version"] = json!(publication.version);
    doc["servers"] = json!([{"url": publication.server_url, "description": "This service."}]);
    let limits = &publication.limits;
    doc["x-limits"] = json!({
        "max_body_bytes": limits.max_body_bytes,
        "call_timeout_ms": limits.call_timeout_ms,
        "max_json_depth": limits.json.max_depth,
        "max_string_bytes": limits.json.max_string_bytes,
        "max_json_members": limits.json.max_members,
        "max_header_bytes": limits.max_header_bytes,
        "max_headers": limits.max_headers,
    });
    let mut schemas = std::mem::take(&mut doc["components"]["schemas"]);
    let schemas = schemas.as_object_mut().expect("the contract has schemas");
    schemas.extend(generic_result_schemas());
    let mut names = ComponentNames(schemas.keys().cloned().collect());

    let by_name = doc["paths"]["/tools/{name}"]["post"].clone();
    let request_id = schemas["ToolRequest"]["properties"]["request_id"].clone();
    let mut calls = Vec::new();
    let mut mapping = Map::new();
    let mut call_example: Option<Value> = None;
    let mut call_success: Option<Value> = None;
    let mut operations = Vec::new();
    for tool in tools {
        let typed = TypedTool::new(tool, &mut names, schemas);
        let call_name = names.take(&format!("{}Call", typed.prefix));
        schemas.insert(call_name.clone(), typed.call_schema(&request_id));
        calls.push(json!({"$ref": component(&call_name)}));
        mapping.insert(tool.name.clone(), json!(component(&call_name)));
        if call_example.is_none()
            && let Some(arguments) = &typed.example
        {
            call_example = Some(json!({"tool": tool.name, "arguments": arguments}));
        }
        let result_name = names.take(&format!("{}Result", typed.prefix));
        schemas.insert(
            result_name.clone(),
            typed.result_schema(&schemas["Envelope"]),
        );
        let operation = typed.operation(&by_name, &result_name);
        if call_example
            .as_ref()
            .is_some_and(|c| c["tool"] == tool.name.as_str())
        {
            // /call-tool's examples are those of the tool its request example calls.
            typed.own_errors(&mut doc["paths"]["/call-tool"]["post"]["responses"]);
            call_success = operation["responses"]["200"]["content"]["application/json"]
                .get("example")
                .cloned();
        }
        operations.push((
            format!("/tools/{}", tool.name),
            json!({ "post": operation }),
        ));
    }
    let prompt_operations = prompts::operations(
        &doc["paths"]["/prompts/{name}"]["post"],
        prompts,
        &mut names,
        schemas,
    );
    doc["components"]["schemas"] = Value::Object(std::mem::take(schemas));

    if !calls.is_empty() {
        let body =
            &mut doc["paths"]["/call-tool"]["post"]["requestBody"]["content"]["application/json"];
        body["schema"] = json!({
            "oneOf": calls,
            "discriminator": {"propertyName": "tool", "mapping": mapping},
        });
        match call_example {
            Some(example) => body["example"] = example,
            None => _ = body.as_object_mut().map(|b| b.remove("example")),
        }
        // The contract's 200 example is echo's; here it is the example call's answer.
        let ok = &mut doc["paths"]["/call-tool"]["post"]["responses"]["200"]["content"]["application/json"];
        match call_success {
            Some(example) => ok["example"] = example,
            None => _ = ok.as_object_mut().map(|o| o.remove("example")),
        }
    }
    let paths = doc["paths"]
        .as_object_mut()
        .expect("the contract has paths");
    // The template says any object is a body for any name, which the gateway refuses for
    // every tool whose schema asks for more: here each tool has its own path instead.
    paths.remove("/tools/{name}");
    paths.extend(operations);
    // The same for prompts, once there are any (with none, the template's 404 for every name
    // is what the server does).
    if !prompt_operations.is_empty() {
        paths.remove("/prompts/{name}");
        paths.extend(prompt_operations);
    }
    publish_security(
        &mut doc,
        publication.api_keys_enabled,
        publication.oauth.as_ref(),
    );
    doc
}

/// With keys or OAuth on, every operation but /health and /status (the page) requires one of
/// the schemes; with neither, no scheme is published at all (a client would otherwise ask its
/// user for a key).
fn publish_security(doc: &mut Value, api_keys_enabled: bool, oauth: Option<&OAuthPublication>) {
    let mut required = Vec::new();
    if api_keys_enabled {
        required.push(json!({"apiKey": []}));
    }
    required.push(json!({"bearer": []}));
    if oauth.is_some() {
        required.push(json!({"oauth": []}));
    }
    let required = Value::Array(required);
    let secured = api_keys_enabled || oauth.is_some();
    for item in doc["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|p| p.values_mut())
    {
        for op in item
            .as_object_mut()
            .into_iter()
            .flat_map(|i| i.values_mut())
        {
            let Some(op) = op.as_object_mut() else {
                continue;
            };
            if !op.contains_key("security") {
                continue;
            }
            if secured {
                op.insert("security".into(), required.clone());
            } else {
                op.remove("security");
            }
        }
    }
    let Some(components) = doc["components"].as_object_mut() else {
        return;
    };
    if !secured {
        components.remove("securitySchemes");
        return;
    }
    let schemes = components
        .entry("securitySchemes")
        .or_insert_with(|| json!({}));
    if !api_keys_enabled && let Some(schemes) = schemes.as_object_mut() {
        schemes.remove("apiKey");
    }
    if let Some(oauth) = oauth {
        schemes["oauth"] = oauth_scheme(oauth);
    }
}

/// The issuer's flows (authorization code with PKCE, client credentials), or its OpenID
/// Connect discovery URL when its endpoints are not known.
fn oauth_scheme(oauth: &OAuthPublication) -> Value {
    match (&oauth.authorization_url, &oauth.token_url) {
        (Some(authorization), Some(token)) => json!({
            "type": "oauth2",
            "description": format!("Access tokens of {} (RFC 8707: ask for this service's URL as the resource).", oauth.issuer),
            "flows": {
                "authorizationCode": {
                    "authorizationUrl": authorization,
                    "tokenUrl": token,
                    "scopes": oauth.scopes,
                },
                "clientCredentials": {
                    "tokenUrl": token,
                    "scopes": oauth.scopes,
                },
            },
        }),
        _ => json!({
            "type": "openIdConnect",
            "description": format!("Access tokens of {}.", oauth.issuer),
            "openIdConnectUrl": format!("{}/.well-known/openid-configuration", oauth.issuer),
        }),
    }
}

/// Component names given out so far; a new one never takes an existing name.
struct ComponentNames(BTreeSet<String>);

impl ComponentNames {
    /// `wanted` made a valid component name (`[A-Za-z0-9._-]`), with `_2`, `_3`, … added
    /// when that is taken.
    fn take(&mut self, wanted: &str) -> String {
        let safe = safe_name(wanted);
        let mut name = safe.clone();
        let mut n = 1;
        while self.0.contains(&name) {
            n += 1;
            name = format!("{safe}_{n}");
        }
        self.0.insert(name.clone());
        name
    }
}

/// A tool with its schemas hoisted into the components and its examples made.
struct TypedTool<'a> {
    tool: &'a ToolSchema,
    /// `tool__<name>__`, the start of every component name of this tool.
    prefix: String,
    input: String,
    /// The output schema's component, when the tool declares one.
    output: Option<String>,
    /// Arguments the input schema accepts.
    example: Option<Value>,
    /// Whether `{}` fails the input schema (then `arguments` is required in /call-tool).
    needs_arguments: bool,
    /// The issues the gateway answers for arguments of this tool made wrong in one field.
    refused: Option<Vec<crate::ValidationIssue>>,
}

impl<'a> TypedTool<'a> {
    fn new(
        tool: &'a ToolSchema,
        names: &mut ComponentNames,
        schemas: &mut Map<String, Value>,
    ) -> Self {
        let prefix = format!("tool__{}__", safe_name(&tool.name));
        let mut hoist_as = |schema: &Value, what: &str, reuse: &BTreeMap<String, String>| {
            let root = names.take(&format!("{prefix}{what}"));
            let hoisted = hoist::hoist(schema, root, |def| match reuse.get(def) {
                Some(same) => same.clone(),
                None => names.take(&format!("{prefix}{def}")),
            });
            schemas.extend(hoisted.components);
            (hoisted.root, hoisted.defs)
        };
        let (input, input_defs) = hoist_as(&tool.input_schema, "Input", &BTreeMap::new());
        let output = tool.output_schema.as_ref().map(|output| {
            // A model used by both schemas (pydantic repeats it in each) is one component,
            // when every definition the two share a name for is the same.
            let (mine, theirs) = (
                hoist::definitions(output),
                hoist::definitions(&tool.input_schema),
            );
            let same = mine
                .iter()
                .all(|(name, def)| theirs.get(name).is_none_or(|t| t == def));
            let reuse = if same {
                input_defs.clone()
            } else {
                BTreeMap::new()
            };
            hoist_as(output, "Output", &reuse).0
        });
        // One compiled schema for every question asked of it here; an input schema the
        // gateway cannot compile gets no example (and its calls fail anyway).
        let validator = ArgumentValidator::compile(&tool.input_schema).ok();
        // The schema's own first `examples` entry when it is valid (example::example tries it
        // first), else one made from the schema.
        let example = validator
            .as_ref()
            .and_then(|v| example::example(&tool.input_schema, v));
        let needs_arguments = validator
            .as_ref()
            .is_some_and(|v| v.check(&json!({})).is_err());
        let refused = validator
            .as_ref()
            .zip(example.as_ref())
            .and_then(|(v, valid)| {
                example::refused(&tool.input_schema, v, valid).map(|(_, issues)| issues)
            });
        TypedTool {
            tool,
            prefix,
            input,
            output,
            example,
            needs_arguments,
            refused,
        }
    }

    /// `{tool: <const>, arguments: <input>, request_id?}`: one branch of /call-tool's `oneOf`.
    fn call_schema(&self, request_id: &Value) -> Value {
        let mut required = vec!["tool"];
        if self.needs_arguments {
            required.push("arguments");
        }
        json!({
            "type": "object",
            "title": format!("Call {}", self.tool.name),
            "description": format!("A call of tool `{}`.", self.tool.name),
            "properties": {
                "tool": {"type": "string", "const": self.tool.name},
                "arguments": {"$ref": component(&self.input)},
                "request_id": request_id,
            },
            "required": required,
            "additionalProperties": false,
        })
    }

    /// The 200 envelope of this tool: `data` typed with its output schema (or the generic
    /// result), every other member as the envelope has it.
    fn result_schema(&self, envelope: &Value) -> Value {
        let mut properties = Map::new();
        for key in ["success", "data", "request_id", "timestamp", "meta"] {
            properties.insert(key.into(), envelope["properties"][key].clone());
        }
        properties.insert(
            "success".into(),
            json!({"type": "boolean", "const": true, "description": "Always true here."}),
        );
        let data = self
            .output
            .as_deref()
            .unwrap_or(match self.tool.untyped_result {
                UntypedResult::AnyJson => GENERIC_RESULT,
                UntypedResult::McpContent => MCP_RESULT,
            });
        properties.insert(
            "data".into(),
            json!({"$ref": component(data), "description": format!("The result of `{}`.", self.tool.name)}),
        );
        json!({
            "type": "object",
            "title": format!("{} result", self.tool.name),
            "description": format!("A successful call of `{}`.", self.tool.name),
            "properties": properties,
            "required": ["success", "data", "request_id", "timestamp"],
        })
    }

    /// `POST /tools/<name>`, made from the contract's `POST /tools/{name}`.
    fn operation(&self, by_name: &Value, result: &str) -> Value {
        let tool = self.tool;
        let mut op = by_name.clone();
        op["operationId"] = json!(operation_id("call", &tool.name));
        op["summary"] = json!(tool.title.as_deref().unwrap_or(&tool.name));
        op["description"] = json!(if tool.description.is_empty() {
            format!("Calls tool `{}`.", tool.name)
        } else {
            tool.description.clone()
        });
        op["tags"] = json!(["tool"]);
        if let Some(params) = op["parameters"].as_array_mut() {
            params.retain(|p| p["in"] != "path");
        }
        let mut body = json!({"schema": {"$ref": component(&self.input)}});
        if let Some(example) = &self.example {
            body["example"] = example.clone();
        }
        // A call without a body is a call with `{}`: the body is required only when `{}`
        // fails the input schema (the server answers 200 without one otherwise).
        op["requestBody"] = json!({
            "required": self.needs_arguments,
            "description": format!("The arguments of `{}`.", tool.name),
            "content": {"application/json": body},
        });
        let ok = &mut op["responses"]["200"]["content"]["application/json"];
        ok["schema"] = json!({"$ref": component(result)});
        match self.success_example(&ok["example"]) {
            Some(example) => ok["example"] = example,
            None => _ = ok.as_object_mut().map(|o| o.remove("example")),
        }
        self.own_errors(&mut op["responses"]);
        op
    }

    /// The error examples of `responses` told about this tool ([`Self::own_error`]).
    fn own_errors(&self, responses: &mut Value) {
        for (status, response) in responses.as_object_mut().into_iter().flatten() {
            // The successes (200, and the 202 of a task) have no error examples.
            if status.starts_with('2') {
                continue;
            }
            let examples = &mut response["content"]["application/json"]["examples"];
            for (code, example) in examples.as_object_mut().into_iter().flatten() {
                self.own_error(code, &mut example["value"]);
            }
            if let Some(examples) = examples.as_object_mut()
                && examples.contains_key(ErrorCode::InvalidArguments.as_str())
                && self.refused.is_none()
            {
                // No argument of this tool can be got wrong in a way the schema refuses.
                examples.remove(ErrorCode::InvalidArguments.as_str());
            }
        }
    }

    /// The contract's 200 example with this tool's name and a result of its own shape.
    /// `None` when no result of the output schema's shape can be made: no example rather
    /// than a wrong one.
    fn success_example(&self, contract: &Value) -> Option<Value> {
        let mut example = contract.clone();
        example["meta"]["tool"] = json!(self.tool.name);
        example["data"] = match &self.tool.output_schema {
            Some(schema) => example::example(schema, &ArgumentValidator::compile(schema).ok()?)?,
            None => {
                json!({"content": [{"type": "text", "text": format!("Result of {}", self.tool.name)}]})
            }
        };
        Some(example)
    }

    /// An error example of the contract, told about this tool: its name in `meta.tool` and
    /// the message, and for INVALID_ARGUMENTS the issues its own schema gives.
    fn own_error(&self, code: &str, example: &mut Value) {
        let name = &self.tool.name;
        if example["meta"]["tool"].is_string() {
            example["meta"]["tool"] = json!(name);
        }
        if let Some(message) = example["error"].as_str() {
            let message = message
                .replace("'echo'", &format!("'{name}'"))
                .replace("'no_such_tool'", &format!("'{name}'"));
            example["error"] = json!(message);
        }
        if code == ErrorCode::InvalidArguments.as_str()
            && let Some(issues) = &self.refused
        {
            example["meta"]["validation_errors"] = serde_json::to_value(issues).unwrap_or_default();
        }
    }
}

/// The shape of `data` for a tool without an output schema, as the MCP result mapping
/// answers it (`provider/mcp/result.rs`): `{content: [blocks]}`, or the object a single JSON
/// text block held. Both are objects; `content`, when present, is the MCP content blocks.
fn generic_result_schemas() -> Map<String, Value> {
    let annotated = |required: &[&str], properties: Value, kind: &str, description: &str| {
        let mut properties = properties;
        properties["type"] = json!({"type": "string", "const": kind});
        let mut required: Vec<&str> = required.to_vec();
        required.insert(0, "type");
        json!({"type": "object", "description": description, "properties": properties, "required": required})
    };
    let blocks = [
        (
            "TextContent",
            annotated(
                &["text"],
                json!({"text": {"type": "string"}}),
                "text",
                "Text.",
            ),
        ),
        (
            "ImageContent",
            annotated(
                &["data", "mimeType"],
                json!({"data": {"type": "string", "contentEncoding": "base64"}, "mimeType": {"type": "string"}}),
                "image",
                "An image, base64.",
            ),
        ),
        (
            "AudioContent",
            annotated(
                &["data", "mimeType"],
                json!({"data": {"type": "string", "contentEncoding": "base64"}, "mimeType": {"type": "string"}}),
                "audio",
                "Audio, base64.",
            ),
        ),
        (
            "EmbeddedResource",
            annotated(
                &["resource"],
                json!({"resource": {
                    "type": "object",
                    "properties": {
                        "uri": {"type": "string"},
                        "mimeType": {"type": "string"},
                        "text": {"type": "string"},
                        "blob": {"type": "string", "contentEncoding": "base64"}
                    },
                    "required": ["uri"]
                }}),
                "resource",
                "A resource's contents: `text` or `blob`.",
            ),
        ),
        (
            "ResourceLink",
            annotated(
                &["uri", "name"],
                json!({"uri": {"type": "string"}, "name": {"type": "string"}, "mimeType": {"type": "string"}, "description": {"type": "string"}}),
                "resource_link",
                "A link to a resource.",
            ),
        ),
    ];
    let mut schemas: Map<String, Value> = Map::new();
    let mut mapping = Map::new();
    let mut one_of = Vec::new();
    let kinds = ["text", "image", "audio", "resource", "resource_link"];
    for ((name, schema), kind) in blocks.into_iter().zip(kinds) {
        mapping.insert(kind.into(), json!(component(name)));
        one_of.push(json!({"$ref": component(name)}));
        schemas.insert(name.into(), schema);
    }
    schemas.insert(
        "ContentBlock".into(),
        json!({
            "description": "One MCP content block, by `type`.",
            "oneOf": one_of,
            "discriminator": {"propertyName": "type", "mapping": mapping},
        }),
    );
    schemas.insert(
        GENERIC_RESULT.into(),
        json!({
            "description": "`data` of a tool that declares no output schema and is not an MCP \
                tool's. For an HTTP tool: what its `result` pointer selects; for a gRPC tool: \
                what its provider answers. Any JSON (no `type` is stated for that reason).",
        }),
    );
    schemas.insert(
        MCP_RESULT.into(),
        json!({
            "type": "object",
            "description": "`data` of an MCP tool that declares no output schema: the tool's \
                content blocks under `content`, always there, as MCP requires them of every \
                result. Beside them, the members of the tool's structured content when that is \
                an object, or else of its only content block when that is text holding a JSON \
                object (`{\"a\": 1}` answers `{a: 1, content: [...]}`), unless one of them is \
                named `content`.",
            "properties": {"content": {"type": "array", "items": {"$ref": component("ContentBlock")}}},
            "required": ["content"],
            "additionalProperties": true,
        }),
    );
    schemas
}

/// The `servers` URL of a service listening on `host:port`. A wildcard address
/// (`0.0.0.0`, `::`) is not one a client can call, so then the URL is `/`: relative to where
/// the document was fetched from, which is the service.
pub fn server_url(host: &str, port: u16) -> String {
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.is_unspecified() => "/".to_owned(),
        Ok(std::net::IpAddr::V6(ip)) => format!("http://[{ip}]:{port}"),
        _ => format!("http://{host}:{port}"),
    }
}

fn component(name: &str) -> String {
    format!("#/components/schemas/{name}")
}

/// `name` with anything outside `[A-Za-z0-9._-]` (what a component name may hold) as `_`.
fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `verb` + `_` + `name` with anything outside `[A-Za-z0-9_]` replaced by `_`: `call_<tool>`
/// for a tool, `get_prompt_<prompt>` for a prompt, so the two never clash.
fn operation_id(verb: &str, name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{verb}_{safe}")
}
