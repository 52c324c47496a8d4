//! The conformance tester (crates/conformance) against our own gateway: the default services
//! of config/ and a service bridging more real MCP servers must pass every check.

use std::time::Duration;

use crate::harness::*;

/// Tools that are only slow under random inputs (a random `duration` in seconds), not wrong.
const SLOW_TOOLS: [&str; 2] = ["trigger-long-running-operation", "sleep"];

async fn conformance(port: u16, skip: &[&str]) -> conformance::Report {
    let mut options = conformance::Options::new(&format!("http://127.0.0.1:{port}"));
    options.cases = 64;
    options.seed = 20261122;
    options.skip_tools = skip.iter().map(|s| (*s).to_owned()).collect();
    options.timeout = Duration::from_secs(30);
    // The MCP surface at /mcp must agree with the REST one.
    options.mcp = true;
    tokio::task::spawn_blocking(move || conformance::run(options))
        .await
        .unwrap()
        .expect("conformance runs")
}

/// Writes the JUnit and JSON reports into $CONFORMANCE_REPORT_DIR when it is set (CI sets it
/// through scripts/test.sh, to keep them as artifacts).
fn keep(report: &conformance::Report, service: &str) {
    let Some(dir) = std::env::var_os("CONFORMANCE_REPORT_DIR") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{service}.xml")), report.junit()).unwrap();
    std::fs::write(
        dir.join(format!("{service}.json")),
        serde_json::to_string_pretty(report).unwrap(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn every_default_service_passes() {
    let config_dir = repo().join("config");
    let mut files: Vec<_> = std::fs::read_dir(&config_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "yaml")
                && p.file_stem().is_some_and(|s| s != "services")
        })
        .collect();
    files.sort();
    assert!(!files.is_empty());
    // Backends that are not running: their services must conform all the same (degraded).
    let dead = free_port();
    let env = [
        ("MCP_EVERYTHING_JS", everything_js()),
        ("MCP_SERVER_TIME", time_bin()),
        ("AI_GATEWAY_BASE_URL", format!("http://127.0.0.1:{dead}/v1")),
        ("CODE_GRAPH_BOLT_URI", format!("bolt://127.0.0.1:{dead}")),
        ("SEEKR_MCP_COMMAND", "/nonexistent/seekr-mcp".to_owned()),
        ("DOCWELL_MCP_COMMAND", "/nonexistent/docwell-mcp".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for file in files {
        // The shipped file as it is, on a free port.
        let port = free_port();
        let (dir, config) = write_shipped_config(file.file_name().unwrap().to_str().unwrap(), port);
        let args = vec![
            "serve".into(),
            "--config".into(),
            config.to_string_lossy().into_owned(),
        ];
        let mut gw = Gateway::spawn_with(args, port, dir, config, &env);
        gw.wait_running().await;
        let report = conformance(port, &SLOW_TOOLS).await;
        keep(&report, file.file_stem().unwrap().to_str().unwrap());
        assert!(
            report.ok(),
            "{} fails conformance:\n{}",
            file.display(),
            report.render()
        );
        let listed = report
            .checks
            .iter()
            .find(|c| c.name == "openapi-tools")
            .unwrap()
            .cases;
        let tool_cases = report
            .checks
            .iter()
            .find(|c| c.name == "tool-valid-inputs")
            .unwrap()
            .cases;
        assert!(
            listed == 0 || tool_cases > 0,
            "{}: the listed tools were called",
            file.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_bridging_more_servers_passes() {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "providers:\n{}{}  - {{ name: paged, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
        everything_provider("everything"),
        memory_provider("memory", dir.path()),
        venv_python(),
        fixture("paged_dynamic_server.py")
    );
    let gw = Gateway::start("many", &extra).await;
    // add_tool would change the tool list under the test on purpose; it has its own test.
    let report = conformance(
        gw.port,
        &["trigger-long-running-operation", "sleep", "add_tool"],
    )
    .await;
    keep(&report, "bridge-everything-memory-paged");
    assert!(report.ok(), "{}", report.render());
    let unicode = report.checks.iter().find(|c| c.name == "unicode").unwrap();
    assert!(unicode.cases > 0, "echoing tools were found and checked");
}
