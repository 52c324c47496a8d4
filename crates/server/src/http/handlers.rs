//! The handlers of the contract's routes. Each is thin: it asks the [`Service`] and wraps the
//! answer in a [`Reply`]; the envelope layer does the rest.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, Uri, header};
use axum::response::{IntoResponse, Response};
use contract::{ErrorCode, HealthStatus, Meta, TaskInfo, ToolRequest};
use serde_json::Value;

use super::auth::insufficient_scope;
use super::protected_resource::Resource;
use super::reply::{ArgumentsBody, JsonBody, Reply};
use super::request_id::RequestId;
use crate::provider::JsonObject;
use crate::service::rate_limit::Client;
use crate::service::visibility::ToolSight;
use crate::service::{self, CallFailure, CallRequest, CatalogRequest, Service, TaskRequest};
use crate::telemetry::TraceContext;

/// The query of GET /tools: a search (`q`) and how many tools it answers at most.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsQuery {
    q: Option<String>,
    limit: Option<usize>,
}

/// The tools the client may use (every tool, or its credential's scope); with `q`, those that
/// match it, best first, each with its score.
pub async fn list_tools(
    State(service): State<Arc<Service>>,
    axum::Extension(client): axum::Extension<Client>,
    query: Result<Query<ToolsQuery>, QueryRejection>,
) -> Reply {
    use crate::service::discovery::{DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_BYTES};
    let invalid = |why: String| Reply::error(ErrorCode::InvalidRequest, why);
    let Query(query) = match query {
        Ok(query) => query,
        Err(e) => {
            return invalid(format!(
                "Invalid query: {} (expected q=<what you need>[&limit=1..{MAX_LIMIT}], or nothing for every tool)",
                e.body_text()
            ));
        }
    };
    if let Some(limit) = query.limit
        && !(1..=MAX_LIMIT).contains(&limit)
    {
        return invalid(format!("limit must be from 1 to {MAX_LIMIT}, got {limit}"));
    }
    let tools = match (query.q, query.limit) {
        (None, None) => return Reply::ok_json(service.tools_data(&client)),
        // The first `limit` tools by name.
        (None, Some(limit)) => service.listed_tools(&client, limit),
        (Some(q), limit) => {
            if q.trim().is_empty() || q.len() > MAX_QUERY_BYTES {
                return invalid(format!(
                    "q must hold 1 to {MAX_QUERY_BYTES} bytes of text, got {}",
                    q.len()
                ));
            }
            service.find_tools(&client, &q, limit.unwrap_or(DEFAULT_LIMIT))
        }
    };
    let found = contract::ToolsResponse {
        service: service.name.clone(),
        version: service.version.clone(),
        tools,
    };
    Reply::ok(serde_json::to_value(found).unwrap_or(Value::Null))
}

pub async fn call_tool(
    State(service): State<Arc<Service>>,
    axum::Extension(header_id): axum::Extension<RequestId>,
    axum::Extension(client): axum::Extension<Client>,
    facts: CallFacts,
    JsonBody(request): JsonBody<ToolRequest>,
) -> Reply {
    let body_id = match request.request_id.as_deref().map(RequestId::parse) {
        None => None,
        Some(Ok(id)) => {
            tracing::Span::current().record("request_id", id.as_str());
            Some(id)
        }
        Some(Err(why)) => return Reply::error(ErrorCode::InvalidRequest, why.to_string()),
    };
    let request_id = body_id.clone().unwrap_or(header_id);
    let call = Call {
        tool: &request.tool,
        arguments: request.arguments,
        request_id: &request_id,
        client: &client,
        trace: &facts.trace,
        respond_async: facts.respond_async,
        resource: facts.resource,
    };
    let mut reply = run(&service, call).await;
    reply.request_id = body_id;
    reply
}

