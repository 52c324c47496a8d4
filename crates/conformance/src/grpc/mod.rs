//! `conformance --grpc ADDR`: checks a provider of the gRPC Provider contract
//! (`proto/mcpgateway/provider/v1/provider.proto`) — any language — as the gateway will use it:
//! health served, capabilities well-formed, invalid arguments refused, unknown names not found,
//! deadlines honoured, resources readable, prompts rendered, events well-formed.
//!
//! A check that could not be made (no resource listed, no slow tool named, no event seen) is
//! reported "not run" with the reason, and never counts as passed.

mod capabilities;
mod verdicts;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use provider_proto::health::pb::health_check_response::ServingStatus;
use provider_proto::health::pb::{HealthCheckRequest, health_client::HealthClient};
use provider_proto::v1::provider_client::ProviderClient;
use provider_proto::v1::{
    GetPromptRequest, InvokeToolRequest, ListCapabilitiesRequest, ListCapabilitiesResponse,
    ReadResourceRequest, StreamEventsRequest,
};
use serde_json::{Value, json};
use tokio::time::Instant;
use tonic::transport::Channel;
use tonic::{Code, Request};

use crate::report::{Failure, Report};
use crate::schema_gen;

/// The checks of a gRPC provider, in the order the report lists them.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "health",
        "grpc.health.v1 Check answers SERVING for \"\" and mcpgateway.provider.v1.Provider",
    ),
    (
        "capabilities",
        "ListCapabilities: names unique, input schemas present, every schema compiles (2020-12), resource URIs with a scheme, RFC 6570 templates",
    ),
    (
        "invalid-arguments",
        "arguments that are not JSON or break a tool's input schema are refused with INVALID_ARGUMENT",
    ),
    (
        "not-found",
        "an unknown tool, resource or prompt is refused with NOT_FOUND",
    ),
    (
        "deadline",
        "a call past its deadline is answered by deadline + margin, with DEADLINE_EXCEEDED or OK",
    ),
    (
        "resources",
        "ReadResource of every listed resource answers contents with a body",
    ),
    (
        "prompts",
        "GetPrompt of every prompt with arguments valid for its args schema answers user/assistant messages",
    ),
    (
        "events",
        "StreamEvents yields CloudEvents 1.0 in structured JSON mode",
    ),
];

/// What to check and how.
#[derive(Debug, Clone)]
pub struct GrpcOptions {
    /// `host:port` (plaintext), or a URL `http://host:port`.
    pub address: String,
    /// A tool that outlives `deadline` with `slow_args`, for the deadline check.
    pub slow_tool: Option<String>,
    pub slow_args: Value,
    pub deadline: Duration,
    /// How late after the deadline an answer may still arrive (network, scheduling).
    pub deadline_margin: Duration,
    /// How long to wait for a first event once the other checks are done.
    pub event_wait: Duration,
    /// Invalid argument objects tried per tool.
    pub invalid_cases: u32,
    /// Deadline of every other call.
    pub timeout: Duration,
    pub progress: bool,
}

impl GrpcOptions {
    pub fn new(address: &str) -> GrpcOptions {
        GrpcOptions {
            address: address.to_owned(),
            slow_tool: None,
            slow_args: json!({}),
            deadline: Duration::from_millis(500),
            deadline_margin: Duration::from_millis(250),
            event_wait: Duration::from_secs(3),
            invalid_cases: 8,
            timeout: Duration::from_secs(30),
            progress: false,
        }
    }
}

/// Runs every check. `Err` only when the run cannot start (bad address, nothing listening).
pub fn run(options: GrpcOptions) -> Result<Report, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime: {e}"))?
        .block_on(run_async(options))
}

struct Checker {
    options: GrpcOptions,
    /// The address as the reproduction commands name it.
    target: String,
    provider: ProviderClient<Channel>,
    health: HealthClient<Channel>,
    report: Report,
}

