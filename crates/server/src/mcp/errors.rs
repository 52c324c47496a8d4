//! How the contract's failures are answered over MCP, in one table (docs/mcp.md shows it):
//! a tool that ran and failed, and invalid arguments (SEP-1303: the model reads them and can
//! correct itself), are a result with `isError: true` and `{code, request_id, …}` in `_meta`
//! (and as `structuredContent` for a tool without an output schema); an unknown tool, a tool
//! outside the API key's scope and a malformed request are JSON-RPC errors with the same `data`; what the HTTP layer refuses keeps the envelope and its status.

use contract::ErrorCode as Code;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ErrorCode};
use serde_json::json;

/// The JSON-RPC error codes the MCP surface answers with.
pub mod jsonrpc {
    /// The request is not one the session can take (sent before the handshake, a duplicate id).
    pub const INVALID_REQUEST: i32 = -32600;
    /// The method is not one the server offers.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Unknown tool, prompt or resource.
    pub const INVALID_PARAMS: i32 = -32602;
    pub const INTERNAL_ERROR: i32 = -32603;
    /// The session is closed, expired or unknown (MCP servers' convention, with HTTP 404).
    pub const SESSION_NOT_FOUND: i32 = -32001;
    /// A 2026-07-28 request whose `Mcp-Method`/`Mcp-Name` headers disagree with its body
    /// (answered by rmcp's transport, with HTTP 400).
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The client cancelled the request (`notifications/cancelled`); clients ignore the answer.
    pub const REQUEST_CANCELLED: i32 = -32800;
}

/// How a failure is answered over MCP: as a tool result with `isError: true` (the tool ran, or
/// tried to, and failed) or as a JSON-RPC error (the request itself was wrong).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpAnswer {
    ToolError,
    JsonRpc(i32),
    /// Answered before JSON-RPC, by the HTTP layer, with the contract's HTTP status.
    Http,
}

/// The one table mapping the contract's codes onto MCP (docs/mcp.md shows it).
pub const fn mcp_mapping(code: Code) -> (McpAnswer, &'static str) {
    match code {
        Code::ToolNotFound => (
            McpAnswer::JsonRpc(jsonrpc::INVALID_PARAMS),
            "Unknown tool: {tool}",
        ),
        // resources/read and prompts/get go through the service's catalog, as over REST
        // (catalog_error answers them).
        Code::ResourceNotFound => (
            McpAnswer::JsonRpc(jsonrpc::INVALID_PARAMS),
            "Resource '{uri}' not found",
        ),
        Code::PromptNotFound => (
            McpAnswer::JsonRpc(jsonrpc::INVALID_PARAMS),
            "Prompt '{name}' not found",
        ),
        // A tool outside the API key's scope is not in that client's tools/list, so it is
        // answered as a tool the client does not have (the same JSON-RPC code as an unknown
        // tool, which clients already handle), with `data.code` FORBIDDEN saying why, as 403
        // does over REST. Scope is judged before existence, so neither surface tells a key
        // which tools exist outside its scope.
        Code::Forbidden => (
            McpAnswer::JsonRpc(jsonrpc::INVALID_PARAMS),
            "Tool '{tool}' is outside the scope of API key '{key}'",
        ),
        // Over MCP the upstream's own result reaches a client lacking the capability; this row
        // is for a failure the gateway itself answers (a tool that runs only as a task).
        Code::CapabilityRequired => (
            McpAnswer::ToolError,
            "Tool '{tool}' needs {what} of its caller: {where}",
        ),
        // SEP-1303 (MCP 2025-11-25): a result the model can read and correct itself from.
        Code::InvalidArguments => (
            McpAnswer::ToolError,
            "Arguments do not match the input schema of tool '{tool}': … then one line per structuredContent.validation_errors entry",
        ),
        Code::InvalidRequest => (
            McpAnswer::JsonRpc(jsonrpc::INVALID_REQUEST),
            "Invalid request: {reason}",
        ),
        Code::InternalError => (
            McpAnswer::JsonRpc(jsonrpc::INTERNAL_ERROR),
            "Internal error",
        ),
        Code::ExecutionError => (
            McpAnswer::ToolError,
            "{the tool's or the dependency's message}",
        ),
        Code::Timeout => (
            McpAnswer::ToolError,
            "Tool '{tool}' did not answer within {ms} ms; the call was cancelled",
        ),
        // Refused inside tools/call (a tool's rate limit, admission): the model reads when to
        // try again; `retry_after` is in the data. Refused before JSON-RPC (the per-client rate
        // limit, a draining service), the HTTP layer answers the envelope with 429/503.
        Code::RateLimited => (
            McpAnswer::ToolError,
            "Rate limit of {n} calls of tool '{tool}' per minute exceeded; retry after {s} s",
        ),
        Code::ServiceUnavailable => (
            McpAnswer::ToolError,
            "Tool '{tool}' was not admitted: {why}; retry after {s} s",
        ),
        Code::Unauthorized
        | Code::NotFound
        | Code::MethodNotAllowed
        | Code::PayloadTooLarge
        | Code::HeadersTooLarge => (
            McpAnswer::Http,
            "the envelope, with the HTTP status of the code",
        ),
    }
}

