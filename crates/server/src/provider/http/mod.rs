//! The `http` provider: tools mapped onto an existing HTTP API — declared in YAML (method,
//! path with `{arg}` placeholders, query/header/body templates, a JSON pointer selecting the
//! result) or imported from the API's OpenAPI document — plus, optionally, a tool reporting
//! the token usage counted from the API's answers.

mod openapi_import;
mod usage;

use crate::sync::Unpoisoned;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use contract::{DependencyStatus, ToolSchema};
use futures::FutureExt;
use futures::future::BoxFuture;
use minijinja::Environment;
use serde_json::{Value, json};

use self::usage::UsageCounter;
use super::{CallContext, JsonObject, Provider, ProviderError, ToolError, ToolOutput};
use crate::config::{HttpProviderConfig, HttpTool as DeclaredTool};
use crate::dependency::credentials::{self, AccessToken, CredentialError};
use crate::dependency::http::{EndpointCall, HttpDependency, without_url};
use crate::dependency::outlier::Ended;
use crate::telemetry::SpanKind;
use crate::telemetry::traceparent::{TRACEPARENT, TRACESTATE};
use reqwest::header::{AUTHORIZATION, WWW_AUTHENTICATE};

/// How a tool becomes a request. Every string is a minijinja template over the arguments.
#[derive(Debug, Clone)]
pub struct Mapping {
    pub method: reqwest::Method,
    /// With `{arg}` placeholders, filled with the percent-encoded argument.
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub headers: BTreeMap<String, String>,
    /// A template rendering JSON; `None` sends the arguments as the body for POST/PUT/PATCH.
    pub body: Option<String>,
    /// JSON pointer into the answer.
    pub result: String,
}

struct HttpTool {
    schema: ToolSchema,
    mapping: Mapping,
}

pub struct HttpProvider {
    name: String,
    api: Arc<HttpDependency>,
    config: HttpProviderConfig,
    tools: RwLock<Vec<Arc<HttpTool>>>,
    templates: RwLock<Arc<Environment<'static>>>,
    usage: Option<(String, UsageCounter)>,
}

/// Why a declared or imported tool cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HttpToolError {
    #[error("tool '{tool}': method '{method}' is not an HTTP method")]
    BadMethod { tool: String, method: String },
    #[error("tool '{tool}': template {id}: {source}")]
    Template {
        tool: String,
        id: String,
        source: minijinja::Error,
    },
}

impl HttpProvider {
    pub fn new(
        config: &HttpProviderConfig,
        api: Arc<HttpDependency>,
    ) -> Result<Self, ProviderError> {
        let name = config.common.name.as_str().to_owned();
        let provider = HttpProvider {
            name: name.clone(),
            api,
            config: config.clone(),
            tools: RwLock::new(Vec::new()),
            templates: RwLock::new(Arc::new(Environment::new())),
            usage: config
                .usage_tool
                .clone()
                .map(|tool| (tool, UsageCounter::default())),
        };
        let declared = config
            .tools
            .iter()
            .map(declared_tool)
            .collect::<Result<Vec<_>, HttpToolError>>()
            .map_err(|e| ProviderError::Config {
                provider: name.clone(),
                message: e.to_string(),
            })?;
        provider
            .install(declared)
            .map_err(|e| ProviderError::Config {
                provider: name,
                message: e.to_string(),
            })?;
        Ok(provider)
    }

    /// Compiles every template of `tools` and makes them the provider's tools.
    fn install(&self, tools: Vec<HttpTool>) -> Result<(), HttpToolError> {
        let mut env = Environment::new();
        for tool in &tools {
            let m = &tool.mapping;
            let sources = m
                .query
                .iter()
                .map(|(k, v)| (format!("{}#query.{k}", tool.schema.name), v))
                .chain(
                    m.headers
                        .iter()
                        .map(|(k, v)| (format!("{}#header.{k}", tool.schema.name), v)),
                )
                .chain(
                    m.body
                        .iter()
                        .map(|b| (format!("{}#body", tool.schema.name), b)),
                );
            for (id, source) in sources {
                env.add_template_owned(id.clone(), source.clone())
                    .map_err(|source| HttpToolError::Template {
                        tool: tool.schema.name.clone(),
                        id: id.clone(),
                        source,
                    })?;
            }
        }
        *self.templates.write_unpoisoned() = Arc::new(env);
        *self.tools.write_unpoisoned() = tools.into_iter().map(Arc::new).collect();
        Ok(())
    }

