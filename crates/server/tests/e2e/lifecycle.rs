//! Lifecycle: INITIALIZING answers 503, SIGTERM drains in-flight calls, SIGHUP reloads the
//! configuration without dropping connections and refuses a bad one.

use std::time::Duration;

use serde_json::json;

use crate::harness::*;

/// A provider entry for server-everything that starts only once `gate` exists.
fn gated_everything(gate: &std::path::Path) -> String {
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; exec node '{}' stdio",
        gate.display(),
        everything_js()
    );
    format!(
        "providers:\n  - {{ name: slow, kind: mcp, command: sh, args: [-c, {}] }}\n",
        serde_json::to_string(&script).unwrap()
    )
}

#[tokio::test]
async fn initializing_answers_503_except_health() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let extra = gated_everything(&gate);
    let mut gw = Gateway::spawn("starting", &extra);
    let health = eventually(Duration::from_secs(30), "the listener", || async {
        let response = reqwest::get(gw.url("/health")).await.ok()?;
        Some(Answer::from(response).await)
    })
    .await;
    health.assert_envelope();
    assert_eq!(
        (health.status.as_u16(), health.code()),
        (503, "SERVICE_UNAVAILABLE")
    );
    assert_eq!(health.body["meta"]["health"]["status"], "unavailable");
    assert_eq!(health.body["meta"]["health"]["state"], "INITIALIZING");
    assert!(health.headers.contains_key("retry-after"));
    for path in ["/tools", "/openapi.json"] {
        let a = get(&gw, path).await;
        a.assert_envelope();
        assert_eq!(
            (a.status.as_u16(), a.code()),
            (503, "SERVICE_UNAVAILABLE"),
            "{path}"
        );
        assert_eq!(a.headers["retry-after"], "1");
    }
    let a = call(&gw, "echo", json!({"message": "early"})).await;
    assert_eq!(a.code(), "SERVICE_UNAVAILABLE");

    std::fs::write(&gate, "").unwrap();
    gw.wait_running().await;
    assert_eq!(
        call(&gw, "echo", json!({"message": "now"})).await.status,
        200
    );
}

#[tokio::test]
async fn sigterm_answers_every_call_in_flight_then_exits_zero() {
    let extra = format!(
        "limits: {{ shutdown_grace_ms: 20000 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let mut gw = Gateway::start("draining", &extra).await;
    let children = gw.child_pids();
    let client = reqwest::Client::new();
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let client = client.clone();
            let url = gw.url("/call-tool");
            tokio::spawn(async move {
                // Arguments of its own per call: identical read-only calls in flight would share
                // one upstream call (resilience.cache.coalesce).
                let body = json!({"tool": "trigger-long-running-operation", "arguments": {"duration": 2, "steps": i + 1}});
                let a = Answer::from(client.post(url).json(&body).send().await.unwrap()).await;
                (i, a)
            })
        })
        .collect();
    eventually(Duration::from_secs(20), "20 calls in flight", || async {
        (get(&gw, "/health").await.body["data"]["active_calls"] == 20).then_some(())
    })
    .await;
    gw.signal(libc::SIGTERM);
    for call in calls {
        let (i, a) = call.await.unwrap();
        a.assert_envelope();
        assert_eq!(a.status, 200, "call {i}: {}", a.body);
        assert!(
            a.body["data"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("completed")
        );
    }
    let status = gw.wait_exit(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(0), "{}", gw.logs());
    for pid in children {
        assert!(!alive(pid), "child {pid} stopped with the gateway");
    }
    assert!(gw.logs().contains("SIGTERM: draining"));
}

#[tokio::test]
async fn sighup_adds_a_provider_and_keeps_connections() {
    let mut gw = Gateway::start(
        "reloading",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let everything_pid = gw.child_pids();
    let mut connection = RawConnection::open(&gw).await;
    let (status, tools) = connection.get("/tools").await;
    assert_eq!(status, 200);
    let has = |tools: &serde_json::Value, name: &str| {
        tools["data"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == name)
    };
    assert!(!has(&tools, "get_current_time"));

    let port = gw.port;
    let write =
        |extra: &str| std::fs::write(&gw.config, service_yaml("reloading", port, extra)).unwrap();
    write(&format!(
        "providers:\n{}{}",
        everything_provider("everything"),
        time_provider("time")
    ));
    gw.signal(libc::SIGHUP);
    let mut polls = 0;
    loop {
        let (status, tools) = connection.get("/tools").await;
        assert_eq!(status, 200);
        if has(&tools, "get_current_time") {
            break;
        }
        polls += 1;
        assert!(polls < 600, "new tools did not appear:\n{}", gw.logs());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        call(&gw, "get_current_time", json!({"timezone": "UTC"}))
            .await
            .status,
        200
    );
    assert!(
        gw.child_pids().contains(&everything_pid[0]),
        "the unchanged provider kept its child"
    );

    // An invalid file is refused; the running configuration stays.
    write("service: { oops\n");
    gw.signal(libc::SIGHUP);
    eventually(
        Duration::from_secs(10),
        "the refusal in the log",
        || async { gw.logs().contains("configuration refused").then_some(()) },
    )
    .await;
    // Two providers with the same tools: refused, naming both.
    write(&format!(
        "providers:\n{}{}",
        everything_provider("everything"),
        everything_provider("again")
    ));
    gw.signal(libc::SIGHUP);
    eventually(
        Duration::from_secs(30),
        "the duplicate refusal in the log",
        || async {
            gw.logs()
                .contains("is offered by both provider 'everything' and provider 'again'")
                .then_some(())
        },
    )
    .await;
    let (status, tools) = connection.get("/tools").await;
    assert_eq!(status, 200);
    assert!(has(&tools, "get_current_time") && has(&tools, "echo"));
    assert_eq!(
        gw.child_pids().len(),
        2,
        "the refused provider's child was stopped"
    );

    // Removing a provider stops its child.
    write(&format!(
        "providers:\n{}",
        everything_provider("everything")
    ));
    gw.signal(libc::SIGHUP);
    eventually(
        Duration::from_secs(20),
        "the time provider removed",
        || async {
            let tools = get(&gw, "/tools").await;
            (!has(&tools.body, "get_current_time") && gw.child_pids().len() == 1).then_some(())
        },
    )
    .await;
    gw.signal(libc::SIGTERM);
    assert_eq!(gw.wait_exit(Duration::from_secs(30)).await.code(), Some(0));
}

#[tokio::test]
async fn sigterm_while_initializing_stops_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("never");
    let extra = gated_everything(&gate);
    let mut gw = Gateway::spawn("never-ready", &extra);
    eventually(
        Duration::from_secs(30),
        "the listener, initializing",
        || async {
            let response = reqwest::get(gw.url("/health")).await.ok()?;
            (response.status() == 503).then_some(())
        },
    )
    .await;
    gw.signal(libc::SIGTERM);
    assert_eq!(
        gw.wait_exit(Duration::from_secs(20)).await.code(),
        Some(0),
        "{}",
        gw.logs()
    );
    assert!(gw.logs().contains("SIGTERM while starting: draining"));
}
