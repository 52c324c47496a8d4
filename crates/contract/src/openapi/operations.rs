//! The operations of the contract: path, method, id, words, the success schema, and the error
//! codes each can answer, from which its responses are derived.

use utoipa::openapi::path::HttpMethod;

use crate::ErrorCode;

/// The operations of the contract, with the error codes each can answer.
pub(super) struct Operation {
    pub(super) path: &'static str,
    pub(super) method: HttpMethod,
    pub(super) id: &'static str,
    pub(super) summary: &'static str,
    pub(super) description: &'static str,
    pub(super) success: &'static str,
    pub(super) errors: &'static [ErrorCode],
}

/// Codes any call of a tool can answer (POST /call-tool and POST /tools/{name}).
const CALL_ERRORS: &[ErrorCode] = &[
    ErrorCode::InvalidRequest,
    ErrorCode::InvalidArguments,
    ErrorCode::Unauthorized,
    ErrorCode::Forbidden,
    ErrorCode::CapabilityRequired,
    ErrorCode::ToolNotFound,
    ErrorCode::MethodNotAllowed,
    ErrorCode::HeadersTooLarge,
    ErrorCode::PayloadTooLarge,
    ErrorCode::RateLimited,
    ErrorCode::ExecutionError,
    ErrorCode::InternalError,
    ErrorCode::ServiceUnavailable,
    ErrorCode::Timeout,
];

/// Codes a list of resources, templates or prompts can answer.
const LIST_ERRORS: &[ErrorCode] = &[
    ErrorCode::InvalidRequest,
    ErrorCode::Unauthorized,
    ErrorCode::Forbidden,
    ErrorCode::MethodNotAllowed,
    ErrorCode::HeadersTooLarge,
    ErrorCode::RateLimited,
    ErrorCode::InternalError,
    ErrorCode::ServiceUnavailable,
];

/// Codes a read or a cancel of a task can answer.
const TASK_ERRORS: &[ErrorCode] = &[
    ErrorCode::InvalidRequest,
    ErrorCode::Unauthorized,
    ErrorCode::Forbidden,
    ErrorCode::NotFound,
    ErrorCode::MethodNotAllowed,
    ErrorCode::HeadersTooLarge,
    ErrorCode::RateLimited,
    ErrorCode::InternalError,
    ErrorCode::ServiceUnavailable,
];

