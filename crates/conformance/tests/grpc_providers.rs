//! `conformance --grpc` against the two example providers started as real processes: both
//! pass every check; hello-provider broken on purpose (its hidden `--break` flag) fails
//! exactly the check that covers what was broken. Also: the two examples list the same
//! capabilities, and hello-py's own unit tests pass.

use std::process::Command;
use std::time::Duration;

use conformance::Report;
use conformance::grpc::{GrpcOptions, run};
use provider_proto::v1::ListCapabilitiesRequest;
use provider_proto::v1::provider_client::ProviderClient;
use serde_json::{Value, json};
use testkit::providers::{Provider, hello_py_provider, hello_rs};

fn options(provider: &Provider) -> GrpcOptions {
    GrpcOptions {
        slow_tool: Some("slow.v1".into()),
        slow_args: json!({"ms": 5000}),
        deadline: Duration::from_millis(300),
        ..GrpcOptions::new(&provider.address)
    }
}

fn check<'r>(report: &'r Report, name: &str) -> &'r conformance::report::CheckResult {
    report.checks.iter().find(|c| c.name == name).unwrap()
}

/// Every check ran (none "not run") and passed.
fn assert_all_passed(report: &Report) {
    for c in &report.checks {
        assert!(
            c.cases > 0 && c.failed == 0 && c.skipped.is_none(),
            "{}: {c:?}\n{}",
            c.name,
            report.render()
        );
    }
    assert!(report.ok());
}

#[test]
fn hello_rs_passes_every_check() {
    let provider = hello_rs(&[]);
    assert_all_passed(&run(options(&provider)).unwrap());
}

#[test]
fn hello_py_passes_every_check() {
    let provider = hello_py_provider(&[]);
    assert_all_passed(&run(options(&provider)).unwrap());
}

/// Runs the conformance binary against a provider hello-provider broken by `mode`; returns
/// the report and asserts the exit code is 1 (a failure, not a run that could not start).
fn broken(mode: &str) -> Value {
    let provider = hello_rs(&["--break", mode]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let output = Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(["--grpc", &provider.address, "--quiet"])
        .args(["--slow-tool", "slow.v1", "--slow-args", r#"{"ms": 5000}"#])
        // A short deadline for every call: accepting invalid arguments lets slow.v1 sleep.
        .args(["--deadline-ms", "300", "--timeout", "2", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// The names of the checks that failed.
fn failed(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["failed"].as_u64() > Some(0))
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn accepting_invalid_arguments_fails_invalid_arguments() {
    let report = broken("accept-invalid-args");
    assert_eq!(failed(&report), ["invalid-arguments"], "{report:#}");
}

#[test]
fn ignoring_the_deadline_fails_deadline() {
    let report = broken("ignore-deadline");
    assert_eq!(failed(&report), ["deadline"], "{report:#}");
}

#[test]
fn a_duplicate_tool_fails_capabilities() {
    let report = broken("duplicate-tool");
    assert_eq!(failed(&report), ["capabilities"], "{report:#}");
}

#[test]
fn without_a_slow_tool_the_deadline_check_is_not_run_and_not_passed() {
    let provider = hello_rs(&[]);
    let report = run(GrpcOptions::new(&provider.address)).unwrap();
    let deadline = check(&report, "deadline");
    assert_eq!((deadline.cases, deadline.passed), (0, 0));
    assert!(deadline.skipped.as_deref().unwrap().contains("--slow-tool"));
    assert!(report.render().contains("skipped: no --slow-tool"));
}

#[test]
fn nothing_listening_is_a_run_that_cannot_start() {
    let port = testkit::free_port();
    let error = run(GrpcOptions::new(&format!("127.0.0.1:{port}"))).unwrap_err();
    assert!(error.contains("cannot connect"), "{error}");
}

/// ListCapabilities with every JSON text parsed, so formatting does not count.
async fn capabilities(address: &str) -> Value {
    let mut client = ProviderClient::connect(format!("http://{address}"))
        .await
        .unwrap();
    let caps = client
        .list_capabilities(ListCapabilitiesRequest {})
        .await
        .unwrap()
        .into_inner();
    let parse = |text: &str| -> Value {
        if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(text).unwrap()
        }
    };
    json!({
        "tools": caps.tools.iter().map(|t| json!({
            "name": t.name, "description": t.description,
            "input": parse(&t.input_schema_json), "output": parse(&t.output_schema_json),
        })).collect::<Vec<_>>(),
        "resources": caps.resources.iter().map(|r| json!([r.uri, r.name, r.description, r.mime_type])).collect::<Vec<_>>(),
        "templates": caps.resource_templates.iter().map(|r| json!([r.uri_template, r.name, r.description, r.mime_type])).collect::<Vec<_>>(),
        "prompts": caps.prompts.iter().map(|p| json!([p.name, p.description, parse(&p.args_schema_json), p.template])).collect::<Vec<_>>(),
    })
}

#[test]
fn both_examples_list_the_same_capabilities() {
    let rs = hello_rs(&[]);
    let py = hello_py_provider(&[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (a, b) = runtime.block_on(async {
        (
            capabilities(&rs.address).await,
            capabilities(&py.address).await,
        )
    });
    assert_eq!(a, b);
}

#[test]
fn hello_py_unit_tests_pass() {
    let (python, script) = testkit::installed::hello_py();
    let dir = std::path::Path::new(&script).parent().unwrap().to_owned();
    let output = Command::new(python)
        .args(["-m", "unittest", "discover", "-s"])
        .arg(&dir)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