/// Where a tool result carries our error data in `_meta` (a namespaced key, as MCP asks).
pub const ERROR_META_KEY: &str = "mcp-http-gateway/error";

/// The answer to a failed call, per [`mcp_mapping`]; `data` is at least `{code, request_id, retryable}`.
///
/// A tool result carries the data in `_meta` ([`ERROR_META_KEY`]) and, when the tool declares
/// no output schema, also as `structuredContent`: a client checks `structuredContent` against
/// a declared output schema, which an error's data would never match (the TypeScript SDK does
/// so on error results too).
pub(super) fn error_for(
    failure: crate::service::CallFailure,
    request_id: &str,
    tool_has_output_schema: bool,
) -> Result<CallToolResponse, McpError> {
    let mut data = json!({"code": failure.code, "request_id": request_id, "retryable": failure.code.is_retryable()});
    if let Some(issues) = &failure.validation_errors {
        data["validation_errors"] = json!(issues);
    }
    if let Some(seconds) = failure.retry_after {
        data["retry_after"] = json!(seconds);
    }
    match mcp_mapping(failure.code).0 {
        McpAnswer::ToolError => {
            // Every message in the text too: a model reads content, not data.
            let mut text = failure.message;
            for issue in failure.validation_errors.iter().flatten() {
                let path = if issue.path.is_empty() {
                    "(root)"
                } else {
                    &issue.path
                };
                text.push_str(&format!("\n{path}: {}", issue.message));
            }
            let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
            let mut meta = rmcp::model::MetaObject::new();
            meta.0.insert(ERROR_META_KEY.to_owned(), data.clone());
            result.meta = Some(meta);
            if !tool_has_output_schema {
                result.structured_content = Some(data);
            }
            Ok(CallToolResponse::Complete(result))
        }
        McpAnswer::JsonRpc(code) => {
            Err(McpError::new(ErrorCode(code), failure.message, Some(data)))
        }
        McpAnswer::Http => Err(McpError::new(
            ErrorCode(jsonrpc::INTERNAL_ERROR),
            failure.message,
            Some(data),
        )),
    }
}