pub async fn call_tool_by_name(
    State(service): State<Arc<Service>>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    axum::Extension(client): axum::Extension<Client>,
    facts: CallFacts,
    Path(tool): Path<String>,
    ArgumentsBody(arguments): ArgumentsBody,
) -> Reply {
    let call = Call {
        tool: &tool,
        arguments,
        request_id: &request_id,
        client: &client,
        trace: &facts.trace,
        respond_async: facts.respond_async,
        resource: facts.resource,
    };
    run(&service, call).await
}

/// What a tool call reads of its request besides the body: its trace, `Prefer:
/// respond-async`, and the resource an OAuth token was checked for.
pub struct CallFacts {
    trace: TraceContext,
    respond_async: bool,
    resource: Option<Resource>,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for CallFacts {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(CallFacts {
            trace: parts
                .extensions
                .get::<TraceContext>()
                .cloned()
                .unwrap_or_else(TraceContext::detached),
            respond_async: respond_async(&parts.headers),
            resource: parts.extensions.get::<Resource>().cloned(),
        })
    }
}

/// A REST tool call, by either route.
struct Call<'a> {
    tool: &'a str,
    arguments: JsonObject,
    request_id: &'a RequestId,
    client: &'a Client,
    trace: &'a TraceContext,
    /// `Prefer: respond-async`: run it as a task and answer 202 at once.
    respond_async: bool,
    /// The resource an OAuth token was checked for (a 403's challenge names its metadata).
    resource: Option<Resource>,
}

/// Whether a `Prefer` header (RFC 7240) asks for `respond-async`.
fn respond_async(headers: &HeaderMap) -> bool {
    prefers(headers, "respond-async")
}

/// Whether a `Prefer` header (RFC 7240) names the preference `wanted`.
pub fn prefers(headers: &HeaderMap, wanted: &str) -> bool {
    headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|preference| preference.split([';', '=']).next().unwrap_or("").trim())
        .any(|token| token.eq_ignore_ascii_case(wanted))
}

async fn run(service: &Arc<Service>, call: Call<'_>) -> Reply {
    // REST takes a qualified name too (`{provider}.{name}`); from here on the call is the
    // served tool's, so limits, metrics and `meta.tool` all say the served name. MCP
    // `tools/call` takes served names only: its clients call what `tools/list` names.
    let tool = &service.served_name(call.tool);
    if call.respond_async {
        let started = service.start_task(TaskRequest {
            tool: tool.clone(),
            arguments: call.arguments,
            request_id: call.request_id.as_str().to_owned(),
            client: call.client.clone(),
            trace: call.trace.clone(),
            // An HTTP caller has no client to ask: the upstream is answered as for a call.
            caller: None,
        });
        let reply = match started {
            Ok(task) => Reply::accepted(
                serde_json::to_value(task.info()).unwrap_or(Value::Null),
                format!("/tasks/{}", task.id),
            ),
            Err(failure) => refused(service, call.client, call.resource.as_ref(), tool, failure),
        };
        return reply.with_tool(tool);
    }
    let request = CallRequest {
        tool,
        arguments: call.arguments,
        request_id: call.request_id.as_str(),
        client: call.client,
        trace: call.trace,
        progress: None,
        caller: None,
    };
    let reply = match service.call_tool(request).await {
        Ok(result) => {
            let cache = result.cache;
            let mut reply = Reply::ok(result.into_data());
            reply.meta.cache = cache;
            reply
        }
        Err(failure) => refused(service, call.client, call.resource.as_ref(), tool, failure),
    };
    reply.with_tool(tool)
}

/// A call's refusal; a 403 for a token's scopes carries the `insufficient_scope` challenge
/// naming the scopes that open the tool, whether the call was to run now or as a task.
fn refused(
    service: &Service,
    client: &Client,
    resource: Option<&Resource>,
    tool: &str,
    failure: CallFailure,
) -> Reply {
    let challenge = resource
        .filter(|_| failure.code == ErrorCode::Forbidden)
        .and_then(|resource| insufficient_scope(&service.settings(), client, tool, resource));
    let reply = Reply::from(failure);
    match challenge {
        Some(challenge) => reply.challenge(challenge),
        None => reply,
    }
}