async fn run_async(options: GrpcOptions) -> Result<Report, String> {
    let (url, target) = match options.address.strip_prefix("http://") {
        Some(rest) => (
            options.address.clone(),
            rest.trim_end_matches('/').to_owned(),
        ),
        None => (
            format!("http://{}", options.address),
            options.address.clone(),
        ),
    };
    let channel = Channel::from_shared(url.clone())
        .map_err(|e| format!("bad address '{}': {e}", options.address))?
        .connect_timeout(options.timeout)
        .connect()
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    let mut c = Checker {
        target: target.clone(),
        provider: ProviderClient::new(channel.clone()),
        health: HealthClient::new(channel),
        report: Report::with_checks(&format!("grpc://{target}"), 0, CHECKS),
        options,
    };
    c.progress(&format!("testing the gRPC provider at {target}"));
    c.health().await;
    // Open first, so the events of the calls below arrive on it.
    let events = c.open_events().await;
    let Some(caps) = c.capabilities().await else {
        for (check, _) in &CHECKS[2..] {
            c.report.skip(check, "ListCapabilities failed");
        }
        return Ok(c.report);
    };
    c.invalid_arguments(&caps).await;
    c.not_found().await;
    c.deadline(&caps).await;
    c.resources(&caps).await;
    c.prompts(&caps).await;
    c.events(events).await;
    Ok(c.report)
}

/// The events received on the stream opened at the start, or why none can be.
type Events = Result<Arc<Mutex<Vec<String>>>, String>;

impl Checker {
    fn progress(&self, line: &str) {
        if self.options.progress {
            eprintln!("conformance: {line}");
        }
    }

