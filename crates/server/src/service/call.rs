//! One tool call: look the tool up, validate its arguments against the compiled schema, apply
//! the tool's rate limit, be admitted ([`super::admission`]), run it on its provider within the
//! tool's timeout, and say why when it fails.
//!
//! Each call's way through is logged as `invocation` events at debug level, with the request
//! id: created → validating → routing → executing → completed | failed (the issue's flow; the
//! request's own log line, at info, says how it ended).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use contract::{ErrorCode, ValidationIssue};
use serde_json::Value;

use super::Service;
use super::admission::{QueueBounds, RETRY_AFTER_SECONDS, Refusal};
use super::client::Client;
use super::registry::RegisteredTool;
use crate::config::OutputValidation;
use crate::dependency::credentials::SubjectToken;
use crate::provider::{CallContext, Caller, JsonObject, ProgressSink, ToolError, ToolOutput};
use crate::telemetry::TraceContext;

/// One tool call as a surface hands it to the service.
pub struct CallRequest<'a> {
    /// The served name.
    pub tool: &'a str,
    pub arguments: JsonObject,
    pub request_id: &'a str,
    /// Who calls: its API key's scope decides whether it may call the tool, and its name is
    /// what the tool's rate limit counts.
    pub client: &'a Client,
    pub trace: &'a TraceContext,
    /// Where progress reports go, when the caller asked for them.
    pub progress: Option<ProgressSink>,
    /// The client request the call serves, when it came from a client session (MCP): the
    /// provider asks it what its upstream asks during the call.
    pub caller: Option<Caller>,
}

/// A call's result, for each surface to render once.
#[derive(Debug, Clone)]
pub struct CallResult {
    pub output: ToolOutput,
    /// The tool declares an output schema: its data is its structured content as it is.
    pub typed: bool,
}

impl CallResult {
    /// The call's `data`, as REST answers it.
    pub fn into_data(self) -> Value {
        self.output.into_data(self.typed)
    }
}

/// Why a call failed, ready to be answered.
#[derive(Debug, Clone)]
pub struct CallFailure {
    pub code: ErrorCode,
    pub message: String,
    pub validation_errors: Option<Vec<ValidationIssue>>,
    /// Seconds to wait before trying again (RATE_LIMITED, SERVICE_UNAVAILABLE).
    pub retry_after: Option<u64>,
    /// The tool's own answer when it reported the failure itself (an MCP `isError` result),
    /// which the MCP surface answers as the server sent it.
    pub output: Option<ToolOutput>,
}

impl CallFailure {
    pub(super) fn new(code: ErrorCode, message: String) -> Self {
        CallFailure {
            code,
            message,
            validation_errors: None,
            retry_after: None,
            output: None,
        }
    }

    pub(super) fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }
}

/// Counts a call as active for as long as it lives.
struct ActiveCall<'a>(&'a AtomicU64);

impl<'a> ActiveCall<'a> {
    fn start(count: &'a AtomicU64) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        ActiveCall(count)
    }
}

impl Drop for ActiveCall<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Service {
    /// Validates, admits and runs one tool call within its timeout. The client's API key
    /// scope is judged before the tool is looked up, so a refusal says nothing of which tools
    /// exist.
    pub async fn call_tool(&self, request: CallRequest<'_>) -> Result<CallResult, CallFailure> {
        let (request_id, tool) = (request.request_id, request.tool);
        flow(request_id, tool, "created", None);
        let result = self.run_call(request).await;
        match &result {
            Ok(_) => flow(request_id, tool, "completed", None),
            Err(f) => tracing::debug!(
                target: "invocation", request_id, tool, state = "failed",
                code = f.code.as_str(), "invocation failed: {}", f.message
            ),
        }
        result
    }

