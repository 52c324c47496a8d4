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
//! the prompt's `args_schema`, as each tool's is by its input schema).

use std::process::Command;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_nothing_but_tool_failures() {
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
    let run = tokio::task::spawn_blocking(move || {
        Command::new(schemathesis)
            .args(["run", &url, "--checks", "all", "--max-examples", "25"])
            .args(["--request-timeout", "10", "--workers", "1"])
            .args(["--suppress-health-check", "all", "--seed", "20261123"])
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
    let judged = String::from_utf8_lossy(&verdict.stdout);
    assert_eq!(
        verdict.status.code(),
        Some(0),
        "schemathesis found more than tool failures:\n{judged}\n--- schemathesis output ---\n{output}"
    );
    assert!(judged.contains("operations tested"), "{judged}");
    // Each prompt's own operation was fuzzed, one with a required argument among them.
    for operation in ["POST /prompts/args-prompt", "POST /prompts/simple-prompt"] {
        assert!(
            judged.contains(operation),
            "{operation} was not tested:\n{judged}"
        );
    }
}