    /// A request with the gateway's metadata: a correlation id, a traceparent, a deadline.
    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        let id = uuid::Uuid::new_v4().simple().to_string();
        let metadata = request.metadata_mut();
        if let Ok(value) = format!("conformance-{id}").parse() {
            metadata.insert("x-correlation-id", value);
        }
        if let Ok(value) = format!("00-{id}-{}-01", &id[..16]).parse() {
            metadata.insert("traceparent", value);
        }
        request.set_timeout(self.options.timeout);
        request
    }

    /// A grpcurl command that repeats a call (with the proto from this repository's proto/).
    fn grpcurl(&self, method: &str, body: &Value) -> Option<String> {
        let body = body.to_string().replace('\'', r"'\''");
        Some(format!(
            "grpcurl -plaintext -import-path proto -proto mcpgateway/provider/v1/provider.proto -d '{body}' {} mcpgateway.provider.v1.Provider/{method}",
            self.target
        ))
    }

    fn record(&mut self, check: &str, outcome: Result<(), String>, curl: Option<String>) {
        self.report
            .record(check, outcome.map_err(|message| Failure { message, curl }));
    }

    async fn health(&mut self) {
        for service in ["", "mcpgateway.provider.v1.Provider"] {
            let request = self.request(HealthCheckRequest {
                service: service.to_owned(),
            });
            let outcome = match self.health.check(request).await {
                Ok(answer) if answer.get_ref().status() == ServingStatus::Serving => Ok(()),
                Ok(answer) => Err(format!(
                    "health of {service:?} is {:?}, expected SERVING",
                    answer.get_ref().status()
                )),
                Err(status) => Err(format!(
                    "health of {service:?}: {:?} ({})",
                    status.code(),
                    status.message()
                )),
            };
            let curl = Some(format!(
                "grpcurl -plaintext -d '{{\"service\": \"{service}\"}}' {} grpc.health.v1.Health/Check",
                self.target
            ));
            self.record("health", outcome, curl);
        }
    }

    async fn capabilities(&mut self) -> Option<ListCapabilitiesResponse> {
        let request = self.request(ListCapabilitiesRequest {});
        let curl = self.grpcurl("ListCapabilities", &json!({}));
        match self.provider.list_capabilities(request).await {
            Ok(answer) => {
                let caps = answer.into_inner();
                self.progress(&format!(
                    "{} tools, {} resources, {} templates, {} prompts",
                    caps.tools.len(),
                    caps.resources.len(),
                    caps.resource_templates.len(),
                    caps.prompts.len()
                ));
                for outcome in capabilities::check(&caps) {
                    self.record("capabilities", outcome, curl.clone());
                }
                if caps.tools.is_empty() {
                    self.record("capabilities", Err("no tool is listed".into()), curl);
                }
                Some(caps)
            }
            Err(status) => {
                let message = format!(
                    "ListCapabilities answered {:?} ({})",
                    status.code(),
                    status.message()
                );
                self.record("capabilities", Err(message), curl);
                None
            }
        }
    }

    async fn invoke(&mut self, name: &str, arguments_json: &str) -> Result<(), tonic::Status> {
        let request = self.request(InvokeToolRequest {
            name: name.to_owned(),
            arguments_json: arguments_json.to_owned(),
        });
        self.provider.invoke_tool(request).await.map(|_| ())
    }

    async fn invalid_arguments(&mut self, caps: &ListCapabilitiesResponse) {
        for tool in &caps.tools {
            let Ok(schema) = serde_json::from_str::<Value>(&tool.input_schema_json) else {
                continue; // reported by `capabilities`
            };
            let mut cases = vec![(
                "{not json".to_owned(),
                "the arguments are not JSON".to_owned(),
            )];
            let derived = invalid_objects(&schema, &tool.name, self.options.invalid_cases);
            if derived.is_empty() {
                self.report.tool_skipped(
                    &tool.name,
                    "invalid-arguments not run: no invalid object can be derived from its schema",
                );
            }
            cases.extend(derived.into_iter().map(|(v, why)| (v.to_string(), why)));
            for (arguments, why) in cases {
                let outcome = self.invoke(&tool.name, &arguments).await;
                let verdict = verdicts::refused(&outcome, Code::InvalidArgument)
                    .map_err(|e| format!("tool '{}' with {arguments} ({why}): {e}", tool.name));
                let curl = self.grpcurl(
                    "InvokeTool",
                    &json!({"name": tool.name, "arguments_json": arguments}),
                );
                self.record("invalid-arguments", verdict, curl);
            }
        }
    }

    async fn not_found(&mut self) {
        let unknown = format!("conformance-unknown-{}", uuid::Uuid::new_v4().simple());
        let outcome = self.invoke(&unknown, "{}").await;
        let curl = self.grpcurl(
            "InvokeTool",
            &json!({"name": unknown, "arguments_json": "{}"}),
        );
        self.record(
            "not-found",
            verdicts::refused(&outcome, Code::NotFound).map_err(|e| format!("unknown tool: {e}")),
            curl,
        );

        let uri = format!("conformance-unknown://{unknown}");
        let request = self.request(ReadResourceRequest { uri: uri.clone() });
        let outcome = self.provider.read_resource(request).await.map(|_| ());
        let curl = self.grpcurl("ReadResource", &json!({"uri": uri}));
        self.record(
            "not-found",
            verdicts::refused(&outcome, Code::NotFound)
                .map_err(|e| format!("unknown resource: {e}")),
            curl,
        );

        let request = self.request(GetPromptRequest {
            name: unknown.clone(),
            arguments_json: "{}".into(),
        });
        let outcome = self.provider.get_prompt(request).await.map(|_| ());
        let curl = self.grpcurl(
            "GetPrompt",
            &json!({"name": unknown, "arguments_json": "{}"}),
        );
        self.record(
            "not-found",
            verdicts::refused(&outcome, Code::NotFound).map_err(|e| format!("unknown prompt: {e}")),
            curl,
        );
    }

    async fn deadline(&mut self, caps: &ListCapabilitiesResponse) {
        let Some(tool) = self.options.slow_tool.clone() else {
            self.report.skip(
                "deadline",
                "no --slow-tool named (a tool that outlives --deadline-ms)",
            );
            return;
        };
        let arguments = self.options.slow_args.to_string();
        let curl = self.grpcurl(
            "InvokeTool",
            &json!({"name": tool, "arguments_json": arguments}),
        );
        if !caps.tools.iter().any(|t| t.name == tool) {
            let message = format!("--slow-tool '{tool}' is not listed by ListCapabilities");
            self.record("deadline", Err(message), curl);
            return;
        }
        let (deadline, margin) = (self.options.deadline, self.options.deadline_margin);
        let mut request = self.request(InvokeToolRequest {
            name: tool.clone(),
            arguments_json: arguments,
        });
        request.set_timeout(deadline);
        let started = Instant::now();
        // tonic's client only sends the deadline (grpc-timeout); it is the provider that must
        // keep it, so the client waits no longer than it is due.
        let answer = tokio::time::timeout(deadline + margin, self.provider.invoke_tool(request))
            .await
            .ok()
            .map(|answer| answer.map(|_| ()));
        let verdict = verdicts::deadline(deadline, margin, started.elapsed(), answer.as_ref())
            .map_err(|e| format!("tool '{tool}': {e}"));
        let curl = curl.map(|c| format!("{c}  # with -max-time {}", deadline.as_secs_f64()));
        self.record("deadline", verdict, curl);
    }

    async fn resources(&mut self, caps: &ListCapabilitiesResponse) {
        if caps.resources.is_empty() {
            self.report.skip("resources", "no resource is listed");
        }
        for resource in &caps.resources {
            let request = self.request(ReadResourceRequest {
                uri: resource.uri.clone(),
            });
            let verdict = match self.provider.read_resource(request).await {
                Ok(answer) => {
                    let contents = answer.into_inner().contents;
                    if contents.is_empty() {
                        Err("no contents".to_owned())
                    } else if contents.iter().any(|c| c.body.is_none()) {
                        Err("contents without a text or blob body".to_owned())
                    } else {
                        Ok(())
                    }
                }
                Err(status) => Err(format!("{:?} ({})", status.code(), status.message())),
            };
            let curl = self.grpcurl("ReadResource", &json!({"uri": resource.uri}));
            self.record(
                "resources",
                verdict.map_err(|e| format!("resource '{}': {e}", resource.uri)),
                curl,
            );
        }
    }

    async fn prompts(&mut self, caps: &ListCapabilitiesResponse) {
        if caps.prompts.is_empty() {
            self.report.skip("prompts", "no prompt is listed");
        }
        let mut not_run = Vec::new();
        for prompt in &caps.prompts {
            let arguments = if prompt.args_schema_json.trim().is_empty() {
                Some(json!({}))
            } else {
                serde_json::from_str(&prompt.args_schema_json)
                    .ok()
                    .and_then(|schema| valid_object(&schema, &prompt.name))
            };
            let Some(arguments) = arguments else {
                not_run.push(prompt.name.clone());
                continue;
            };
            let request = self.request(GetPromptRequest {
                name: prompt.name.clone(),
                arguments_json: arguments.to_string(),
            });
            let verdict = match self.provider.get_prompt(request).await {
                Ok(answer) => {
                    let messages = answer.into_inner().messages;
                    if messages.is_empty() {
                        Err("no messages".to_owned())
                    } else if let Some(m) = messages
                        .iter()
                        .find(|m| m.role != "user" && m.role != "assistant")
                    {
                        Err(format!(
                            "a message with role '{}' (user or assistant)",
                            m.role
                        ))
                    } else {
                        Ok(())
                    }
                }
                Err(status) => Err(format!("{:?} ({})", status.code(), status.message())),
            };
            let curl = self.grpcurl(
                "GetPrompt",
                &json!({"name": prompt.name, "arguments_json": arguments.to_string()}),
            );
            self.record(
                "prompts",
                verdict.map_err(|e| format!("prompt '{}' with {arguments}: {e}", prompt.name)),
                curl,
            );
        }
        if !not_run.is_empty() {
            let why = format!(
                "no valid arguments could be derived for {}",
                not_run.join(", ")
            );
            self.report.skip("prompts", &why);
        }
    }

    /// Opens StreamEvents; the events are collected in the background until the run ends.
    async fn open_events(&mut self) -> Events {
        let request = self.request(StreamEventsRequest { types: Vec::new() });
        let mut request = request;
        // The stream stays open for the whole run: no deadline on it.
        request.metadata_mut().remove("grpc-timeout");
        let mut stream = match self.provider.stream_events(request).await {
            Ok(answer) => answer.into_inner(),
            Err(status) if status.code() == Code::Unimplemented => {
                return Err("the provider does not implement StreamEvents".into());
            }
            Err(status) => {
                let message = format!(
                    "StreamEvents answered {:?} ({})",
                    status.code(),
                    status.message()
                );
                let curl = self.grpcurl("StreamEvents", &json!({}));
                self.record("events", Err(message.clone()), curl);
                return Err(message);
            }
        };
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = received.clone();
        tokio::spawn(async move {
            while let Ok(Some(event)) = stream.message().await {
                if let Ok(mut events) = sink.lock() {
                    events.push(event.cloudevent_json);
                }
            }
        });
        Ok(received)
    }

    async fn events(&mut self, events: Events) {
        let received = match events {
            Ok(received) => received,
            Err(why) => {
                self.report.skip("events", &why);
                return;
            }
        };
        let count = || received.lock().map(|e| e.len()).unwrap_or(0);
        let until = Instant::now() + self.options.event_wait;
        // Polled, with a bound: a provider may emit no event at all, which is allowed.
        while count() == 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let events: Vec<String> = received.lock().map(|e| e.clone()).unwrap_or_default();
        if events.is_empty() {
            let why = format!(
                "no event within {} ms of the other checks",
                self.options.event_wait.as_millis()
            );
            self.report.skip("events", &why);
        }
        let curl = self.grpcurl("StreamEvents", &json!({}));
        for event in events {
            self.record("events", verdicts::cloudevent(&event), curl.clone());
        }
    }
}