    async fn run_call(&self, request: CallRequest<'_>) -> Result<CallResult, CallFailure> {
        let CallRequest {
            tool,
            arguments,
            request_id,
            client,
            trace,
            progress,
            caller,
        } = request;
        let toolset = self.toolset();
        let arguments = Value::Object(arguments);
        let entry = self.checked(&toolset, tool, &arguments, request_id, client)?;
        let subject_token = client
            .token()
            .map(|id| SubjectToken::new(id.token(), &id.subject, id.expires));
        let client = client.as_str();
        let provider = entry.provider.name();
        let Value::Object(arguments) = arguments else {
            unreachable!("built from an object above")
        };
        flow(request_id, tool, "routing", Some(provider));
        let settings = self.settings();
        let plan = toolset.plans.get(tool);
        let timeout = plan.map_or(settings.config.limits.call_timeout, |p| p.limits.timeout);
        if let Some(per_minute) = plan.and_then(|p| p.limits.rate_limit) {
            let decision = self.rate_limiter.take(client, Some(tool), per_minute).await;
            if !decision.allowed {
                self.metrics.rate_limited();
                return Err(CallFailure::new(
                    ErrorCode::RateLimited,
                    format!("Rate limit of {per_minute} calls of tool '{tool}' per minute exceeded; retry after {} s", decision.retry_after),
                )
                .retry_after(decision.retry_after));
            }
        }
        let bounds = QueueBounds {
            depth: settings.config.limits.queue_depth,
            timeout: settings.config.limits.queue_timeout,
        };
        let gates = plan.map(|p| p.gates.clone()).unwrap_or_default();
        let _admitted = self
            .admission
            .admit(&gates, bounds)
            .await
            .map_err(|refusal| {
                self.metrics.admission_rejected(refusal.scope().as_str());
                refused(tool, &refusal)
            })?;
        let cx = CallContext {
            request_id: request_id.to_owned(),
            trace: trace.clone(),
            timeout,
            progress,
            caller,
            // The caller's validated OAuth token, for an upstream's RFC 8693 exchange only.
            subject_token,
        };
        let _active = ActiveCall::start(&self.active_calls);
        flow(request_id, tool, "executing", Some(provider));
        let started = Instant::now();
        // The provider enforces the timeout itself (cancelling upstream); this outer bound
        // only guards against a provider that does not.
        let outcome = tokio::time::timeout(
            timeout + Duration::from_secs(1),
            entry.provider.call(&entry.upstream, arguments, &cx),
        )
        .await;
        let ran = started.elapsed();
        let typed = entry.schema.output_schema.is_some();
        let result = match outcome {
            Ok(Ok(output)) => match output.reported_error(tool) {
                Some(error) => Err(reported(error, output)),
                None => checked_output(tool, entry, &output, typed)
                    .map(|()| CallResult { output, typed }),
            },
            Ok(Err(e)) => Err(CallFailure::new(e.code(), e.to_string())),
            Err(_) => Err(CallFailure::new(
                ErrorCode::Timeout,
                format!(
                    "Tool '{tool}' did not answer within {} ms",
                    timeout.as_millis()
                ),
            )),
        };
        self.after_call(tool, started, &result);
        let failure = result.as_ref().err().map(|f| f.code);
        self.metrics
            .call_finished(tool, provider, Some(ran), failure);
        result
    }

    /// What is judged before a call is admitted: the API key's scope (before the tool is looked
    /// up, so a refusal says nothing of which tools exist), the tool, and its arguments against
    /// the compiled input schema. A task is judged so before it is accepted.
    pub(super) fn checked<'t>(
        &self,
        toolset: &'t super::toolset::ToolSet,
        tool: &str,
        arguments: &Value,
        request_id: &str,
        client: &Client,
    ) -> Result<&'t RegisteredTool, CallFailure> {
        if !client.may_use(tool) {
            let whose = match client.token() {
                Some(_) => format!("the token of '{}'", client.as_str()),
                None => format!("API key '{}'", client.as_str()),
            };
            tracing::warn!(
                client = client.as_str(),
                tool,
                "call refused: tool outside the scope of {whose}"
            );
            return Err(CallFailure::new(
                ErrorCode::Forbidden,
                format!("Tool '{tool}' is outside the scope of {whose}"),
            ));
        }
        let Some(entry) = toolset.registry.get(tool) else {
            let reasons: Vec<String> = toolset
                .providers
                .iter()
                .filter_map(|p| p.report().missing_tools)
                .collect();
            let message = if reasons.is_empty() {
                format!("Tool '{tool}' not found")
            } else {
                format!("Tool '{tool}' not found ({})", reasons.join("; "))
            };
            return Err(CallFailure::new(ErrorCode::ToolNotFound, message));
        };
        let provider = entry.provider.name();
        flow(request_id, tool, "validating", Some(provider));
        if let Some(validator) = &entry.validator
            && let Err(issues) = validator.check(arguments)
        {
            self.metrics
                .call_finished(tool, provider, None, Some(ErrorCode::InvalidArguments));
            return Err(CallFailure {
                code: ErrorCode::InvalidArguments,
                message: format!(
                    "Arguments do not match the input schema of tool '{tool}': {} problem(s), see meta.validation_errors",
                    issues.len()
                ),
                validation_errors: Some(issues),
                retry_after: None,
                output: None,
            });
        }
        Ok(entry)
    }
}

