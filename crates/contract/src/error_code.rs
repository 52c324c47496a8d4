//! The error codes of the contract and the one table that maps each to its HTTP status.
//!
//! Everything that needs a status for a code (the server's responses, the OpenAPI document, the
//! conformance tester) asks [`ErrorCode::http_status`]; no other place spells the mapping.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Why a request failed. Serialized in SCREAMING_SNAKE_CASE, e.g. `TOOL_NOT_FOUND`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The request names a tool this service does not have.
    ToolNotFound,
    /// The request names a resource URI no provider of this service offers.
    ResourceNotFound,
    /// The request names a prompt this service does not have.
    PromptNotFound,
    /// The tool's arguments fail its input schema; `meta.validation_errors` says where.
    InvalidArguments,
    /// The request itself is malformed: bad JSON, wrong content type, wrong shape, bad request id.
    InvalidRequest,
    /// An API key is required and was missing or wrong.
    Unauthorized,
    /// The request is not allowed: a `Host` or browser `Origin` the service does not accept, or a
    /// tool outside the API key's scope.
    Forbidden,
    /// The tool needs something of its caller that this caller cannot give (an MCP client's
    /// sampling, or a task); the message names it and where the tool can be called instead.
    CapabilityRequired,
    /// No such route.
    NotFound,
    /// The route exists but not for this HTTP method.
    MethodNotAllowed,
    /// The body is larger than `limits.max_body_bytes`.
    PayloadTooLarge,
    /// The request's header fields are more or larger than `limits.max_headers` /
    /// `limits.max_header_bytes` allow.
    HeadersTooLarge,
    /// Too many requests; `Retry-After` says when to come back.
    RateLimited,
    /// The tool ran and failed, or the dependency behind it is down.
    ExecutionError,
    /// The gateway itself failed; a bug.
    InternalError,
    /// The service is initializing or shutting down; `Retry-After` says when to come back.
    ServiceUnavailable,
    /// The tool did not answer within `limits.call_timeout_ms`; the call was cancelled upstream.
    Timeout,
}

impl ErrorCode {
    /// Every code, in the order the documentation lists them.
    pub const ALL: [ErrorCode; 17] = [
        ErrorCode::ToolNotFound,
        ErrorCode::ResourceNotFound,
        ErrorCode::PromptNotFound,
        ErrorCode::InvalidArguments,
        ErrorCode::InvalidRequest,
        ErrorCode::Unauthorized,
        ErrorCode::Forbidden,
        ErrorCode::CapabilityRequired,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::PayloadTooLarge,
        ErrorCode::HeadersTooLarge,
        ErrorCode::RateLimited,
        ErrorCode::ExecutionError,
        ErrorCode::InternalError,
        ErrorCode::ServiceUnavailable,
        ErrorCode::Timeout,
    ];

    /// The HTTP status that answers this code: the contract's one table.
    pub const fn http_status(self) -> u16 {
        match self {
            ErrorCode::ToolNotFound => 404,
            ErrorCode::ResourceNotFound => 404,
            ErrorCode::PromptNotFound => 404,
            ErrorCode::InvalidArguments => 400,
            ErrorCode::InvalidRequest => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden => 403,
            // The request is understood and valid; it is refused for this caller, which lacks
            // what the tool needs (RFC 9110 §15.5.4). Not 5xx: nothing failed.
            ErrorCode::CapabilityRequired => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::HeadersTooLarge => 431,
            ErrorCode::RateLimited => 429,
            ErrorCode::ExecutionError => 500,
            ErrorCode::InternalError => 500,
            ErrorCode::ServiceUnavailable => 503,
            ErrorCode::Timeout => 504,
        }
    }