/// A runner with its own fixed seed per name: the same provider gets the same cases each run.
fn runner(name: &str, salt: &str) -> TestRunner {
    let mut seed = [0u8; 32];
    for (i, b) in name.bytes().chain(salt.bytes()).enumerate() {
        seed[i % 32] ^= b;
    }
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
    )
}

/// Up to `count` distinct objects the schema rejects (each checked against the schema itself,
/// so a weakness of the generator never blames the provider), with why each is invalid.
pub fn invalid_objects(schema: &Value, tool: &str, count: u32) -> Vec<(Value, String)> {
    let (Some(strategy), Ok(validator)) = (
        schema_gen::invalid(schema, schema),
        jsonschema::draft202012::new(schema),
    ) else {
        return Vec::new();
    };
    let mut runner = runner(tool, "invalid");
    let mut found: Vec<(Value, String)> = Vec::new();
    for _ in 0..count * 4 {
        if found.len() >= count as usize {
            break;
        }
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            break;
        };
        let (value, why) = tree.current();
        if !validator.is_valid(&value) && !found.iter().any(|(v, _)| *v == value) {
            found.push((value, why));
        }
    }
    found
}

/// An object the schema accepts, or None when the generator finds none.
pub fn valid_object(schema: &Value, prompt: &str) -> Option<Value> {
    let validator = jsonschema::draft202012::new(schema).ok()?;
    let strategy = schema_gen::valid(schema, schema);
    let mut runner = runner(prompt, "valid");
    (0..16).find_map(|_| {
        let value = strategy.new_tree(&mut runner).ok()?.current();
        validator.is_valid(&value).then_some(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_objects_really_are_invalid() {
        let schema = json!({
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
            "additionalProperties": false
        });
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        let found = invalid_objects(&schema, "echo", 8);
        assert!(!found.is_empty());
        for (value, why) in &found {
            assert!(!validator.is_valid(value), "{value} ({why})");
        }
        assert_eq!(invalid_objects(&schema, "echo", 8), found, "deterministic");
    }

    #[test]
    fn a_schema_that_accepts_everything_has_no_invalid_object() {
        assert!(invalid_objects(&json!({}), "any", 8).is_empty());
    }

    #[test]
    fn valid_objects_are_valid() {
        let schema = json!({
            "type": "object",
            "properties": {"goal": {"type": "string", "minLength": 1}, "steps": {"type": "integer", "minimum": 1, "maximum": 10}},
            "required": ["goal"],
            "additionalProperties": false
        });
        let value = valid_object(&schema, "hello-plan").unwrap();
        assert!(
            jsonschema::draft202012::new(&schema)
                .unwrap()
                .is_valid(&value)
        );
    }
}
