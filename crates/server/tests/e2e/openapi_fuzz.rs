//! An independent OpenAPI fuzzer (schemathesis, every check it has) against a service bridging
//! the typed fixture server (nested `$defs`, a recursive model, enums, typed results),
//! server-everything (resources, a tool that asks for sampling, a server stricter than its
//! schema) and mcp-server-time: the served document and the behaviour must agree. The only
//! findings allowed are a tool's own failures to run (500 EXECUTION_ERROR, 504 TIMEOUT in the
//! envelope), judged by `fixtures/schemathesis_verdict.py` from the run's ndjson report.
//!
//! Three tools of server-everything are not served here, by name: `gzip-file-as-resource`
//! fetches a URL from the internet (no network fetch the user did not configure),
//! `trigger-long-running-operation` runs for as long as its arguments say, which would only
//! time out, and `simulate-research-query` waits seconds by design at each of its stages: its
//! 56 calls took 100 of the run's 131 s (schemathesis's own report) and showed nothing another
//! tool does not.
//!
//! Every operation is fuzzed, each prompt's `POST /prompts/<name>` included (its body typed by
//! the prompt's `args_schema`, as each tool's is by its input schema), in four runs of the
//! fuzzer, each against a gateway of its own: the tools' operations (`/tools/<name>`) in two
//! halves by name, `/call-tool` with `/tools` and a task's operations, and every other one
//! (what the first three patterns select excluded, so that together the runs cover the
//! document). One run of all 36 took 38 s in the test run; each part stays within the 20 s an
//! e2e test may take (docs/testing.md).

use std::process::Command;

use crate::harness::*;

/// The tools' own operations, `POST /tools/<name>` for every tool of the three servers, in two
/// halves by the name's first letter.
const TOOLS_A_TO_H: &str = "^/tools/[a-h]";
const TOOLS_I_TO_Z: &str = "^/tools/[^a-h]";
/// `POST /call-tool` (a tool by name in the body), `GET /tools` and a task's operations.
const CALLS_BY_NAME_AND_LISTS: &str = "^/(call-tool$|tools$|tasks/)";
/// What the runs above cover, so that the last run takes every other operation (resources,
/// prompts, health, metrics, status).
const NOT_OTHER_OPERATIONS: &str = "^/(tools|call-tool$|tasks/)";

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_nothing_but_tool_failures_in_the_tools_a_to_h() {
    let judged = fuzz(&["--include-path-regex", TOOLS_A_TO_H]).await;
    assert_tested(
        &judged,
        &[
            "POST /tools/echo",
            "POST /tools/get-sum",
            "POST /tools/convert_time",
        ],
    );
    assert!(!judged.contains("POST /tools/register_person"), "{judged}");
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_nothing_but_tool_failures_in_the_tools_i_to_z() {
    let judged = fuzz(&["--include-path-regex", TOOLS_I_TO_Z]).await;
    assert_tested(
        &judged,
        &["POST /tools/register_person", "POST /tools/summarize_tree"],
    );
    assert!(!judged.contains("POST /tools/echo"), "{judged}");
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_nothing_but_tool_failures_in_the_calls_by_name_and_the_lists() {
    let judged = fuzz(&["--include-path-regex", CALLS_BY_NAME_AND_LISTS]).await;
    assert_tested(&judged, &["POST /call-tool", "GET /tools"]);
    assert!(!judged.contains("POST /tools/echo"), "{judged}");
    assert!(!judged.contains("POST /prompts/"), "{judged}");
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_nothing_but_tool_failures_in_every_other_operation() {
    let judged = fuzz(&["--exclude-path-regex", NOT_OTHER_OPERATIONS]).await;
    // Each prompt's own operation was fuzzed, one with a required argument among them.
    assert_tested(
        &judged,
        &[
            "GET /health",
            "POST /prompts/args-prompt",
            "POST /prompts/simple-prompt",
        ],
    );
    assert!(!judged.contains("POST /tools/echo"), "{judged}");
    assert!(!judged.contains("POST /call-tool"), "{judged}");
}

/// Each of `operations` was fuzzed in the run `judged` reports.
fn assert_tested(judged: &str, operations: &[&str]) {
    for operation in operations {
        assert!(
            judged.contains(operation),
            "{operation} was not tested:\n{judged}"
        );
    }
}

/// Fuzzes the operations `select` picks (schemathesis's own options) of a fresh gateway's
/// document; panics on any finding but a tool's own failure. What the verdict printed.
async fn fuzz(select: &[&str]) -> String {
    let extra = format!(
        "limits: {{ call_timeout_ms: 5000 }}\nproviders:\n  - {{ name: typed, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n{}  - {{ name: everything, kind: mcp, command: node, args: [\"{}\", stdio], expose: {{ exclude: [gzip-file-as-resource, trigger-long-running-operation, simulate-research-query] }} }}\n",
        venv_python(),
        fixture("typed_server.py"),
        time_provider("time"),
        everything_js()
    );
    let gw = Gateway::start("fuzzed", &extra).await;
    let reports = tempfile::tempdir().unwrap();
    let schemathesis = repo().join(".deps/fuzz-venv/bin/schemathesis");
    assert!(
        schemathesis.exists(),
        "schemathesis is not installed: run scripts/install-fuzz-tools.sh"
    );
    let url = gw.url("/openapi.json");
    let report_dir = reports.path().to_owned();
    let select: Vec<String> = select.iter().map(|s| s.to_string()).collect();
    let run = tokio::task::spawn_blocking(move || {
        Command::new(schemathesis)
            .args(["run", &url, "--checks", "all", "--max-examples", "25"])
            .args(["--request-timeout", "10", "--workers", "1"])
            .args(["--suppress-health-check", "all", "--seed", "20261123"])
            .args(&select)
            .args(["--report", "ndjson", "--report-dir"])
            .arg(&report_dir)
            .env("NO_COLOR", "1")
            // Its cache of past failures would replay them on the next run: keep it here.
            .current_dir(&report_dir)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let output = String::from_utf8_lossy(&run.stdout).into_owned();
    let report = std::fs::read_dir(reports.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "ndjson"))
        .unwrap_or_else(|| {
            panic!(
                "no ndjson report:\n{output}\n{}",
                String::from_utf8_lossy(&run.stderr)
            )
        });
    let verdict = Command::new("python3")
        .arg(fixture("schemathesis_verdict.py"))
        .arg(&report)
        .output()
        .unwrap();
    let judged = String::from_utf8_lossy(&verdict.stdout).into_owned();
    assert_eq!(
        verdict.status.code(),
        Some(0),
        "schemathesis found more than tool failures:\n{judged}\n--- schemathesis output ---\n{output}"
    );
    assert!(judged.contains("operations tested"), "{judged}");
    judged
}
