//! The official MCP conformance suites, `@modelcontextprotocol/conformance` run on Node 22,
//! against our conformance fixture (tests/fixtures/conformance_server.mjs, written with the
//! official TypeScript SDK): directly, and placed behind the gateway over Streamable HTTP and
//! over stdio. Two releases: 0.1.16's server scenarios (the handshake era) and 0.2.0-alpha.11's
//! `--requirements 2026-07-28` (the stateless era, which the gateway's face speaks in front of a
//! handshake-era server).
//!
//! Each run is held to a checked-in baseline, tests/fixtures/conformance/<release>-<way>.yml,
//! listing the scenarios expected to fail, each with its reason: the suite itself
//! (`--expected-failures`) fails the run on a failure off the list and on a listed scenario
//! that passes, so the list can neither hide a regression nor go stale. The direct run's list is
//! what the fixture alone cannot do; the gateway's lists are compared with it in
//! docs/testing.md ("The official MCP conformance suites").

use std::path::Path;
use std::process::Command;

use testkit::installed::{conformance_suite, node22};
use testkit::{Killed, free_port};

use crate::harness::*;

/// 0.1.16: every server scenario of its default suite (the handshake era, 2025-11-25).
const HANDSHAKE: &str = "0.1.16";
/// 0.2.0-alpha.11 with `--requirements 2026-07-28`: the scenarios that revision requires.
const STATELESS: &str = "0.2.0-alpha.11";

/// Runs release `release` of the suite against `url` (`/mcp` of a server) with the baseline of
/// `way`; panics with the suite's report unless every failure is listed and every listed
/// scenario failed.
async fn suite_holds_to_its_baseline(release: &str, way: &str, url: String) {
    let baseline = fixture(&format!("conformance/{release}-{way}.yml"));
    assert!(Path::new(&baseline).exists(), "no baseline {baseline}");
    let results = tempfile::tempdir().unwrap();
    let mut args = vec![
        conformance_suite(release),
        "server".into(),
        "--url".into(),
        url,
        "--expected-failures".into(),
        baseline.clone(),
        "-o".into(),
        results.path().to_string_lossy().into_owned(),
    ];
    if release == STATELESS {
        args.extend(["--requirements".into(), "2026-07-28".into()]);
    }
    let out = tokio::task::spawn_blocking(move || Command::new(node22()).args(&args).output())
        .await
        .unwrap()
        .expect("run the conformance suite");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "conformance {release} ({way}) does not hold to {baseline}:\n{report}\n{}\n\
         every check not passed:\n{}",
        String::from_utf8_lossy(&out.stderr),
        checks_not_passed(results.path())
    );
    // The suite ran its scenarios (a run that found none would pass any baseline).
    assert!(
        report.contains("Baseline check passed"),
        "no baseline verdict:\n{report}"
    );
    assert!(
        report.matches("=== Running scenario:").count() >= 25,
        "too few scenarios ran:\n{report}"
    );
}

/// Each failure or warning of the suite's results (`<dir>/<scenario>-<time>/checks.json`), one
/// line each: what the report's summary leaves out.
fn checks_not_passed(results: &Path) -> String {
    let mut lines = Vec::new();
    for scenario in std::fs::read_dir(results).into_iter().flatten().flatten() {
        let Ok(text) = std::fs::read_to_string(scenario.path().join("checks.json")) else {
            continue;
        };
        let checks: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
        for check in checks {
            if matches!(check["status"].as_str(), Some("FAILURE" | "WARNING")) {
                lines.push(format!(
                    "{} {} {}: {}",
                    scenario.file_name().to_string_lossy(),
                    check["status"],
                    check["id"],
                    check["errorMessage"]
                ));
            }
        }
    }
    lines.sort();
    lines.join("\n")
}

/// The fixture serving Streamable HTTP on a free port; its `/mcp` URL.
async fn fixture_over_http() -> (Killed, String) {
    let port = free_port();
    let server = start_node_server_on("conformance_server.mjs", &["http"], port).await;
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

/// The gateway in front of the fixture: over Streamable HTTP at `url`, or over stdio.
/// One upstream session per client session, so what the suite's server asks (elicitation,
/// sampling, roots) goes to the client whose call caused it.
async fn gateway_in_front(upstream: Option<&str>) -> Gateway {
    let provider = match upstream {
        Some(url) => {
            format!("  - {{ name: ref, kind: mcp, url: \"{url}\", session_per_client: true }}\n")
        }
        None => format!(
            "  - {{ name: ref, kind: mcp, command: node, args: [\"{}\", stdio], session_per_client: true }}\n",
            fixture("conformance_server.mjs")
        ),
    };
    Gateway::start("conformance", &format!("providers:\n{provider}")).await
}

#[tokio::test]
async fn handshake_suite_directly() {
    let (_server, url) = fixture_over_http().await;
    suite_holds_to_its_baseline(HANDSHAKE, "direct", url).await;
}

#[tokio::test]
async fn handshake_suite_through_streamable_http() {
    let (_server, url) = fixture_over_http().await;
    let gateway = gateway_in_front(Some(&url)).await;
    suite_holds_to_its_baseline(HANDSHAKE, "http", gateway.url("/mcp")).await;
}

#[tokio::test]
async fn handshake_suite_through_stdio() {
    let gateway = gateway_in_front(None).await;
    suite_holds_to_its_baseline(HANDSHAKE, "stdio", gateway.url("/mcp")).await;
}

#[tokio::test]
async fn stateless_requirements_directly() {
    let (_server, url) = fixture_over_http().await;
    suite_holds_to_its_baseline(STATELESS, "direct", url).await;
}

#[tokio::test]
async fn stateless_requirements_through_streamable_http() {
    let (_server, url) = fixture_over_http().await;
    let gateway = gateway_in_front(Some(&url)).await;
    suite_holds_to_its_baseline(STATELESS, "http", gateway.url("/mcp")).await;
}

#[tokio::test]
async fn stateless_requirements_through_stdio() {
    let gateway = gateway_in_front(None).await;
    suite_holds_to_its_baseline(STATELESS, "stdio", gateway.url("/mcp")).await;
}
