//! The conformance tester (crates/conformance) against our own gateway: the default services
//! of config/ with their backends, and a service bridging more real MCP servers, must pass
//! every check with every tool exercised; a dead backend's tools are reported not exercised.

use std::time::Duration;

use crate::harness::*;

/// Tools that are only slow under random inputs (a random `duration` in seconds), not wrong,
/// and server-everything's `simulate-research-query`, which requires MCP task augmentation: a
/// plain tools/call (and so POST /call-tool) can never run it. And the hello service's tools
/// that never succeed by design (fail.v1, bad_output.v1) or sleep a random time (slow.v1),
/// served with the prefixes of config/hello.yaml.
const SKIPPED: [&str; 10] = [
    // Its server takes `count` from 1 to 10 while its schema sets no bounds: valid inputs by
    // the document are refused (400 INVALID_ARGUMENTS), the server's imprecision.
    "get-resource-links",
    "trigger-long-running-operation",
    "sleep",
    "simulate-research-query",
    "rs_fail_v1",
    "rs_bad_output_v1",
    "rs_slow_v1",
    "py_fail_v1",
    "py_bad_output_v1",
    "py_slow_v1",
];

/// Known-good arguments for tools whose schema cannot say which inputs run (any string is a
/// well-formed timezone, few are real ones).
fn examples() -> Vec<(String, serde_json::Value)> {
    vec![
        (
            "get_current_time".into(),
            serde_json::json!({"timezone": "Europe/Paris"}),
        ),
        (
            "convert_time".into(),
            serde_json::json!({"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"}),
        ),
        // ai-gateway's LiteLLM proxy serves these models only.
        (
            "generate".into(),
            serde_json::json!({"model": "mock-small", "prompt": "hello"}),
        ),
        // The built-in search of seekr and docwell, over tests/fixtures/search.
        (
            "read_file".into(),
            serde_json::json!({"path": "src/http.rs", "start_line": 1, "end_line": 5}),
        ),
        (
            "get_section".into(),
            serde_json::json!({"document": "guide.md", "heading": "Install"}),
        ),
    ]
}

async fn conformance(port: u16, skip: &[&str], allow_open_world: bool) -> conformance::Report {
    run_tester(tester_options(port, skip, allow_open_world)).await
}

/// The tester's options for the service on `port`: the examples, 64 cases a tool, a fixed
/// seed, the tools `skip` names not called, the MCP surface compared with the REST one.
fn tester_options(port: u16, skip: &[&str], allow_open_world: bool) -> conformance::Options {
    let mut options = conformance::Options::new(&format!("http://127.0.0.1:{port}"));
    options.allow_open_world = allow_open_world;
    options.examples = examples();
    options.cases = 64;
    options.seed = 20261122;
    options.skip_tools = skip.iter().map(|s| (*s).to_owned()).collect();
    options.timeout = Duration::from_secs(30);
    // The MCP surface at /mcp must agree with the REST one.
    options.mcp = true;
    options
}

