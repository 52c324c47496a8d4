//! One tool call: look the tool up, validate its arguments against the compiled schema, apply
//! the tool's rate limit, be admitted ([`super::admission`]), run it on its provider within the
//! tool's timeout, and say why when it fails.
//!
//! Each call's way through is logged as `invocation` events at debug level, with the request
//! id: created → validating → routing → executing → completed | failed (the issue's flow; the
//! request's own log line, at info, says how it ended).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use contract::{ErrorCode, ValidationIssue};
use futures::FutureExt;
use serde_json::Value;

use super::Service;
use super::admission::{QueueBounds, RETRY_AFTER_SECONDS, Refusal};
use super::client::Client;
use super::registry::RegisteredTool;
use super::resilience::cache::{
    CacheStatus, CallKey, Found, Leader, call_key, from_shared_text, to_shared_text,
};
use super::resilience::{Refused, Sharing, verdict};
use super::toolset::CallPlan;
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
    /// What the answer owes to sharing, for a read-only tool's call (`meta.cache`).
    pub cache: Option<CacheStatus>,
}

impl CallResult {
    fn shared(mut self, status: CacheStatus) -> Self {
        self.cache = Some(status);
        self
    }

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
        // In flight for this client until it is answered (queued, running, shared).
        let counted_as = client.counted_as();
        let _in_flight = self.client_load.call(&counted_as);
        let subject_token = client
            .token()
            .map(|id| SubjectToken::new(id.token(), &id.subject, id.expires));
        let provider = entry.provider.name();
        flow(request_id, tool, "routing", Some(provider));
        let settings = self.settings();
        let plan = toolset.plans.get(tool);
        let timeout = plan.map_or(settings.config.limits.call_timeout, |p| p.limits.timeout);
        if let Some(per_minute) = plan.and_then(|p| p.limits.rate_limit) {
            let decision = self
                .rate_limiter
                .take(client.as_str(), Some(tool), per_minute)
                .await;
            if !decision.allowed {
                self.metrics.rate_limited();
                return Err(CallFailure::new(
                    ErrorCode::RateLimited,
                    format!("Rate limit of {per_minute} calls of tool '{tool}' per minute exceeded; retry after {} s", decision.retry_after),
                )
                .retry_after(decision.retry_after));
            }
        }
        let started = Instant::now();
        // A read-only result kept or in flight answers without reaching the upstream.
        let sharing = match plan.and_then(|p| p.policy.share.as_ref().map(|s| (p, s))) {
            Some((plan, share)) => {
                let scope = client.scope().map_or(0, |s| {
                    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
                    BuildHasherDefault::<DefaultHasher>::default().hash_one(s)
                });
                // Per caller: by credential (`key:`/`sub:`, never one for the other), else
                // by peer.
                let caller = share.per_caller.then(|| {
                    client
                        .identity()
                        .unwrap_or_else(|| format!("peer:{}", client.as_str()))
                });
                let key = call_key(tool, &arguments, scope, caller.as_deref());
                match self.shared(plan, share, key, timeout).await {
                    Ok(answer) => {
                        self.call_ended(tool, provider, request_id, started, None, &answer);
                        self.stats.count_caller(tool, &counted_as);
                        return answer;
                    }
                    Err(leader) => Some((leader, share.ttl, key)),
                }
            }
            None => None,
        };
        let Value::Object(arguments) = arguments else {
            unreachable!("built from an object above")
        };
        let cx = CallContext {
            request_id: request_id.to_owned(),
            trace: trace.clone(),
            timeout,
            progress,
            caller,
            // The caller's validated OAuth token, for an upstream's RFC 8693 exchange only.
            subject_token,
        };
        let result = self
            .run_upstream(tool, entry, plan, arguments, cx, &counted_as)
            .await;
        let result = match sharing {
            Some((leader, ttl, key)) => {
                if let (Ok(done), Some(ttl), Some(cluster)) = (&result, ttl, &self.cluster)
                    && !ttl.is_zero()
                    && let Some(text) = to_shared_text(done)
                {
                    cluster.share_result(&hex(&key), text, ttl);
                }
                leader.finish(&result, ttl);
                result.map(|r| r.shared(CacheStatus::Miss))
            }
            None => result,
        };
        let ran = Some(started.elapsed());
        self.call_ended(tool, provider, request_id, started, ran, &result);
        self.stats.count_caller(tool, &counted_as);
        result
    }

    /// A kept result of the call, or the answer of an identical call in flight (within the
    /// call's timeout), or, when there is neither, the lead: this call runs for the others.
    async fn shared(
        &self,
        plan: &CallPlan,
        share: &Sharing,
        key: CallKey,
        timeout: Duration,
    ) -> Result<Result<CallResult, CallFailure>, Leader> {
        let cache = &plan.resilience.cache;
        loop {
            match cache.find(key, share.coalesce) {
                Found::Kept(result) => return Ok(Ok(result.shared(CacheStatus::Hit))),
                Found::InFlight(flight) => {
                    match tokio::time::timeout(timeout, cache.wait(flight)).await {
                        Ok(Some(answer)) => {
                            return Ok(answer.map(|r| r.shared(CacheStatus::Coalesced)));
                        }
                        // The call it waited for went away unfinished: run it (or wait for
                        // the next one that does).
                        Ok(None) => continue,
                        Err(_) => {
                            return Ok(Err(CallFailure::new(
                                ErrorCode::Timeout,
                                format!(
                                    "The identical call this one waited for did not answer within {} ms",
                                    timeout.as_millis()
                                ),
                            )));
                        }
                    }
                }
                Found::Lead(leader) => {
                    // Another replica may have kept it (`cluster`).
                    if share.ttl.is_some_and(|ttl| !ttl.is_zero())
                        && let Some(cluster) = &self.cluster
                        && let Some(result) = cluster
                            .shared_result(&hex(&key))
                            .await
                            .and_then(|text| from_shared_text(&text))
                    {
                        cache.counted_remote_hit();
                        leader.finish(&Ok(result.clone()), share.ttl);
                        return Ok(Ok(result.shared(CacheStatus::Hit)));
                    }
                    return Err(leader);
                }
            }
        }
    }

    /// The call on its provider: the breaker's leave, admission, then its attempts (retried,
    /// hedged) within its timeout, and its answer read.
    async fn run_upstream(
        &self,
        tool: &str,
        entry: &RegisteredTool,
        plan: Option<&CallPlan>,
        arguments: JsonObject,
        cx: CallContext,
        client: &Arc<str>,
    ) -> Result<CallResult, CallFailure> {
        let settings = self.settings();
        let request_id = cx.request_id.as_str();
        let timeout = cx.timeout;
        let provider = entry.provider.name();
        // A tool the gateway answers itself (an http provider's usage tool) never reaches the
        // upstream: the breaker neither refuses nor counts it.
        let contained = plan.filter(|_| entry.provider.needs_dependency(&entry.upstream));
        let pass = match contained.map(|p| p.resilience.breaker.admit()) {
            Some(Err(refused)) => return Err(circuit_open(tool, provider, refused)),
            Some(Ok(pass)) => Some(pass),
            None => None,
        };
        let bounds = QueueBounds {
            depth: settings.config.limits.queue_depth,
            timeout: settings.config.limits.queue_timeout,
        };
        let gates = plan.map(|p| p.gates.clone()).unwrap_or_default();
        let _admitted = self
            .admission
            .admit(&gates, bounds, client)
            .await
            .map_err(|refusal| {
                self.metrics.admission_rejected(refusal.scope().as_str());
                refused(tool, &refusal)
            })?;
        let _active = ActiveCall::start(&self.active_calls);
        flow(request_id, tool, "executing", Some(provider));
        let deadline = Instant::now() + timeout;
        let upstream = entry.upstream.as_str();
        let run = async {
            match (contained, pass) {
                (Some(plan), Some(pass)) if plan.policy.more_than_once() => {
                    let hedge_after = plan.policy.hedge.and_then(|after| {
                        after.or_else(|| {
                            let p95 = self.stats.tool(tool).and_then(|s| s.p95_ms)?;
                            Some(
                                Duration::from_secs_f64(p95 / 1000.0).max(Duration::from_millis(1)),
                            )
                        })
                    });
                    let attempt = |left: Duration| {
                        let mut cx = cx.clone();
                        cx.timeout = left;
                        let arguments = arguments.clone();
                        async move { entry.provider.call(upstream, arguments, &cx).await }.boxed()
                    };
                    plan.resilience
                        .attempts(&plan.policy, deadline, pass, hedge_after, &attempt)
                        .await
                }
                (Some(plan), Some(pass)) => {
                    plan.resilience.budget.called();
                    let outcome = entry.provider.call(upstream, arguments, &cx).await;
                    pass.record(verdict(&outcome).0);
                    outcome
                }
                _ => entry.provider.call(upstream, arguments, &cx).await,
            }
        };
        // The provider enforces the timeout itself (cancelling upstream); this outer bound
        // only guards against a provider that does not.
        let outcome = tokio::time::timeout(timeout + Duration::from_secs(1), run).await;
        let typed = entry.schema.output_schema.is_some();
        match outcome {
            Ok(Ok(output)) => match output.reported_error(tool) {
                Some(error) => Err(reported(error, output)),
                None => checked_output(tool, entry, &output, typed).map(|()| CallResult {
                    output,
                    typed,
                    cache: None,
                }),
            },
            Ok(Err(e)) => Err(CallFailure::new(e.code(), e.to_string())),
            Err(_) => Err(CallFailure::new(
                ErrorCode::Timeout,
                format!(
                    "Tool '{tool}' did not answer within {} ms",
                    timeout.as_millis()
                ),
            )),
        }
    }

    /// The statistics, metrics and cluster counts of a call that ended (`ran`: how long its
    /// provider took, when it reached one).
    fn call_ended(
        &self,
        tool: &str,
        provider: &str,
        request_id: &str,
        started: Instant,
        ran: Option<Duration>,
        result: &Result<CallResult, CallFailure>,
    ) {
        self.after_call(tool, request_id, started, result);
        let failure = result.as_ref().err().map(|f| f.code);
        self.metrics.call_finished(tool, provider, ran, failure);
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

/// A call refused by its provider's open circuit: 503 at once, with when probes begin.
fn circuit_open(tool: &str, provider: &str, refused: Refused) -> CallFailure {
    let seconds = refused.retry_after.as_secs_f64().ceil().max(1.0) as u64;
    CallFailure::new(
        ErrorCode::ServiceUnavailable,
        format!("Tool '{tool}' was not called: the circuit of provider '{provider}' is open after repeated upstream failures; retry after {seconds} s"),
    )
    .retry_after(seconds)
}

/// A call's key as text (the Redis key of a shared result).
fn hex(key: &CallKey) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
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
    use std::sync::atomic::{AtomicU64, Ordering};

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

    /// A real HTTP upstream on loopback that fails on command: `/fail` answers the status in
    /// `status` (200: `{"n": calls}`), `/slow` answers after `release` is notified; every
    /// call is counted in `calls`.
    struct Faulty {
        port: u16,
        status: Arc<std::sync::atomic::AtomicU16>,
        calls: Arc<AtomicU64>,
        release: Arc<Notify>,
    }

    async fn faulty() -> Faulty {
        use std::sync::atomic::AtomicU16;
        let status = Arc::new(AtomicU16::new(200));
        let calls = Arc::new(AtomicU64::new(0));
        let release = Arc::new(Notify::new());
        let (s, c, r) = (status.clone(), calls.clone(), release.clone());
        let c2 = calls.clone();
        let routes = axum::Router::new()
            .route("/health", get(|| async { "ok" }))
            .route(
                "/fail",
                axum::routing::any(move || {
                    let (s, c) = (s.clone(), c.clone());
                    async move {
                        let n = c.fetch_add(1, Ordering::AcqRel) + 1;
                        let status = s.load(Ordering::Acquire);
                        let code = axum::http::StatusCode::from_u16(status).unwrap();
                        (code, axum::Json(json!({"n": n})))
                    }
                }),
            )
            .route(
                "/slow",
                get(move || {
                    let (r, c) = (r.clone(), c2.clone());
                    async move {
                        c.fetch_add(1, Ordering::AcqRel);
                        r.notified().await;
                        axum::Json(json!({"slow": true}))
                    }
                }),
            );
        let (r3, c3) = (release.clone(), calls.clone());
        let routes = routes.route(
            "/first-slow",
            get(move || {
                let (r, c) = (r3.clone(), c3.clone());
                async move {
                    if c.fetch_add(1, Ordering::AcqRel) == 0 {
                        r.notified().await;
                    }
                    axum::Json(json!({"first": false}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, routes).await });
        Faulty {
            port,
            status,
            calls,
            release,
        }
    }

    /// A service in front of [`faulty`] whose provider has `resilience` as given (YAML flow).
    /// Its GET tools are read-only (the http provider annotates them so); `write` is a POST.
    async fn resilient(port: u16, resilience: &str) -> Arc<Service> {
        let service = super::super::unit_service(&format!(
            "dependencies:
  up: {{ kind: http, base_url: \"http://127.0.0.1:{port}\", health_path: /health }}
providers:
  - name: api
    kind: http
    dependency: up
    resilience: {resilience}
    tools:
      - {{ name: read, description: reads, input_schema: {{ type: object }}, path: /fail }}
      - {{ name: write, description: writes, input_schema: {{ type: object }}, path: /fail, method: POST }}
      - {{ name: slow, description: reads slowly, input_schema: {{ type: object }}, path: /slow }}
      - {{ name: hedged, description: slow the first time, input_schema: {{ type: object }}, path: /first-slow }}
"
        ));
        service.start().await.unwrap();
        service
    }

    /// The breaker: a provider whose upstream keeps answering 503 is refused at once once the
    /// failure rate is reached, with when to retry and the provider named; /health shows the
    /// circuit open and its tools unavailable; a success after the interval closes it.
    #[tokio::test]
    async fn an_open_circuit_refuses_calls_at_once_and_probes_close_it() {
        let up = faulty().await;
        let service = resilient(
            up.port,
            "{ retry: { enabled: false }, breaker: { min_calls: 4, open_ms: 300, probes: 1 } }",
        )
        .await;
        up.status.store(503, Ordering::Release);
        for _ in 0..4 {
            let failed = call(&service, "write", &Client::unknown())
                .await
                .unwrap_err();
            assert_eq!(failed.code, ErrorCode::ExecutionError, "{}", failed.message);
        }
        let refused = call(&service, "write", &Client::unknown())
            .await
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::ServiceUnavailable);
        assert!(
            refused
                .message
                .contains("circuit of provider 'api' is open"),
            "{}",
            refused.message
        );
        assert_eq!(refused.retry_after, Some(1));
        assert_eq!(
            up.calls.load(Ordering::Acquire),
            4,
            "a refused call reached the upstream"
        );
        let health = service.health();
        let report = health.providers["api"].resilience.clone().unwrap();
        assert_eq!(report.circuit, contract::CircuitState::Open);
        assert_eq!(report.circuit_opened, 1);
        assert_eq!(
            health.tools["write"].status,
            contract::ToolStatus::Unavailable
        );
        assert!(
            service
                .metrics_text()
                .contains("circuit_state{provider=\"api\",service=\"unit\",state=\"open\"} 1")
        );
        up.status.store(200, Ordering::Release);
        let closed = testkit::until(Duration::from_secs(10), || {
            let service = service.clone();
            async move { call(&service, "write", &Client::unknown()).await.ok() }
        })
        .await;
        assert!(closed.is_some(), "the probe never went through");
        let report = service.health().providers["api"]
            .resilience
            .clone()
            .unwrap();
        assert_eq!(report.circuit, contract::CircuitState::Closed);
    }

    /// Retries: a read-only tool's 503s are retried until it answers; a write's are not, and
    /// a 500 (not transient) is not retried either.
    #[tokio::test]
    async fn read_only_tools_are_retried_after_a_transient_failure_and_writes_are_not() {
        let up = faulty().await;
        let service = resilient(
            up.port,
            "{ read_only: [read], breaker: { enabled: false }, retry: { attempts: 3, backoff_ms: 1, max_backoff_ms: 2, min_per_second: 100 } }",
        )
        .await;
        up.status.store(503, Ordering::Release);
        let failed = call(&service, "read", &Client::unknown())
            .await
            .unwrap_err();
        assert_eq!(failed.code, ErrorCode::ExecutionError);
        assert_eq!(up.calls.load(Ordering::Acquire), 3, "3 attempts in all");
        call(&service, "write", &Client::unknown())
            .await
            .unwrap_err();
        assert_eq!(up.calls.load(Ordering::Acquire), 4, "a write is sent once");
        up.status.store(500, Ordering::Release);
        call(&service, "read", &Client::unknown())
            .await
            .unwrap_err();
        assert_eq!(up.calls.load(Ordering::Acquire), 5, "a 500 is not retried");
        let report = service.health().providers["api"]
            .resilience
            .clone()
            .unwrap();
        assert_eq!(report.retries, 2);
    }

    /// The budget: with none left, a failure is answered as it is.
    #[tokio::test]
    async fn retries_stop_when_the_budget_is_spent() {
        let up = faulty().await;
        let service = resilient(
            up.port,
            "{ read_only: [read], breaker: { enabled: false }, retry: { attempts: 3, backoff_ms: 1, max_backoff_ms: 2, budget_percent: 10, min_per_second: 0 } }",
        )
        .await;
        up.status.store(502, Ordering::Release);
        for _ in 0..20 {
            call(&service, "read", &Client::unknown())
                .await
                .unwrap_err();
        }
        let sent = up.calls.load(Ordering::Acquire);
        // 20 calls, 10 % of them retried at most: 2 retries.
        assert_eq!(sent, 22, "{sent} upstream calls for 20 callers");
        let report = service.health().providers["api"]
            .resilience
            .clone()
            .unwrap();
        assert_eq!(report.retries, 2);
        assert!(report.retry_budget_exhausted >= 18);
    }

    /// Coalescing: identical read-only calls in flight at once reach the upstream once, and
    /// each caller gets the answer; `meta.cache` says which ran and which shared.
    #[tokio::test]
    async fn identical_read_only_calls_in_flight_share_one_upstream_call() {
        let up = faulty().await;
        let service = resilient(up.port, "{ read_only: [slow], cache: { coalesce: true } }").await;
        let calls: Vec<_> = (0..20)
            .map(|_| {
                let service = service.clone();
                tokio::spawn(async move {
                    service
                        .call_tool(CallRequest {
                            tool: "slow",
                            arguments: JsonObject::new(),
                            request_id: "r",
                            client: &Client::unknown(),
                            trace: &TraceContext::detached(),
                            progress: None,
                            caller: None,
                        })
                        .await
                })
            })
            .collect();
        let reached = testkit::until(Duration::from_secs(10), || {
            let n = up.calls.load(Ordering::Acquire);
            let waiting = service
                .resilience
                .get("api")
                .map_or(0, |r| r.cache.waiting());
            async move { (n == 1 && waiting == 19).then_some(()) }
        })
        .await;
        assert!(
            reached.is_some(),
            "the calls did not all wait on one upstream call"
        );
        up.release.notify_waiters();
        let mut statuses = Vec::new();
        for c in calls {
            let result = c.await.unwrap().unwrap();
            statuses.push(result.cache.unwrap());
        }
        assert_eq!(up.calls.load(Ordering::Acquire), 1);
        assert_eq!(
            statuses.iter().filter(|s| **s == CacheStatus::Miss).count(),
            1
        );
        assert_eq!(
            statuses
                .iter()
                .filter(|s| **s == CacheStatus::Coalesced)
                .count(),
            19
        );
    }

    /// The cache: a rule keeps a read-only tool's success for its ttl; a tool not read-only
    /// is never kept, whatever the rule.
    #[tokio::test]
    async fn a_cache_rule_keeps_read_only_results_and_never_a_write_s() {
        let up = faulty().await;
        let service = resilient(
            up.port,
            "{ read_only: [read], cache: { tools: [ { tool: '*', ttl_ms: 60000 } ] } }",
        )
        .await;
        let first = call(&service, "read", &Client::unknown()).await.unwrap();
        let again = call(&service, "read", &Client::unknown()).await.unwrap();
        assert_eq!(first, again);
        assert_eq!(up.calls.load(Ordering::Acquire), 1);
        call(&service, "write", &Client::unknown()).await.unwrap();
        call(&service, "write", &Client::unknown()).await.unwrap();
        assert_eq!(up.calls.load(Ordering::Acquire), 3);
        let report = service.health().providers["api"]
            .resilience
            .clone()
            .unwrap();
        assert_eq!(
            (report.cache_hits, report.cache_misses, report.cache_entries),
            (1, 1, 1)
        );
    }

    /// Hedging: a read-only call still unanswered after `after_ms` is sent again; the second
    /// answer wins and the first is cancelled. Off by default: the same call then waits.
    #[tokio::test]
    async fn a_slow_read_only_call_is_hedged_when_asked_and_waits_when_not() {
        let up = faulty().await;
        let service = resilient(up.port, "{ hedge: { enabled: true, after_ms: 30 } }").await;
        let answer = call(&service, "hedged", &Client::unknown()).await.unwrap();
        assert_eq!(answer, json!({"first": false}));
        assert_eq!(up.calls.load(Ordering::Acquire), 2);
        let report = service.health().providers["api"]
            .resilience
            .clone()
            .unwrap();
        assert_eq!(report.hedges, 1);

        let up = faulty().await;
        let service = resilient(up.port, "{}").await;
        let waiting = tokio::spawn({
            let service = service.clone();
            async move { call(&service, "hedged", &Client::unknown()).await }
        });
        let sent = testkit::until(Duration::from_secs(10), || {
            let n = up.calls.load(Ordering::Acquire);
            async move { (n == 1).then_some(()) }
        })
        .await;
        assert!(sent.is_some());
        assert!(
            !waiting.is_finished(),
            "an unhedged call answered without its upstream"
        );
        up.release.notify_waiters();
        assert_eq!(waiting.await.unwrap().unwrap(), json!({"first": false}));
        assert_eq!(up.calls.load(Ordering::Acquire), 1);
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