    /// The code as it appears on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ToolNotFound => "TOOL_NOT_FOUND",
            ErrorCode::ResourceNotFound => "RESOURCE_NOT_FOUND",
            ErrorCode::PromptNotFound => "PROMPT_NOT_FOUND",
            ErrorCode::InvalidArguments => "INVALID_ARGUMENTS",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::CapabilityRequired => "CAPABILITY_REQUIRED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::HeadersTooLarge => "HEADERS_TOO_LARGE",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::ExecutionError => "EXECUTION_ERROR",
            ErrorCode::InternalError => "INTERNAL_ERROR",
            ErrorCode::ServiceUnavailable => "SERVICE_UNAVAILABLE",
            ErrorCode::Timeout => "TIMEOUT",
        }
    }

    /// Whether responses with this code carry a `Retry-After` header.
    pub const fn has_retry_after(self) -> bool {
        matches!(self, ErrorCode::RateLimited | ErrorCode::ServiceUnavailable)
    }

    /// Whether a client may retry the same request unchanged and expect a different outcome.
    pub const fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::RateLimited
                | ErrorCode::ServiceUnavailable
                | ErrorCode::Timeout
                | ErrorCode::ExecutionError
        )
    }

    /// When the contract uses this code, in one sentence (for the OpenAPI document and docs).
    pub const fn meaning(self) -> &'static str {
        match self {
            ErrorCode::ToolNotFound => "The request names a tool this service does not have.",
            ErrorCode::ResourceNotFound => {
                "No provider of this service lists the resource URI or has a template matching it (or the provider named by `provider` does not know it)."
            }
            ErrorCode::PromptNotFound => {
                "The request names a prompt this service does not have (by served or qualified name)."
            }
            ErrorCode::InvalidArguments => {
                "The arguments fail the tool's input schema; meta.validation_errors lists every failing instance path."
            }
            ErrorCode::InvalidRequest => {
                "The request is malformed: invalid JSON, wrong Content-Type, missing or mistyped fields, or a request id that is not a UUID v4; or its JSON body has a duplicate key (at any depth), nests deeper than limits.max_json_depth, has a string longer than limits.max_string_bytes or an object or array with more members than limits.max_json_members (the message names the JSON pointer)."
            }
            ErrorCode::Unauthorized => {
                "An API key is required (X-API-Key or Authorization: Bearer) and was missing or wrong."
            }
            ErrorCode::Forbidden => {
                "The request is not allowed: its Host is not one of security.allowed_hosts, its browser Origin is not one of security.allowed_origins, or the tool is outside the API key's scope."
            }
            ErrorCode::CapabilityRequired => {
                "The tool needs something of its caller that this caller cannot give: it asked for sampling (a model of the calling MCP client) or runs only as a task. The message names what, and where the tool can be called instead (over MCP at /mcp, by a client that offers it)."
            }
            ErrorCode::NotFound => "No route matches the path.",
            ErrorCode::MethodNotAllowed => "The path exists but not for this HTTP method.",
            ErrorCode::PayloadTooLarge => "The body is larger than limits.max_body_bytes.",
            ErrorCode::HeadersTooLarge => {
                "The request has more header fields than limits.max_headers, or more bytes of them than limits.max_header_bytes."
            }
            ErrorCode::RateLimited => {
                "More requests than security.rate_limit allows this client per minute (or calls than the tool's rate_limit); retry after Retry-After seconds."
            }
            ErrorCode::ExecutionError => {
                "The tool ran and reported an error, or the dependency behind it is unavailable."
            }
            ErrorCode::InternalError => "The gateway failed while handling the request.",
            ErrorCode::ServiceUnavailable => {
                "The service is initializing or shutting down, or the call was not admitted (every slot taken and the queue full, or no slot within limits.queue_timeout_ms), or its provider's circuit is open after repeated upstream failures; retry after Retry-After seconds."
            }
            ErrorCode::Timeout => {
                "The tool did not answer within its timeout (its provider's limits, else limits.call_timeout_ms); the call was cancelled upstream."
            }
        }
    }

    /// A representative `error` message, used in the OpenAPI examples.
    pub const fn example_message(self) -> &'static str {
        match self {
            ErrorCode::ToolNotFound => "Tool 'no_such_tool' not found",
            ErrorCode::ResourceNotFound => "Resource 'test://no/such/resource' not found",
            ErrorCode::PromptNotFound => "Prompt 'no_such_prompt' not found",
            ErrorCode::InvalidArguments => "Arguments do not match the input schema of tool 'echo'",
            ErrorCode::InvalidRequest => {
                "Request body is not valid JSON: expected value at line 1 column 1"
            }
            ErrorCode::Unauthorized => "Missing or invalid API key",
            ErrorCode::Forbidden => "Host 'evil.example' is not allowed",
            ErrorCode::CapabilityRequired => {
                "Tool 'echo' asked its caller for sampling/createMessage, which a REST call cannot answer: call it over MCP at /mcp with a client that offers sampling"
            }
            ErrorCode::NotFound => "No route for GET /no-such-route",
            ErrorCode::MethodNotAllowed => "Method DELETE is not allowed on /call-tool",
            ErrorCode::PayloadTooLarge => "Request body exceeds the limit of 1048576 bytes",
            ErrorCode::HeadersTooLarge => {
                "Request header fields take 40000 bytes, more than the limit of 32768"
            }
            ErrorCode::RateLimited => "Rate limit of 1000 requests per second exceeded",
            ErrorCode::ExecutionError => "Tool 'echo' failed: upstream MCP server is unavailable",
            ErrorCode::InternalError => "Internal error while handling the request",
            ErrorCode::ServiceUnavailable => "Service is initializing",
            ErrorCode::Timeout => "Tool 'echo' did not answer within 30000 ms",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_name_matches_serde() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().to_owned()));
            let back: ErrorCode = serde_json::from_value(json).unwrap();
            assert_eq!(back, code);
        }
    }

    #[test]
    fn display_is_the_wire_name() {
        for code in ErrorCode::ALL {
            assert_eq!(code.to_string(), code.as_str());
        }
    }

    /// A client retries on these and on nothing else; two of them also say when (Retry-After).
    #[test]
    fn retryable_codes_and_retry_after_are_the_designed_ones() {
        let retryable: Vec<&str> = ErrorCode::ALL
            .iter()
            .filter(|c| c.is_retryable())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(
            retryable,
            [
                "RATE_LIMITED",
                "EXECUTION_ERROR",
                "SERVICE_UNAVAILABLE",
                "TIMEOUT"
            ]
        );
        let with_retry_after: Vec<&str> = ErrorCode::ALL
            .iter()
            .filter(|c| c.has_retry_after())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(with_retry_after, ["RATE_LIMITED", "SERVICE_UNAVAILABLE"]);
    }

    #[test]
    fn statuses_are_the_designed_ones() {
        let table: Vec<(&str, u16)> = ErrorCode::ALL
            .iter()
            .map(|c| (c.as_str(), c.http_status()))
            .collect();
        assert_eq!(
            table,
            vec![
                ("TOOL_NOT_FOUND", 404),
                ("RESOURCE_NOT_FOUND", 404),
                ("PROMPT_NOT_FOUND", 404),
                ("INVALID_ARGUMENTS", 400),
                ("INVALID_REQUEST", 400),
                ("UNAUTHORIZED", 401),
                ("FORBIDDEN", 403),
                ("CAPABILITY_REQUIRED", 403),
                ("NOT_FOUND", 404),
                ("METHOD_NOT_ALLOWED", 405),
                ("PAYLOAD_TOO_LARGE", 413),
                ("HEADERS_TOO_LARGE", 431),
                ("RATE_LIMITED", 429),
                ("EXECUTION_ERROR", 500),
                ("INTERNAL_ERROR", 500),
                ("SERVICE_UNAVAILABLE", 503),
                ("TIMEOUT", 504),
            ]
        );
    }
}