async fn run_tester(options: conformance::Options) -> conformance::Report {
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

/// The shipped services of config/ (`services.yaml` aside), one test each below:
/// `every_shipped_service_has_its_conformance_test` keeps this list equal to the folder.
const SHIPPED: [&str; 6] = [
    "ai-gateway",
    "code-graph-rag",
    "docwell",
    "everything",
    "hello",
    "seekr",
];

#[test]
fn every_shipped_service_has_its_conformance_test() {
    let mut shipped: Vec<String> = std::fs::read_dir(repo().join("config"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_owned()))
        .filter(|stem| stem != "services")
        .collect();
    shipped.sort();
    assert_eq!(shipped, SHIPPED, "a shipped service without its test below");
}

/// The shipped service `service` with its backend up, and only its own (each test starts what
/// its service needs, so the six run side by side): ArcadeDB with the code graph fixture for
/// code-graph-rag, the LiteLLM proxy for ai-gateway, the real MCP servers for everything, the
/// two example gRPC providers for hello. Every listed tool must be exercised (a tool whose
/// calls never ran is not a pass). seekr and docwell run their built-in search (no MCP command
/// set) over the search fixtures.
async fn shipped_service_passes_with_its_backend(service: &str) {
    let cache = tempfile::tempdir().unwrap();
    let mut env = vec![
        ("MCP_EVERYTHING_JS", everything_js()),
        ("MCP_SERVER_TIME", time_bin()),
        ("SEEKR_ROOTS", fixture("search/code")),
        ("DOCWELL_ROOTS", fixture("search/docs")),
        (
            "XDG_CACHE_HOME",
            cache.path().to_string_lossy().into_owned(),
        ),
    ];
    // Whatever runs the service's backend, kept until the test ends.
    let mut backends: Vec<Box<dyn std::any::Any + Send>> = Vec::new();
    match service {
        "code-graph-rag" => {
            let bolt = BoltDb::start();
            env.push(("CODE_GRAPH_BOLT_URI", bolt.uri()));
            env.push(("CODE_GRAPH_BOLT_PASSWORD", "code-graph-rag".to_owned()));
            backends.push(Box::new(bolt));
        }
        "ai-gateway" => {
            let llm = LiteLlm::start().await;
            env.push(("AI_GATEWAY_BASE_URL", llm.base_url()));
            env.push(("AI_GATEWAY_API_KEY", LITELLM_KEY.to_owned()));
            backends.push(Box::new(llm));
        }
        "hello" => {
            let hello_rs = testkit::providers::hello_rs(&[]);
            let hello_py = testkit::providers::hello_py_provider(&[]);
            env.push(("HELLO_RS_ADDRESS", hello_rs.address.clone()));
            env.push(("HELLO_PY_ADDRESS", hello_py.address.clone()));
            backends.push(Box::new(hello_rs));
            backends.push(Box::new(hello_py));
        }
        _ => {}
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // The shipped file as it is, on a free port.
    let port = free_port();
    let (dir, config) = write_shipped_config(&format!("{service}.yaml"), port);
    let args = vec![
        "serve".into(),
        "--config".into(),
        config.to_string_lossy().into_owned(),
    ];
    let mut gw = Gateway::spawn_with(args, port, dir, config, &env);
    gw.wait_running().await;
    // A search index is built in the background: its tools are checked once it is ready.
    eventually(Duration::from_secs(60), "search index ready", || async {
        let report = get(&gw, "/health").await.report().clone();
        let building = report["providers"]
            .as_object()
            .is_some_and(|p| p.values().any(|p| p["index"]["state"] == "building"));
        (!building).then_some(())
    })
    .await;
    // ai-gateway's tools reach an HTTP API (openWorldHint); here that API is on loopback.
    let report = conformance(port, &SKIPPED, service == "ai-gateway").await;
    keep(&report, service);
    assert!(
        report.ok(),
        "config/{service}.yaml fails conformance:\n{}",
        report.render()
    );
    assert!(
        report.not_exercised().is_empty(),
        "{service}: tools whose every valid call failed to run:\n{}",
        report.render()
    );
    let listed = report
        .checks
        .iter()
        .find(|c| c.name == "openapi-tools")
        .unwrap()
        .cases;
    let exercised = report
        .tools
        .iter()
        .filter(|t| t.status == conformance::report::ToolStatus::Exercised)
        .count();
    assert!(
        listed == 0 || exercised > 0,
        "{service}: the listed tools were called and ran:\n{}",
        report.render()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_ai_gateway_passes_with_its_backend() {
    shipped_service_passes_with_its_backend("ai-gateway").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_code_graph_rag_passes_with_its_backend() {
    shipped_service_passes_with_its_backend("code-graph-rag").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_docwell_passes_with_its_backend() {
    shipped_service_passes_with_its_backend("docwell").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_everything_passes_with_its_backend() {
    shipped_service_passes_with_its_backend("everything").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_hello_passes_with_its_backend() {
    shipped_service_passes_with_its_backend("hello").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_seekr_passes_with_its_backend() {
    shipped_service_passes_with_its_backend("seekr").await;
}

/// The shipped code-graph-rag service, its Bolt database a port where nothing listens.
async fn code_graph_rag_with_its_database_down() -> Gateway {
    let dead = free_port();
    start_shipped(
        "code-graph-rag.yaml",
        &[("CODE_GRAPH_BOLT_URI", &format!("bolt://127.0.0.1:{dead}"))],
    )
    .await
}

/// A service whose backend is down still conforms on its surface, and its tools are reported
/// not exercised — never counted as passed.
#[tokio::test(flavor = "multi_thread")]
async fn tools_behind_a_dead_backend_are_not_exercised_not_passed() {
    let gw = code_graph_rag_with_its_database_down().await;
    let report = conformance(gw.port, &[], false).await;
    assert!(report.ok(), "{}", report.render());
    let idle = report.not_exercised();
    assert!(idle.contains(&"query_callers"), "{}", report.render());
    let valid = report
        .checks
        .iter()
        .find(|c| c.name == "tool-valid-inputs")
        .unwrap();
    assert_eq!(
        valid.passed,
        0,
        "no valid call ran, so none passed:\n{}",
        report.render()
    );
    assert!(report.junit().contains("not exercised"));
    // A cypher service offers no resources or prompts: the check did not run, it did not pass.
    let catalog = report
        .checks
        .iter()
        .find(|c| c.name == "resources-prompts")
        .unwrap();
    assert_eq!(catalog.cases, 0, "{}", report.render());
    assert!(catalog.skipped.as_deref().unwrap().contains("offers no"));
}

/// The command line's exit code: a tool never exercised fails the run, unless named by
/// --allow-not-exercised; the run says what it did not test.
#[tokio::test(flavor = "multi_thread")]
async fn the_cli_fails_a_run_that_never_exercised_a_tool() {
    let gw = code_graph_rag_with_its_database_down().await;
    let run = |allowed: Vec<String>| {
        let url = gw.url("");
        tokio::task::spawn_blocking(move || {
            let mut command = std::process::Command::new(testkit::workspace_bin("conformance"));
            command.args(["--url", &url, "--cases", "4", "--seed", "3", "--quiet"]);
            for tool in allowed {
                command.args(["--allow-not-exercised", &tool]);
            }
            command.output().unwrap()
        })
    };
    let out = run(Vec::new()).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("not tested: tool 'query_callers' was never exercised"),
        "{stdout}"
    );
    // Every tool of the service is behind the dead backend: allowed by name, none is a gap.
    let idle: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("not tested: tool '"))
        .filter_map(|l| l.split_once('\'').map(|(tool, _)| tool.to_owned()))
        .collect();
    let out = run(idle).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!stdout.contains("was never exercised"), "{stdout}");
}

/// A service bridging three servers (server-everything, server-memory and a Python server
/// whose tool list is paged and changes) passes, in two runs of the tester, each against a
/// gateway of its own serving all three: one calling server-everything's tools, one the other
/// two's (as one run, 24-33 s in the test run).
#[tokio::test(flavor = "multi_thread")]
async fn a_service_bridging_more_servers_passes_for_server_everything_s_tools() {
    let report = bridging_three_servers(|provider| provider == "everything").await;
    keep(&report, "bridge-everything-memory-paged");
    let unicode = report.checks.iter().find(|c| c.name == "unicode").unwrap();
    assert!(unicode.cases > 0, "echoing tools were found and checked");
    // server-everything offers resources and prompts: they were read and rendered.
    let catalog = report
        .checks
        .iter()
        .find(|c| c.name == "resources-prompts")
        .unwrap();
    assert!(catalog.passed >= 8, "{}", report.render());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_bridging_more_servers_passes_for_the_other_servers_tools() {
    let report = bridging_three_servers(|provider| provider != "everything").await;
    keep(&report, "bridge-everything-memory-paged-others");
}

/// The tester against a service bridging three servers, calling the tools of the providers
/// `calls` picks (by the provider part of each tool's `qualified_name`); every check passed and
/// every tool it called exercised.
async fn bridging_three_servers(calls: impl Fn(&str) -> bool) -> conformance::Report {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "providers:\n{}{}  - {{ name: paged, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
        everything_provider("everything"),
        memory_provider("memory", dir.path()),
        venv_python(),
        fixture("paged_dynamic_server.py")
    );
    let gw = Gateway::start("many", &extra).await;
    let listed = get(&gw, "/tools").await;
    let only: Vec<String> = listed.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            let qualified = t["qualified_name"].as_str().unwrap();
            calls(qualified.split_once('.').unwrap().0)
        })
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(only.len() >= 5, "{only:?} of {}", listed.body);
    // add_tool would change the tool list under the test on purpose; it has its own test.
    let mut options = tester_options(gw.port, &[&SKIPPED[..], &["add_tool"]].concat(), false);
    options.only_tools = only;
    let report = run_tester(options).await;
    assert!(report.ok(), "{}", report.render());
    assert!(
        report.not_exercised().is_empty(),
        "tools whose every valid call failed to run:\n{}",
        report.render()
    );
    report
}

/// A tester meeting the service's rate limit: a call answered 429 did not run the tool, so it
/// is never a pass and its (absent) `data` is never checked against the output schema (that
/// once read as "null is not of type object" for every call past the limit).
#[tokio::test(flavor = "multi_thread")]
async fn calls_refused_by_the_rate_limit_count_as_not_run_not_as_results() {
    let extra = format!(
        "security: {{ rate_limit: 40 }}\nproviders:\n{}",
        time_provider("time")
    );
    let gw = Gateway::start("limited", &extra).await;
    let report = conformance(gw.port, &[], false).await;
    let rendered = report.render();
    assert!(
        rendered.contains("RATE_LIMITED"),
        "the limit was met:\n{rendered}"
    );
    let output = report.checks.iter().find(|c| c.name == "tool-output");
    assert!(
        output.is_none_or(|c| c.failed == 0),
        "a 429 was read as a result:\n{rendered}"
    );
}