/// One step of a call's way through (debug level, target `invocation`).
fn flow(request_id: &str, tool: &str, state: &'static str, provider: Option<&str>) {
    tracing::debug!(target: "invocation", request_id, tool, provider, state, "invocation {state}");
}

/// A call not admitted: 503 with `Retry-After`, saying where it waited.
fn refused(tool: &str, refusal: &Refusal) -> CallFailure {
    tracing::warn!(
        tool,
        scope = refusal.scope().as_str(),
        "call not admitted: {refusal}"
    );
    CallFailure::new(
        ErrorCode::ServiceUnavailable,
        format!("Tool '{tool}' was not admitted: {refusal}; retry after {RETRY_AFTER_SECONDS} s"),
    )
    .retry_after(RETRY_AFTER_SECONDS)
}

/// The failure a tool reported itself, with its own answer kept for the MCP surface.
fn reported(error: ToolError, output: ToolOutput) -> CallFailure {
    CallFailure {
        output: Some(output),
        ..CallFailure::new(error.code(), error.to_string())
    }
}

/// Whether the output may be answered as the tool's output schema allows it: a violation is
/// EXECUTION_ERROR naming each JSON pointer and rule (strict), or a log line (warn).
fn checked_output(
    tool: &str,
    entry: &RegisteredTool,
    output: &ToolOutput,
    typed: bool,
) -> Result<(), CallFailure> {
    let Some((validator, policy)) = &entry.output else {
        return Ok(());
    };
    let Err(issues) = validator.check(&output.checked_view(typed)) else {
        return Ok(());
    };
    let problems: Vec<String> = issues
        .iter()
        .map(|i| format!("at '{}': {}", i.path, i.message))
        .collect();
    let message = format!(
        "Tool '{tool}' answered a result that does not match its output schema: {}",
        problems.join("; ")
    );
    match policy {
        OutputValidation::Warn => {
            tracing::warn!(
                tool,
                provider = entry.provider.name(),
                "{message}; answered anyway (validate_output: warn)"
            );
            Ok(())
        }
        _ => Err(CallFailure::new(ErrorCode::ExecutionError, message)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    use axum::routing::get;
    use serde_json::json;
    use tokio::sync::Notify;

    use super::*;
    use crate::service::client::ToolScope;

    /// A real HTTP upstream on loopback: `/answer` answers at once, `/held` when `release`
    /// is notified.
    async fn upstream(release: Arc<Notify>) -> u16 {
        let routes = axum::Router::new()
            .route("/health", get(|| async { "ok" }))
            .route(
                "/answer",
                get(|| async { axum::Json(json!({"answer": 42})) }),
            )
            .route(
                "/held",
                get(move || async move {
                    release.notified().await;
                    axum::Json(json!({"held": true}))
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, routes).await });
        port
    }

    /// A started service with one `http` provider in front of [`upstream`]; `provider` is
    /// more of the provider's YAML (4 spaces in).
    async fn service_with(port: u16, provider: &str) -> Arc<Service> {
        let service = super::super::unit_service(&format!(
            "dependencies:
  up: {{ kind: http, base_url: \"http://127.0.0.1:{port}\", health_path: /health }}
providers:
  - name: api
    kind: http
    dependency: up
{provider}    limits:
      tools:
        - {{ tool: stuck, timeout_ms: 200 }}
        - {{ tool: once, rate_limit: 1 }}
    tools:
      - {{ name: answer, description: answers, input_schema: {{ type: object }}, path: /answer }}
      - {{ name: held, description: answers when released, input_schema: {{ type: object }}, path: /held }}
      - {{ name: stuck, description: never answers within its 200 ms, input_schema: {{ type: object }}, path: /held }}
      - {{ name: once, description: answers once a minute, input_schema: {{ type: object }}, path: /answer }}
      - {{ name: misshapen, description: answers what its output schema refuses, input_schema: {{ type: object }}, output_schema: {{ type: object, required: [missing] }}, path: /answer }}
"
        ));
        service.start().await.unwrap();
        service
    }

    async fn service(port: u16) -> Arc<Service> {
        service_with(port, "").await
    }

    async fn call(service: &Service, tool: &str, client: &Client) -> Result<Value, CallFailure> {
        service
            .call_tool(CallRequest {
                tool,
                arguments: JsonObject::new(),
                request_id: "req-1",
                client,
                trace: &TraceContext::detached(),
                progress: None,
                caller: None,
            })
            .await
            .map(CallResult::into_data)
    }

    #[tokio::test]
    async fn a_call_answers_what_the_provider_answered() {
        let service = service(upstream(Arc::new(Notify::new())).await).await;
        let data = call(&service, "answer", &Client::unknown()).await.unwrap();
        assert_eq!(data, json!({"answer": 42}));
    }

    #[tokio::test]
    async fn a_key_scoped_to_other_tools_is_refused_and_one_that_allows_the_tool_is_not() {
        let service = service(upstream(Arc::new(Notify::new())).await).await;
        let key = |tools: &[&str]| {
            let scope = ToolScope::of(&crate::config::ApiKeyConfig {
                name: "k".into(),
                secret: crate::config::KeySecret::Env("K".into()),
                tools: Some(tools.iter().map(|t| t.to_string()).collect()),
                deny_tools: Vec::new(),
            });
            Client::of_key("k", scope.map(Arc::new))
        };
        let refused = call(&service, "answer", &key(&["held"])).await.unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        assert_eq!(
            refused.message,
            "Tool 'answer' is outside the scope of API key 'k'"
        );
        let data = call(&service, "answer", &key(&["ans*"])).await.unwrap();
        assert_eq!(data, json!({"answer": 42}));
    }

    /// `active_calls` (in /health and /metrics) counts a call while it runs, and no longer.
    #[tokio::test]
    async fn a_call_counts_as_active_while_it_runs() {
        let release = Arc::new(Notify::new());
        let service = service(upstream(release.clone()).await).await;
        assert_eq!(service.active_calls.load(Ordering::Acquire), 0);
        let running = tokio::spawn({
            let service = service.clone();
            async move { call(&service, "held", &Client::unknown()).await }
        });
        let active = testkit::until(Duration::from_secs(10), || {
            let n = service.active_calls.load(Ordering::Acquire);
            async move { (n == 1).then_some(()) }
        })
        .await;
        assert!(active.is_some(), "the held call never counted as active");
        release.notify_one();
        assert_eq!(running.await.unwrap().unwrap(), json!({"held": true}));
        assert_eq!(service.active_calls.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_tool_past_its_own_rate_limit_is_refused_with_when_to_retry() {
        let service = service(upstream(Arc::new(Notify::new())).await).await;
        assert_eq!(
            call(&service, "once", &Client::unknown()).await.unwrap(),
            json!({"answer": 42})
        );
        let refused = call(&service, "once", &Client::unknown())
            .await
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::RateLimited, "{}", refused.message);
        assert!(
            refused
                .message
                .starts_with("Rate limit of 1 calls of tool 'once' per minute exceeded"),
            "{}",
            refused.message
        );
        assert!(refused.retry_after.is_some_and(|s| s > 0), "{refused:?}");
        // Another tool is not counted with it.
        assert!(call(&service, "answer", &Client::unknown()).await.is_ok());
    }

    /// The tool's own timeout ends a call whose upstream never answers; the outer bound is a
    /// second beyond it, for a provider that does not enforce it.
    #[tokio::test]
    async fn a_call_past_its_tool_timeout_is_a_timeout() {
        let service = service(upstream(Arc::new(Notify::new())).await).await;
        let failed = call(&service, "stuck", &Client::unknown())
            .await
            .unwrap_err();
        assert_eq!(failed.code, ErrorCode::Timeout, "{}", failed.message);
        assert_eq!(service.active_calls.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn an_answer_outside_the_output_schema_fails_when_strict_and_passes_when_warn() {
        let port = upstream(Arc::new(Notify::new())).await;
        let strict = service(port).await;
        let failed = call(&strict, "misshapen", &Client::unknown())
            .await
            .unwrap_err();
        assert_eq!(failed.code, ErrorCode::ExecutionError);
        assert!(
            failed.message.starts_with(
                "Tool 'misshapen' answered a result that does not match its output schema: at ''"
            ),
            "{}",
            failed.message
        );
        let warn = service_with(port, "    validate_output: warn\n").await;
        assert_eq!(
            call(&warn, "misshapen", &Client::unknown()).await.unwrap(),
            json!({"answer": 42})
        );
    }

    /// Each call's way through is logged at debug level under the `invocation` target, with
    /// its request id (docs/operations.md reads a call's flow from these lines).
    #[tokio::test]
    async fn a_call_logs_its_way_through() {
        let service = service(upstream(Arc::new(Notify::new())).await).await;
        let (_logging, lines) = crate::logging::capture();
        call(&service, "answer", &Client::unknown()).await.unwrap();
        let text = lines.text();
        let states: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("invocation") && l.contains("req-1"))
            .filter_map(|l| l.split("state=").nth(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .map(|state| state.trim_matches('"'))
            .collect();
        assert_eq!(
            states,
            ["created", "validating", "routing", "executing", "completed"],
            "{text}"
        );
    }
}