    fn unavailable(&self, why: &str) -> ToolError {
        let message = format!("Dependency connection failed: {}: {why}", self.api.name);
        ToolError::Unavailable(super::with_hint(
            &message,
            self.config.common.setup_hint.as_deref(),
        ))
    }

    /// The request a call makes, before its credentials: only the tool's arguments are
    /// rendered into it (the templates see nothing else, so no caller token can be copied in).
    fn request(
        &self,
        tool: &HttpTool,
        args: &JsonObject,
        cx: &CallContext,
        url: String,
        trace: &crate::telemetry::TraceContext,
    ) -> Result<reqwest::Request, ToolError> {
        let env = self.templates.read_unpoisoned().clone();
        let name = &tool.schema.name;
        let render = |id: String| -> Result<String, ToolError> {
            let template = env
                .get_template(&id)
                .map_err(|e| ToolError::Execution(format!("{id}: {e}")))?;
            template
                .render(minijinja::value::Serde(args))
                .map_err(|e| ToolError::Execution(format!("tool '{name}': template {id}: {e}")))
        };
        let m = &tool.mapping;
        let mut request = self
            .api
            .client
            .request(m.method.clone(), url)
            .timeout(cx.timeout)
            .header(TRACEPARENT, trace.traceparent());
        if let Some(state) = trace.tracestate() {
            request = request.header(TRACESTATE, state);
        }
        let mut query = Vec::new();
        for key in m.query.keys() {
            let value = render(format!("{name}#query.{key}"))?;
            // An empty rendering (an optional argument not given) leaves the parameter out.
            if !value.is_empty() {
                query.push((key.clone(), value));
            }
        }
        request = request.query(&query);
        for key in m.headers.keys() {
            let value = render(format!("{name}#header.{key}"))?;
            if !value.is_empty() {
                request = request.header(key, value);
            }
        }
        if m.body.is_some() {
            let text = render(format!("{name}#body"))?;
            let body: Value = serde_json::from_str(&text).map_err(|e| {
                ToolError::Execution(format!(
                    "tool '{name}': the body template did not make JSON ({e}): {text}"
                ))
            })?;
            request = request.json(&body);
        } else if matches!(
            m.method,
            reqwest::Method::POST | reqwest::Method::PUT | reqwest::Method::PATCH
        ) {
            request = request.json(args);
        }
        request
            .build()
            .map_err(|e| ToolError::Execution(format!("tool '{name}': {}", without_url(&e))))
    }

    /// Runs the call on the endpoint of the API it picks, and tells the endpoint's rotation
    /// how the call went.
    async fn run(
        &self,
        tool: &HttpTool,
        args: &JsonObject,
        cx: &CallContext,
    ) -> Result<Value, ToolError> {
        let endpoint = self.api.pick();
        let mut ended = Ended::Neutral;
        let result = self.run_at(&endpoint, tool, args, cx, &mut ended).await;
        self.api
            .ended(&endpoint, ended, &self.config.common.resilience.outlier);
        result
    }