/// GET /tasks/{id}: the task's status, then its result or error (from any replica, with
/// `cluster`).
pub async fn get_task(
    State(service): State<Arc<Service>>,
    axum::Extension(client): axum::Extension<Client>,
    Path(id): Path<String>,
) -> Reply {
    match service.task(&id, &client).await {
        Some(task) => task_reply(task.info()),
        None => no_such_task(&id),
    }
}

/// DELETE /tasks/{id}: cancels the task if it still works; the task as it is then.
pub async fn cancel_task(
    State(service): State<Arc<Service>>,
    axum::Extension(client): axum::Extension<Client>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Reply {
    match service.cancel_task(&id, &client, &headers).await {
        Some(task) => task_reply(task),
        None => no_such_task(&id),
    }
}

/// A task as both task routes answer it.
fn task_reply(task: TaskInfo) -> Reply {
    let tool = task.tool.clone();
    Reply::ok(serde_json::to_value(task).unwrap_or(Value::Null)).with_tool(&tool)
}

/// A task id this client has no task by (an unknown one, one forgotten, another's).
fn no_such_task(id: &str) -> Reply {
    Reply::error(
        ErrorCode::NotFound,
        format!("Task '{}' not found", id.escape_default()),
    )
}

/// GET /resources: every provider's resources.
pub async fn list_resources(State(service): State<Arc<Service>>) -> Reply {
    Reply::ok(serde_json::to_value(service.resources(None).await).unwrap_or(Value::Null))
}

/// GET /resource-templates: every provider's resource templates.
pub async fn list_resource_templates(State(service): State<Arc<Service>>) -> Reply {
    Reply::ok(serde_json::to_value(service.resource_templates(None).await).unwrap_or(Value::Null))
}

/// The query of GET /resources/read.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadQuery {
    uri: String,
    /// The provider to ask, when several offer the URI (or none lists it).
    provider: Option<String>,
}

/// GET /resources/read?uri=…[&provider=…].
pub async fn read_resource(
    State(service): State<Arc<Service>>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    axum::Extension(client): axum::Extension<Client>,
    trace: Option<axum::Extension<TraceContext>>,
    query: Result<Query<ReadQuery>, QueryRejection>,
) -> Reply {
    let Query(query) = match query {
        Ok(query) => query,
        Err(e) => {
            return Reply::error(
                ErrorCode::InvalidRequest,
                format!(
                    "Invalid query: {} (expected uri=<URI>[&provider=<name>])",
                    e.body_text()
                ),
            );
        }
    };
    let trace = trace.map(|t| t.0).unwrap_or_else(TraceContext::detached);
    match service
        .read_resource(
            &query.uri,
            query.provider.as_deref(),
            CatalogRequest {
                request_id: request_id.as_str(),
                trace: &trace,
                caller: None,
                client: &client,
            },
        )
        .await
    {
        Ok(data) => Reply::ok(serde_json::to_value(data).unwrap_or(Value::Null)),
        Err(failure) => Reply::from(failure),
    }
}

/// GET /prompts: every provider's prompts.
pub async fn list_prompts(State(service): State<Arc<Service>>) -> Reply {
    Reply::ok(serde_json::to_value(service.prompts(None).await).unwrap_or(Value::Null))
}

