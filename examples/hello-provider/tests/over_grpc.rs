//! hello-provider started as a real process and called over gRPC: what the unit tests cannot
//! see — the port printed, tonic's own deadline handling racing ours, health, the log file.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use provider_proto::health::pb::health_check_response::ServingStatus;
use provider_proto::health::pb::{HealthCheckRequest, health_client::HealthClient};
use provider_proto::v1::provider_client::ProviderClient;
use provider_proto::v1::{InvokeToolRequest, StreamEventsRequest};
use tonic::Code;
use tonic::transport::Channel;

struct Provider {
    child: Child,
    address: String,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Provider {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hello-provider"))
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting hello-provider");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .to_owned();
    Provider { child, address }
}

async fn channel(provider: &Provider) -> Channel {
    Channel::from_shared(format!("http://{}", provider.address))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

fn call(name: &str, arguments: &str) -> tonic::Request<InvokeToolRequest> {
    tonic::Request::new(InvokeToolRequest {
        name: name.into(),
        arguments_json: arguments.into(),
    })
}

#[tokio::test]
async fn a_slow_call_past_its_deadline_answers_deadline_exceeded_in_time() {
    let provider = start(&[]);
    let mut client = ProviderClient::new(channel(&provider).await);
    for _ in 0..5 {
        let mut request = call("slow.v1", r#"{"ms": 5000}"#);
        request.set_timeout(Duration::from_millis(300));
        let started = Instant::now();
        let status = client.invoke_tool(request).await.unwrap_err();
        let elapsed = started.elapsed();
        // DEADLINE_EXCEEDED, not the CANCELLED tonic's server answers when it cuts the call.
        assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
        assert!(elapsed < Duration::from_millis(300), "{elapsed:?}");
    }
}

#[tokio::test]
async fn health_is_served_for_the_server_and_the_provider_service() {
    let provider = start(&[]);
    let mut health = HealthClient::new(channel(&provider).await);
    for service in ["", "mcpgateway.provider.v1.Provider"] {
        let answer = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(answer.status(), ServingStatus::Serving, "{service:?}");
    }
}

#[tokio::test]
async fn the_correlation_id_is_on_the_log_line_of_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hello.log");
    let provider = start(&["--log-file", log.to_str().unwrap()]);
    let mut client = ProviderClient::new(channel(&provider).await);
    let mut request = call("echo.v1", r#"{"message": "hi"}"#);
    request
        .metadata_mut()
        .insert("x-correlation-id", "corr-42".parse().unwrap());
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    request
        .metadata_mut()
        .insert("traceparent", traceparent.parse().unwrap());
    client.invoke_tool(request).await.unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let line: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .find(|l: &serde_json::Value| l["rpc"] == "InvokeTool")
        .unwrap_or_else(|| panic!("no InvokeTool line in {text}"));
    assert_eq!(line["correlation_id"], "corr-42");
    assert_eq!(line["traceparent"], traceparent);
    assert_eq!(line["tool"], "echo.v1");
}

#[tokio::test]
async fn metrics_are_streamed_every_interval() {
    let provider = start(&["--metric-interval-ms", "100"]);
    let mut client = ProviderClient::new(channel(&provider).await);
    let mut stream = client
        .stream_events(StreamEventsRequest {
            types: vec!["provider.metric.reported".into()],
        })
        .await
        .unwrap()
        .into_inner();
    let event = tokio::time::timeout(Duration::from_secs(5), stream.message())
        .await
        .expect("a metric within 5 s")
        .unwrap()
        .unwrap();
    let event: serde_json::Value = serde_json::from_str(&event.cloudevent_json).unwrap();
    assert_eq!(event["type"], "provider.metric.reported");
    assert_eq!(event["data"]["name"], "invocations_total");
}
