//! The `loadtest` binary against a real gateway (a service with no providers: GET /tools and
//! GET /health only), briefly: the reports are written, a verdict that cannot pass exits 1, a
//! service that does not answer exits 2. (Faults injected upstream are tests/teeth.rs; the real
//! runs against the shipped services are scripts/loadtest-ci.sh.)

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use testkit::{Killed, free_port, poll, workspace_bin};

fn loadtest(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn verdicts_reports_and_exit_codes() {
    let work = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = work.path().join("bare.yaml");
    std::fs::write(
        &config,
        format!(
            "service: {{ name: bare, port: {port} }}\nsecurity: {{ rate_limit: {} }}\nproviders: []\n",
            testkit::BULK_RATE_LIMIT
        ),
    )
    .unwrap();
    let _gateway = Killed(
        Command::new(workspace_bin("mcp-http-gateway"))
            .args(["serve", "--config"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}");
    // Started: /tools answers 200 (while the service initializes it answers 503, which the
    // load run would count as failures).
    poll(Duration::from_secs(30), "the gateway to start", || {
        reqwest::blocking::get(format!("{url}/tools"))
            .ok()
            .filter(|answer| answer.status() == 200)
            .map(|_| ())
    });

    // Generous budgets: passes, with every report written.
    let report = work.path().join("ok");
    let (code, output) = loadtest(&[
        "--url",
        &url,
        "--users",
        "4",
        "--run-time",
        "1s",
        "--scenario",
        "tools",
        "--budget-p95-ms",
        "5000",
        "--latency-floor-ms",
        "2500",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{output}");
    for file in ["saturation.html", "summary.md", "summary.json"] {
        assert!(report.join(file).is_file(), "{file} missing");
    }
    let passed = summary(&report);
    assert_eq!(passed["passed"], true);
    let phases: Vec<&str> = passed["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["baseline", "saturation", "open loop"]);
    let open = &passed["phases"][2];
    assert_eq!(open["users"], 4);
    assert!(open["total"]["requests"].as_u64().unwrap() > 0);
    assert_eq!(open["total"]["failures"], 0);
    assert_eq!(open["lost"], 0);
    // The open loop runs at 0.2 × what the saturation phase measured.
    let rate = 0.2 * passed["phases"][1]["total"]["rps"].as_f64().unwrap();
    assert!(
        open["pacing"]
            .as_str()
            .unwrap()
            .contains(&format!("{rate:.0} req/s")),
        "{open}"
    );
    assert!(output.contains("| GET /tools |"), "{output}");

    // A budget no service meets: exit 1, the verdict says what was measured.
    let report = work.path().join("strict");
    let (code, output) = loadtest(&[
        "--url",
        &url,
        "--users",
        "2",
        "--run-time",
        "1s",
        "--scenario",
        "health",
        "--budget-p95-ms",
        "0.0001",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{output}");
    let failed = summary(&report);
    assert_eq!(failed["passed"], false);
    assert_eq!(failed["verdicts"][2]["name"], "open-loop p95 ≤ 0.0001 ms");
    assert_eq!(failed["verdicts"][2]["passed"], false);
    assert_eq!(failed["verdicts"][0]["passed"], true, "no request failed");

    // A call scenario on a service without tools says so; nothing listening: exit 2.
    let (code, output) = loadtest(&["--url", &url, "--run-time", "1s", "--scenario", "call"]);
    assert_eq!(code, 2);
    assert!(output.contains("no tool of this service"), "{output}");
    let (code, output) = loadtest(&["--url", &format!("http://127.0.0.1:{}", free_port())]);
    assert_eq!(code, 2);
    assert!(output.contains("cannot reach"), "{output}");
}