/// POST /prompts/{name}: the body is the arguments object (empty means `{}`).
pub async fn get_prompt(
    State(service): State<Arc<Service>>,
    axum::Extension(request_id): axum::Extension<RequestId>,
    axum::Extension(client): axum::Extension<Client>,
    trace: Option<axum::Extension<TraceContext>>,
    Path(name): Path<String>,
    ArgumentsBody(arguments): ArgumentsBody,
) -> Reply {
    let trace = trace.map(|t| t.0).unwrap_or_else(TraceContext::detached);
    match service
        .get_prompt(
            &name,
            arguments,
            CatalogRequest {
                request_id: request_id.as_str(),
                trace: &trace,
                caller: None,
                client: &client,
            },
        )
        .await
    {
        Ok(data) => Reply::ok(serde_json::to_value(data).unwrap_or(Value::Null)),
        Err(failure) => Reply::from(failure),
    }
}

pub async fn health(
    State(service): State<Arc<Service>>,
    client: Option<axum::Extension<Client>>,
) -> Reply {
    let settings = service.settings();
    let sight = ToolSight::of(&settings, client.as_deref());
    let report = sight.health(service.health());
    if report.status == HealthStatus::Unavailable {
        let message = if report.state == "UNAVAILABLE" {
            "Service is unavailable: no tool can run (see meta.health)".to_owned()
        } else {
            format!(
                "Service is {}",
                report.state.to_lowercase().replace('_', " ")
            )
        };
        Reply::error(ErrorCode::ServiceUnavailable, message)
            .with_meta(Meta {
                health: Some(report),
                ..Meta::default()
            })
            .retry_after(1)
    } else {
        Reply::ok(serde_json::to_value(report).unwrap_or(Value::Null))
    }
}

/// GET /metrics: the service's series in the Prometheus text format, or the 404 of an unknown
/// route while `monitoring.metrics_enabled` is off.
pub async fn metrics(
    State(service): State<Arc<Service>>,
    client: Option<axum::Extension<Client>>,
    method: Method,
    uri: Uri,
) -> Response {
    let settings = service.settings();
    if !settings.config.monitoring.metrics_enabled {
        return not_found(method, uri).await.into_response();
    }
    // The series name every tool: a key or token limited to some cannot read them. A caller
    // without credentials reaches them only where the operator made /metrics public.
    if let Some(client) = client.as_deref()
        && client.identity().is_some()
        && !ToolSight::of(&settings, Some(client)).sees_all()
    {
        return Reply::error(
            ErrorCode::Forbidden,
            format!(
                "The metrics name every tool; '{}' may use only some of them (its tools or deny_tools, or its token's scopes): read them with a key that may use every tool",
                client.as_str()
            ),
        )
        .into_response();
    }
    let text = service.metrics_text();
    (
        [(header::CONTENT_TYPE, service::metrics::CONTENT_TYPE)],
        text,
    )
        .into_response()
}

/// The per-service document, with only the tools of the client's API key scope.
pub async fn openapi(
    State(service): State<Arc<Service>>,
    axum::Extension(client): axum::Extension<Client>,
) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        service.openapi(&client),
    )
        .into_response()
}

pub async fn not_found(method: Method, uri: Uri) -> Reply {
    Reply::error(
        ErrorCode::NotFound,
        format!("No route for {method} {}", uri.path()),
    )
}

pub async fn method_not_allowed(method: Method, uri: Uri) -> Reply {
    Reply::error(
        ErrorCode::MethodNotAllowed,
        format!("Method {method} is not allowed on {}", uri.path()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefer(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append("prefer", v.parse().unwrap());
        }
        headers
    }

    /// RFC 7240: preferences are comma-separated tokens with optional values and parameters,
    /// matched without regard to case, in any of several `Prefer` fields.
    #[test]
    fn respond_async_is_found_among_preferences() {
        assert!(respond_async(&prefer(&["respond-async"])));
        assert!(respond_async(&prefer(&["wait=10, Respond-Async"])));
        assert!(respond_async(&prefer(&[
            "return=minimal",
            "respond-async; x=1"
        ])));
        assert!(!respond_async(&prefer(&["return=representation"])));
        assert!(!respond_async(&prefer(&["respond-asynchronously"])));
        assert!(!respond_async(&HeaderMap::new()));
    }
}