    /// The call on `endpoint`; `ended` is what it says of the endpoint: a failure when it
    /// could not be reached, timed out or answered 5xx, a success with the time to its answer
    /// otherwise; neutral when it never got that far (credentials, templates).
    async fn run_at(
        &self,
        endpoint: &EndpointCall<'_>,
        tool: &HttpTool,
        args: &JsonObject,
        cx: &CallContext,
        ended: &mut Ended,
    ) -> Result<Value, ToolError> {
        let name = &tool.schema.name;
        let m = &tool.mapping;
        let url = endpoint.url(&fill_path(&m.path, args));
        // The upstream call is a client span of ours; the API sees it as its parent
        // (`traceparent`) and the caller's `tracestate` unchanged.
        let mut span = cx.trace.child(m.method.to_string(), SpanKind::Client);
        if span.is_recording() {
            span.set("http.request.method", m.method.to_string());
            if let Ok(parsed) = reqwest::Url::parse(&url) {
                if let Some(host) = parsed.host_str() {
                    span.set("server.address", host.to_owned());
                }
                if let Some(port) = parsed.port_or_known_default() {
                    span.set("server.port", i64::from(port));
                }
                span.set("url.template", m.path.clone());
            }
        }
        let trace = span.context();
        let request = self.request(tool, args, cx, url, trace)?;
        let started = Instant::now();
        let response = self.send(request, cx).await.map_err(|e| {
            let e = match e {
                Sent::Http(e) => e,
                Sent::Credentials(e) => {
                    span.fail("credentials", e.to_string());
                    return credential_error(e, self.config.common.setup_hint.as_deref());
                }
            };
            *ended = Ended::Failure(started.elapsed());
            span.fail(
                if e.is_timeout() {
                    "timeout"
                } else {
                    "connection"
                },
                without_url(&e),
            );
            if e.is_timeout() {
                ToolError::Timeout {
                    tool: name.clone(),
                    ms: cx.timeout.as_millis() as u64,
                }
            } else {
                self.unavailable(&without_url(&e))
            }
        })?;
        let status = response.status();
        *ended = if status.is_server_error() {
            Ended::Failure(started.elapsed())
        } else {
            Ended::Success(started.elapsed())
        };
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        span.set("http.response.status_code", i64::from(status.as_u16()));
        // A client span fails on any 4xx or 5xx (the semantic conventions' rule for clients).
        if status.as_u16() >= 400 {
            span.fail(
                status.as_u16().to_string(),
                format!("upstream answered {status}"),
            );
        }
        let text = response.text().await.map_err(|e| {
            *ended = Ended::Failure(started.elapsed());
            if e.is_timeout() {
                ToolError::Timeout {
                    tool: name.clone(),
                    ms: cx.timeout.as_millis() as u64,
                }
            } else {
                ToolError::Execution(format!(
                    "tool '{name}': reading the answer: {}",
                    without_url(&e)
                ))
            }
        })?;
        if status == reqwest::StatusCode::UNAUTHORIZED {
            // Which credentials were refused and the upstream's challenge: the caller can act
            // on that, not on a bare 401.
            return Err(ToolError::Execution(
                credentials::refusal(&self.api.name, 401, challenge.as_deref()).to_string(),
            ));
        }
        if status.is_server_error() {
            return Err(ToolError::Upstream {
                message: format!(
                    "Upstream answered {status} to tool '{name}': {}",
                    excerpt(&text)
                ),
                transient: matches!(status.as_u16(), 502..=504),
            });
        }
        if status.as_u16() >= 400 {
            return Err(ToolError::Execution(format!(
                "Upstream answered {status} to tool '{name}': {}",
                excerpt(&text)
            )));
        }
        let answer: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if let Some((_, counter)) = &self.usage {
            counter.count(&answer);
        }
        match answer.pointer(&m.result) {
            Some(selected) => Ok(selected.clone()),
            None => Err(ToolError::Execution(format!(
                "tool '{name}': the answer has nothing at {}: {}",
                m.result,
                excerpt(&answer.to_string())
            ))),
        }
    }
}

impl HttpProvider {
    /// Sends `request` with the token `auth` gets for this call (none without `auth`: the
    /// static key is among the client's default headers). The gateway's own token, refused
    /// with a 401, is forgotten and the request sent once more with a fresh one.
    async fn send(
        &self,
        request: reqwest::Request,
        cx: &CallContext,
    ) -> Result<reqwest::Response, Sent> {
        let Some(credentials) = &self.api.credentials else {
            return self.api.client.execute(request).await.map_err(Sent::Http);
        };
        let subject = cx.subject_token.as_ref();
        let mut pending = request;
        let mut retried = false;
        loop {
            let token = credentials
                .bearer(subject)
                .await
                .map_err(Sent::Credentials)?;
            // Bodies are buffered, so a copy can be sent again after a refusal.
            let spare = if retried { None } else { pending.try_clone() };
            let response = self
                .api
                .client
                .execute(authorized(pending, &token))
                .await
                .map_err(Sent::Http)?;
            if response.status() != reqwest::StatusCode::UNAUTHORIZED {
                return Ok(response);
            }
            let retry = credentials.refused(&token, subject);
            match spare {
                Some(spare) if retry => {
                    tracing::info!(upstream = %self.api.name, "the upstream refused the gateway's token; sending once more with a fresh one");
                    pending = spare;
                    retried = true;
                }
                _ => return Ok(response),
            }
        }
    }
}