/// The answer to a failed request other than `tools/call` (`resources/read`, `prompts/get`,
/// `completion/complete`, `resources/subscribe`), which has no result to carry `isError`: a
/// JSON-RPC error with the same `data` as a tool's. What names nothing the service has, or
/// arguments it refuses, is invalid params (-32602); what failed behind it is an internal
/// error (-32603).
pub(super) fn catalog_error(failure: crate::service::CallFailure, request_id: &str) -> McpError {
    let mut data = json!({"code": failure.code, "request_id": request_id, "retryable": failure.code.is_retryable()});
    if let Some(issues) = &failure.validation_errors {
        data["validation_errors"] = json!(issues);
    }
    if let Some(seconds) = failure.retry_after {
        data["retry_after"] = json!(seconds);
    }
    let code = match failure.code {
        Code::ResourceNotFound
        | Code::PromptNotFound
        | Code::InvalidArguments
        | Code::InvalidRequest
        | Code::ToolNotFound
        | Code::Forbidden => jsonrpc::INVALID_PARAMS,
        _ => jsonrpc::INTERNAL_ERROR,
    };
    McpError::new(ErrorCode(code), failure.message, Some(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wire values: JSON-RPC 2.0's own codes and the MCP servers' conventions.
    #[test]
    fn json_rpc_codes_are_the_specified_numbers() {
        use jsonrpc::*;
        assert_eq!(
            [
                INVALID_REQUEST,
                METHOD_NOT_FOUND,
                INVALID_PARAMS,
                INTERNAL_ERROR,
                SESSION_NOT_FOUND,
                HEADER_MISMATCH,
                REQUEST_CANCELLED
            ],
            [-32600, -32601, -32602, -32603, -32001, -32020, -32800]
        );
    }

    #[test]
    fn every_code_has_one_mcp_answer() {
        use McpAnswer::*;
        let table: Vec<(Code, McpAnswer)> =
            Code::ALL.iter().map(|c| (*c, mcp_mapping(*c).0)).collect();
        assert_eq!(
            table,
            vec![
                (Code::ToolNotFound, JsonRpc(jsonrpc::INVALID_PARAMS)),
                (Code::ResourceNotFound, JsonRpc(jsonrpc::INVALID_PARAMS)),
                (Code::PromptNotFound, JsonRpc(jsonrpc::INVALID_PARAMS)),
                (Code::InvalidArguments, ToolError),
                (Code::InvalidRequest, JsonRpc(jsonrpc::INVALID_REQUEST)),
                (Code::Unauthorized, Http),
                (Code::Forbidden, JsonRpc(jsonrpc::INVALID_PARAMS)),
                (Code::CapabilityRequired, ToolError),
                (Code::NotFound, Http),
                (Code::MethodNotAllowed, Http),
                (Code::PayloadTooLarge, Http),
                (Code::HeadersTooLarge, Http),
                (Code::RateLimited, ToolError),
                (Code::ExecutionError, ToolError),
                (Code::InternalError, JsonRpc(jsonrpc::INTERNAL_ERROR)),
                (Code::ServiceUnavailable, ToolError),
                (Code::Timeout, ToolError),
            ]
        );
    }

    #[test]
    fn a_catalog_failure_is_invalid_params_when_the_caller_is_wrong_else_internal() {
        let failure = |code, retry_after| crate::service::CallFailure {
            code,
            message: "m".into(),
            validation_errors: None,
            retry_after,
            output: None,
        };
        let missing = catalog_error(failure(Code::ResourceNotFound, None), "rid");
        assert_eq!(missing.code.0, jsonrpc::INVALID_PARAMS);
        let data = missing.data.unwrap();
        assert_eq!(data["code"], "RESOURCE_NOT_FOUND");
        assert_eq!(data["request_id"], "rid");
        for code in [
            Code::PromptNotFound,
            Code::InvalidArguments,
            Code::InvalidRequest,
        ] {
            assert_eq!(
                catalog_error(failure(code, None), "r").code.0,
                jsonrpc::INVALID_PARAMS
            );
        }
        let refused = catalog_error(failure(Code::ServiceUnavailable, Some(1)), "rid");
        assert_eq!(refused.code.0, jsonrpc::INTERNAL_ERROR);
        assert_eq!(refused.message, "m");
        let data = refused.data.unwrap();
        assert_eq!(
            (data["retry_after"].clone(), data["retryable"].clone()),
            (json!(1), json!(true))
        );
        assert_eq!(
            catalog_error(failure(Code::Timeout, None), "r").code.0,
            jsonrpc::INTERNAL_ERROR
        );
    }

    #[test]
    fn tool_errors_are_results_and_request_errors_are_json_rpc() {
        let failure = |code| crate::service::CallFailure {
            code,
            message: "m".into(),
            validation_errors: None,
            retry_after: None,
            output: None,
        };
        match error_for(failure(Code::Timeout), "rid", false) {
            Ok(CallToolResponse::Complete(r)) => {
                assert_eq!(r.is_error, Some(true));
                assert_eq!(r.structured_content.unwrap()["retryable"], true);
                assert_eq!(r.meta.unwrap().0[ERROR_META_KEY]["code"], "TIMEOUT");
            }
            other => panic!("{other:?}"),
        }
        let invalid = crate::service::CallFailure {
            code: Code::InvalidArguments,
            message: "Arguments do not match".into(),
            validation_errors: Some(vec![
                contract::ValidationIssue {
                    path: "/a".into(),
                    message: "\"one\" is not of type \"number\"".into(),
                },
                contract::ValidationIssue {
                    path: String::new(),
                    message: "\"b\" is a required property".into(),
                },
            ]),
            retry_after: None,
            output: None,
        };
        match error_for(invalid, "rid", false) {
            Ok(CallToolResponse::Complete(r)) => {
                assert_eq!(r.is_error, Some(true));
                let text = serde_json::to_value(&r.content).unwrap()[0]["text"].clone();
                assert_eq!(
                    text,
                    "Arguments do not match\n/a: \"one\" is not of type \"number\"\n(root): \"b\" is a required property"
                );
                let data = r.structured_content.unwrap();
                assert_eq!(data["code"], "INVALID_ARGUMENTS");
                assert_eq!(data["request_id"], "rid");
                assert_eq!(data["validation_errors"][0]["path"], "/a");
            }
            other => panic!("{other:?}"),
        }
        match error_for(failure(Code::ExecutionError), "rid", true) {
            Ok(CallToolResponse::Complete(r)) => {
                assert_eq!(r.is_error, Some(true));
                assert!(
                    r.structured_content.is_none(),
                    "would break the output schema"
                );
                let meta = r.meta.unwrap();
                assert_eq!(meta.0[ERROR_META_KEY]["code"], "EXECUTION_ERROR");
                assert_eq!(meta.0[ERROR_META_KEY]["retryable"], true);
            }
            other => panic!("{other:?}"),
        }
        let mut refused = failure(Code::ServiceUnavailable);
        refused.retry_after = Some(1);
        match error_for(refused, "rid", false) {
            Ok(CallToolResponse::Complete(r)) => {
                assert_eq!(r.is_error, Some(true));
                let data = &r.meta.unwrap().0[ERROR_META_KEY];
                assert_eq!(data["code"], "SERVICE_UNAVAILABLE");
                assert_eq!(data["retry_after"], 1);
            }
            other => panic!("{other:?}"),
        }
        match error_for(failure(Code::Forbidden), "rid", false) {
            Err(e) => {
                assert_eq!(e.code.0, jsonrpc::INVALID_PARAMS);
                assert_eq!(e.data.unwrap()["code"], "FORBIDDEN");
            }
            other => panic!("{other:?}"),
        }
        // What the HTTP layer refuses never reaches tools/call; if it did, it is an internal
        // error with the code in the data, never a result the model would act on.
        match error_for(failure(Code::Unauthorized), "rid", false) {
            Err(e) => {
                assert_eq!(e.code.0, jsonrpc::INTERNAL_ERROR);
                assert_eq!(e.message, "m");
                assert_eq!(e.data.unwrap()["code"], "UNAUTHORIZED");
            }
            other => panic!("{other:?}"),
        }
        match error_for(failure(Code::ToolNotFound), "rid", false) {
            Err(e) => {
                assert_eq!(e.code.0, jsonrpc::INVALID_PARAMS);
                assert_eq!(e.data.unwrap()["request_id"], "rid");
            }
            other => panic!("{other:?}"),
        }
    }
}