pub(super) const OPERATIONS: &[Operation] = &[
    Operation {
        path: "/tools",
        method: HttpMethod::Get,
        id: "listTools",
        summary: "List the service's tools",
        description: "Every tool of every provider of the service that the caller may use, sorted by name, with its input schema; with `q`, only those that match the search, best first, each with its `score`. Any other query parameter is 400 INVALID_REQUEST.",
        success: "ToolsEnvelope",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::RateLimited,
            ErrorCode::InternalError,
            ErrorCode::ServiceUnavailable,
        ],
    },
    Operation {
        path: "/call-tool",
        method: HttpMethod::Post,
        id: "callTool",
        summary: "Call a tool",
        description: "Validates `arguments` against the tool's input schema, then runs the tool. \
            `data` is the tool's result.",
        success: "CallToolEnvelope",
        errors: CALL_ERRORS,
    },
    Operation {
        path: "/tools/{name}",
        method: HttpMethod::Post,
        id: "callToolByName",
        summary: "Call a tool named in the path",
        description: "The same as POST /call-tool with `tool` taken from the path; the body is the \
            arguments object. The request id may come from the `X-Request-Id` header.",
        success: "CallToolEnvelope",
        errors: CALL_ERRORS,
    },
    Operation {
        path: "/resources",
        method: HttpMethod::Get,
        id: "listResources",
        summary: "List the resources of the service's providers",
        description: "Every resource of every provider, in provider order, each with its \
            `provider` and `qualified_name` (`{provider}.{name}`). A provider whose list cannot \
            be had now (not connected, timed out) is left out.",
        success: "ResourcesEnvelope",
        errors: LIST_ERRORS,
    },
    Operation {
        path: "/resources/read",
        method: HttpMethod::Get,
        id: "readResource",
        summary: "Read one resource",
        description: "Reads `uri` on the provider that offers it: the one named by `provider`, \
            else the first (in provider order) that lists the URI, else the first with a \
            resource template matching it. RESOURCE_NOT_FOUND when none does, or when the \
            provider does not know the URI. Admitted and bounded like a tool call (the \
            provider's `limits`).",
        success: "ResourceReadEnvelope",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::ResourceNotFound,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::RateLimited,
            ErrorCode::ExecutionError,
            ErrorCode::InternalError,
            ErrorCode::ServiceUnavailable,
            ErrorCode::Timeout,
        ],
    },
    Operation {
        path: "/resource-templates",
        method: HttpMethod::Get,
        id: "listResourceTemplates",
        summary: "List the resource templates of the service's providers",
        description: "Every resource template (RFC 6570) of every provider, in provider order; \
            any URI a template matches can be read with GET /resources/read.",
        success: "ResourceTemplatesEnvelope",
        errors: LIST_ERRORS,
    },
    Operation {
        path: "/prompts",
        method: HttpMethod::Get,
        id: "listPrompts",
        summary: "List the prompts of the service's providers",
        description: "Every prompt of every provider, in provider order, with its arguments and \
            `args_schema` (the JSON Schema its arguments are checked against).",
        success: "PromptsEnvelope",
        errors: LIST_ERRORS,
    },
    Operation {
        path: "/prompts/{name}",
        method: HttpMethod::Post,
        id: "getPrompt",
        summary: "Render a prompt",
        description: "`name` is a served name (the first provider, in provider order, that has \
            it) or a qualified name `{provider}.{name}`. The body is the arguments object (empty \
            means `{}`), checked against the prompt's `args_schema` first: INVALID_ARGUMENTS \
            with `meta.validation_errors` as for a tool call.",
        success: "PromptEnvelope",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::InvalidArguments,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::PromptNotFound,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::PayloadTooLarge,
            ErrorCode::RateLimited,
            ErrorCode::ExecutionError,
            ErrorCode::InternalError,
            ErrorCode::ServiceUnavailable,
            ErrorCode::Timeout,
        ],
    },
    Operation {
        path: "/tasks/{id}",
        method: HttpMethod::Get,
        id: "getTask",
        summary: "Read a task",
        description: "A tool call started with `Prefer: respond-async` (202 and `Location: \
            /tasks/{id}`): `status` is `working` until the call ends, then `completed` with the \
            tool's `data` in `result`, `failed` with the call's `error` (the code and message \
            the call would have answered), or `cancelled`. Poll every `poll_interval_ms`. A task \
            is its caller's alone (another API key or address gets 404) and is kept 10 minutes \
            after it ends.",
        success: "TaskEnvelope",
        errors: TASK_ERRORS,
    },
    Operation {
        path: "/tasks/{id}",
        method: HttpMethod::Delete,
        id: "cancelTask",
        summary: "Cancel a task",
        description: "Cancels the task's call if it still runs (the upstream request is \
            cancelled) and answers the task as it is then: `cancelled`, or its end if it had \
            ended before.",
        success: "TaskEnvelope",
        errors: TASK_ERRORS,
    },
    Operation {
        path: "/health",
        method: HttpMethod::Get,
        id: "getHealth",
        summary: "Health of the service, its dependencies and its tools",
        description: "200 with the report when healthy or degraded; 503 SERVICE_UNAVAILABLE with the \
            same report in `meta.health` while initializing or shutting down, or when no tool can \
            run. Answered at once from the last background checks (`checked_at` says when each \
            was made). Never rate limited; needs no API key while it is in `security.public_routes` \
            (the default). With API keys or OAuth on, `tools` names only the tools the caller's \
            key or token may call, and none for a caller without credentials; `tool_count` counts \
            them all.",
        success: "HealthEnvelope",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::Forbidden,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::InternalError,
            ErrorCode::ServiceUnavailable,
        ],
    },
    Operation {
        path: "/metrics",
        method: HttpMethod::Get,
        id: "getMetrics",
        summary: "The service's metrics for Prometheus",
        description: "The service's series in the Prometheus text exposition format (0.0.4), \
            when `monitoring.metrics_enabled` is on; while it is off, 404 NOT_FOUND as for an \
            unknown route. Never rate limited, answered while initializing or shutting down; \
            requires an API key when keys are required (unless listed in \
            `security.public_routes`). The series name every tool, so a key or token limited \
            to some tools gets 403 FORBIDDEN. Not an envelope: with GET /status's page, \
            the only success bodies of the contract that are not.",
        success: "",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::NotFound,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::InternalError,
        ],
    },
    Operation {
        path: "/status",
        method: HttpMethod::Get,
        id: "getStatusPage",
        summary: "The status page, for people",
        description: "An HTML page that shows the service, its dependencies, providers and \
            tools, and charts of the last hour, refreshed every 5 seconds from GET /status/data \
            (its scripts, styles and licence notices are at `/status/assets/{file}`, part of the \
            binary: nothing is loaded from elsewhere). Public: the page and its assets hold no \
            data, so they need no API key or token even when keys or OAuth are on; the page asks \
            for one when GET /status/data answers 401. `/status/` redirects (308) to `../status`. \
            Not an envelope: the success is `text/html`.",
        success: "",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::Forbidden,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::RateLimited,
            ErrorCode::InternalError,
            ErrorCode::ServiceUnavailable,
        ],
    },
    Operation {
        path: "/status/data",
        method: HttpMethod::Get,
        id: "getStatusData",
        summary: "What the status page shows",
        description: "The service's state, dependencies, providers and cluster as GET /health \
            reports them; each tool's calls, error rate, p50/p95 and last failure (its time, \
            code and request id, never its message); and the timeline of the last hour: one \
            sample every `monitoring.status_interval_ms` (10 s by default), at most 360, of the \
            queue depth, the calls running, refusals per second and, per tool listed now, calls \
            and errors per second and the p95 latency. No argument value, error message or \
            secret. The same access rules as the other routes: an API key or token when keys \
            or OAuth are on, and the rate limit; the tools are those the key or token may call \
            (`tool_count` counts them all).",
        success: "StatusEnvelope",
        errors: LIST_ERRORS,
    },
];

pub(super) fn is_call(op: &Operation) -> bool {
    op.id == "callTool" || op.id == "callToolByName"
}