/// `request` with `token` as its only `Authorization`: a tool's header template cannot add
/// another.
fn authorized(mut request: reqwest::Request, token: &AccessToken) -> reqwest::Request {
    if let Some(value) = token.header() {
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    request
}

/// Why a request was not answered.
enum Sent {
    Http(reqwest::Error),
    Credentials(CredentialError),
}

/// A credentials failure in the contract's terms: a caller without the token an exchange
/// needs lacks something of its own; an issuer that gives no token is the dependency down.
fn credential_error(error: CredentialError, hint: Option<&str>) -> ToolError {
    match error {
        CredentialError::NoSubject { .. } => ToolError::CapabilityRequired(error.to_string()),
        CredentialError::Token { .. } => {
            ToolError::Unavailable(super::with_hint(&error.to_string(), hint))
        }
        other => ToolError::Execution(other.to_string()),
    }
}

/// The first 300 characters, for error messages.
fn excerpt(text: &str) -> String {
    let cut: String = text.chars().take(300).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// `{arg}` → the argument, percent-encoded as one path segment.
fn fill_path(path: &str, args: &JsonObject) -> String {
    let mut out = path.to_owned();
    for (name, value) in args {
        let placeholder = format!("{{{name}}}");
        if out.contains(&placeholder) {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out = out.replace(&placeholder, &percent_encode(&text));
        }
    }
    out
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn declared_tool(declared: &DeclaredTool) -> Result<HttpTool, HttpToolError> {
    let name = declared.name.clone();
    let method = declared
        .method
        .as_deref()
        .unwrap_or("GET")
        .to_ascii_uppercase();
    let method =
        reqwest::Method::from_bytes(method.as_bytes()).map_err(|_| HttpToolError::BadMethod {
            tool: name.clone(),
            method: method.clone(),
        })?;
    let query = declared.query.clone();
    Ok(HttpTool {
        schema: ToolSchema {
            qualified_name: None,
            title: None,
            output_schema: declared.output_schema.clone(),
            untyped_result: contract::UntypedResult::AnyJson,
            name: name.clone(),
            description: declared.description.clone(),
            input_schema: declared.input_schema.clone(),
            annotations: Some(
                json!({"readOnlyHint": method == reqwest::Method::GET, "openWorldHint": true}),
            ),
            icons: None,
            score: None,
        },
        mapping: Mapping {
            method,
            path: declared.path.clone(),
            query,
            headers: declared.headers.clone(),
            body: declared.body.clone(),
            result: declared.result.clone().unwrap_or_default(),
        },
    })
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        &self.name
    }

    /// Imports the upstream's OpenAPI document, when configured.
    fn start(&self) -> BoxFuture<'_, ()> {
        async move {
            let Some(source) = &self.config.openapi else { return };
            match openapi_import::import(source, &self.config, &self.api).await {
                Ok(imported) => {
                    let mut tools: Vec<HttpTool> = self.config.tools.iter().filter_map(|d| declared_tool(d).ok()).collect();
                    let count = imported.len();
                    tools.extend(imported.into_iter().map(|(schema, mapping)| HttpTool { schema, mapping }));
                    match self.install(tools) {
                        Ok(()) => tracing::info!(provider = %self.name, tools = count, "imported tools from {source}"),
                        Err(e) => tracing::error!(provider = %self.name, "imported tools refused: {e}"),
                    }
                }
                Err(e) => tracing::error!(provider = %self.name, "cannot import the OpenAPI document {source}: {e}"),
            }
        }
        .boxed()
    }

    fn tools(&self) -> Vec<ToolSchema> {
        let mut tools: Vec<ToolSchema> = self
            .tools
            .read_unpoisoned()
            .iter()
            .map(|t| t.schema.clone())
            .collect();
        if let Some((name, _)) = &self.usage {
            tools.push(usage::tool_schema(name));
        }
        tools
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: JsonObject,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move {
            if let Some((name, counter)) = &self.usage
                && name == tool
            {
                return Ok(counter.report());
            }
            let found = self
                .tools
                .read_unpoisoned()
                .iter()
                .find(|t| t.schema.name == tool)
                .cloned();
            let Some(found) = found else {
                return Err(ToolError::NotFound(tool.to_owned()));
            };
            self.run(&found, &args, cx).await
        }
        .map(|r| r.map(ToolOutput::Data))
        .boxed()
    }

    fn report(&self) -> super::ProviderReport {
        super::ProviderReport {
            endpoints: self.api.endpoints_report(),
            ..Default::default()
        }
    }

    fn health(&self) -> BoxFuture<'_, Vec<(String, DependencyStatus)>> {
        async move {
            let status = self.api.check().await;
            vec![(
                self.api.name.clone(),
                super::with_setup_hint(status, self.config.common.setup_hint.as_deref()),
            )]
        }
        .boxed()
    }

    fn dependency_name(&self) -> &str {
        &self.api.name
    }

    fn needs_dependency(&self, tool: &str) -> bool {
        // The usage tool answers from the gateway's own counter.
        self.usage.as_ref().is_none_or(|(name, _)| name != tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_placeholders_are_encoded_segments() {
        let args = json!({"id": "a b/c", "n": 3}).as_object().unwrap().clone();
        assert_eq!(fill_path("/items/{id}/{n}", &args), "/items/a%20b%2Fc/3");
    }

    /// The MCP spec's MUST NOT: the caller's token is never passed upstream. Templates see only
    /// the arguments (names a template might try render empty), and the one `Authorization`
    /// sent is the upstream's own token, even when a tool declares the header.
    #[test]
    fn the_callers_token_never_leaves_in_the_outgoing_request() {
        let caller = "caller-secret-token";
        let api: crate::config::HttpApiConfig =
            serde_saphyr::from_str("{ base_url: 'http://127.0.0.1:9', headers: { X-Static: v } }")
                .unwrap();
        let api = Arc::new(
            HttpDependency::new("billing", &api, std::time::Duration::from_secs(5)).unwrap(),
        );
        let config: HttpProviderConfig = serde_saphyr::from_str(
            r#"{ name: p, dependency: billing, tools: [{ name: t, description: d, input_schema: { type: object }, method: POST, path: '/x/{id}',
                 query: { q: '{{ authorization }}{{ subject_token }}{{ token }}' },
                 headers: { Authorization: 'Bearer {{ key }}', X-Fwd: '{{ headers }}{{ request }}{{ caller }}' },
                 body: '{"a": "{{ access_token }}{{ id }}"}' }] }"#,
        )
        .unwrap();
        let provider = HttpProvider::new(&config, api).unwrap();
        let tool = provider.tools.read_unpoisoned()[0].clone();
        let cx = CallContext {
            request_id: "r".into(),
            trace: crate::telemetry::TraceContext::detached(),
            timeout: std::time::Duration::from_secs(1),
            progress: None,
            caller: None,
            subject_token: Some(crate::provider::SubjectToken::new(caller, "alice", None)),
        };
        let args = json!({"id": "1", "key": "argument-key"})
            .as_object()
            .unwrap()
            .clone();
        let url = provider
            .api
            .pick()
            .url(&fill_path(&tool.mapping.path, &args));
        let request = provider.request(&tool, &args, &cx, url, &cx.trace).unwrap();
        let sent = authorized(request, &AccessToken::new("upstream-token"));
        assert!(!sent.url().as_str().contains(caller), "{}", sent.url());
        for (name, value) in sent.headers() {
            assert!(
                !value
                    .as_bytes()
                    .windows(caller.len())
                    .any(|w| w == caller.as_bytes()),
                "{name}"
            );
        }
        let body = sent.body().and_then(|b| b.as_bytes()).unwrap();
        assert_eq!(body, br#"{"a":"1"}"#);
        let authorization: Vec<_> = sent.headers().get_all(AUTHORIZATION).iter().collect();
        assert_eq!(authorization.len(), 1);
        assert_eq!(authorization[0], "Bearer upstream-token");
        assert!(authorization[0].is_sensitive());
    }
}
