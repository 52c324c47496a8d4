//! The command line: invalid configuration refused before listening, check-config, --help,
//! several services from one folder, the worker threads, and duplicate tool names at start.

use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn invalid_config_exits_nonzero_with_file_line_column() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.yaml");
    std::fs::write(
        &config,
        format!("service:\n  name: bad\n  port: {port}\nlimits:\n  call_timeout: 5\n"),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:5:3: unknown field `call_timeout`",
            config.display()
        )),
        "{stderr}"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens"
    );

    std::fs::write(&config, "service:\n  name: Bad_Name\n  port: 80\n").unwrap();
    let out = Command::new(BIN)
        .args(["check-config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:2:9: service name 'Bad_Name' must match",
            config.display()
        )),
        "{stderr}"
    );
}

#[test]
fn check_config_accepts_the_shipped_configs() {
    let out = Command::new(BIN)
        .args(["check-config"])
        .arg(repo().join("config"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok: service 'everything'"));
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["check-config", "--help"],
        vec!["openapi", "--help"],
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage:"),
            "{args:?}"
        );
    }
    let out = Command::new(BIN).args(["serve"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
}

/// The threads of `pid` that are tokio's workers (named `tokio-rt-worker`).
fn tokio_workers(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter(|t| {
            let comm = t.as_ref().unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|c| c.trim() == "tokio-rt-worker")
        })
        .count()
}

#[tokio::test]
async fn worker_threads_sets_the_runtime_size_and_is_bounded() {
    for (n, expected) in [("1", 1), ("3", 3)] {
        let port = free_port();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("w.yaml");
        std::fs::write(&config, service_yaml("w", port, "")).unwrap();
        let args = [
            "serve",
            "--worker-threads",
            n,
            "--config",
            config.to_str().unwrap(),
        ];
        let mut gw = Gateway::spawn_with(
            args.iter().map(|a| a.to_string()).collect(),
            port,
            dir,
            config,
            &[],
        );
        gw.wait_running().await;
        assert_eq!(tokio_workers(gw.pid()), expected, "--worker-threads {n}");
        assert_eq!(get(&gw, "/health").await.status, 200);
    }
    for bad in ["0", "1025", "x"] {
        let out = Command::new(BIN)
            .args(["serve", "--worker-threads", bad, "--config", "unused.yaml"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--worker-threads {bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--worker-threads"),
            "{bad}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn openapi_subcommand_prints_the_committed_document() {
    let out = Command::new(BIN).arg("openapi").output().unwrap();
    let committed = std::fs::read_to_string(repo().join("openapi/openapi.yaml")).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), committed);
}

#[tokio::test]
async fn config_dir_runs_each_service_on_its_own_port() {
    let dir = tempfile::tempdir().unwrap();
    let (p1, p2) = (free_port(), free_port());
    std::fs::write(
        dir.path().join("one.yaml"),
        service_yaml(
            "one",
            p1,
            &format!("providers:\n{}", everything_provider("everything")),
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("two.yaml"),
        service_yaml("two", p2, &format!("providers:\n{}", time_provider("time"))),
    )
    .unwrap();
    std::fs::write(dir.path().join("services.yaml"), "services: []\n").unwrap();
    let config = dir.path().join("one.yaml");
    let args = vec![
        "serve".into(),
        "--config-dir".into(),
        dir.path().to_string_lossy().into_owned(),
    ];
    let mut gw = Gateway::spawn_with(args, p1, tempfile::tempdir().unwrap(), config, &[]);
    gw.wait_running().await;
    let one = call(&gw, "echo", json!({"message": "1"})).await;
    assert_eq!(one.status, 200);
    eventually(Duration::from_secs(30), "service two ready", || async {
        let h = reqwest::get(format!("http://127.0.0.1:{p2}/health"))
            .await
            .ok()?;
        let v: serde_json::Value = h.json().await.ok()?;
        (v["data"]["state"] == "HEALTHY").then_some(())
    })
    .await;
    let two = Answer::from(
        reqwest::Client::new()
            .post(format!("http://127.0.0.1:{p2}/call-tool"))
            .json(&json!({"tool": "get_current_time", "arguments": {"timezone": "UTC"}}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(two.status, 200);
    assert_eq!(two.body["data"]["timezone"], "UTC");
    let tools_one = get(&gw, "/tools").await;
    assert_eq!(tools_one.body["data"]["service"], "one");
    gw.signal(libc::SIGTERM);
    assert_eq!(gw.wait_exit(Duration::from_secs(30)).await.code(), Some(0));
}

#[tokio::test]
async fn two_providers_with_one_tool_name_refuse_to_start() {
    let extra = format!(
        "providers:\n{}{}",
        everything_provider("first"),
        everything_provider("second")
    );
    let mut gw = Gateway::spawn("dupes", &extra);
    let status = gw.wait_exit(Duration::from_secs(60)).await;
    assert_eq!(status.code(), Some(1));
    let logs = gw.logs();
    assert!(
        logs.contains("is offered by both provider 'first' and provider 'second'"),
        "{logs}"
    );
}

#[tokio::test]
async fn a_port_in_use_is_said_once_and_exits_1() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("busy.yaml");
    std::fs::write(&config, service_yaml("busy", port, "providers: []\n")).unwrap();
    let args = vec![
        "serve".into(),
        "--config".into(),
        config.to_string_lossy().into_owned(),
    ];
    let mut gw = Gateway::spawn_with(args, port, dir, config, &[]);
    let status = gw.wait_exit(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(1));
    let logs = gw.logs();
    assert!(
        logs.contains(&format!(
            "service 'busy': cannot listen on 127.0.0.1:{port}"
        )),
        "{logs}"
    );
    assert_eq!(logs.matches("Address already in use").count(), 1, "{logs}");
}

/// `check-config` on a service whose gRPC providers are in the seed's `providers.yaml`: a
/// disabled entry is said (and not built), errors point into providers.yaml, and a folder of
/// configs does not take providers.yaml for a service.
#[test]
fn check_config_reads_providers_file_with_positions_into_it() {
    let dir = tempfile::tempdir().unwrap();
    let service = dir.path().join("hello.yaml");
    let providers = dir.path().join("providers.yaml");
    std::fs::write(
        &service,
        format!(
            "service: {{ name: hello, port: 8600 }}\nproviders:\n{}providers_file: providers.yaml\n",
            everything_provider("ev")
        ),
    )
    .unwrap();
    let check = |path: &std::path::Path| {
        let out = Command::new(BIN)
            .arg("check-config")
            .arg(path)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    std::fs::write(
        &providers,
        "providers:\n  - name: hello-go\n    type: grpc\n    address: localhost:50051\n    enabled: false\n    metadata:\n      version: 1.0.0\n      environment: development\n",
    )
    .unwrap();
    for path in [service.as_path(), dir.path()] {
        let (code, stdout, stderr) = check(path);
        assert_eq!(code, Some(0), "{stdout}{stderr}");
        assert!(
            stdout.contains(&format!(
                "{}: ok: service 'hello' on 127.0.0.1:8600, 1 provider(s)",
                service.display()
            )),
            "{stdout}"
        );
        assert!(
            stderr.contains(&format!(
                "note: {}:2:5: provider 'hello-go' has enabled: false; it is not started",
                providers.display()
            )),
            "{stderr}"
        );
    }

    std::fs::write(
        &providers,
        "providers:\n  - name: hello-go\n    type: grpc\n    address: localhost:50051\n    enabled: false\n  - name: hello-rs\n    type: grpcc\n    address: localhost:50052\n",
    )
    .unwrap();
    let (code, _, stderr) = check(&service);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:7:11: unknown provider type 'grpcc'",
            providers.display()
        )),
        "{stderr}"
    );

    std::fs::write(
        &providers,
        "providers:\n  - { name: ev, type: grpc, address: \"localhost:50052\", enabled: false }\n",
    )
    .unwrap();
    let (code, _, stderr) = check(&service);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:2:5: provider name 'ev' is used twice (first at {}:3:5)",
            providers.display(),
            service.display()
        )),
        "{stderr}"
    );

    std::fs::write(
        &providers,
        "providers:\n  - { name: hello-rs, type: grpc, address: \"localhost\", enabled: false }\n",
    )
    .unwrap();
    let (code, _, stderr) = check(&service);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:2:5: provider 'hello-rs': address 'localhost' must be host:port",
            providers.display()
        )),
        "{stderr}"
    );
}
