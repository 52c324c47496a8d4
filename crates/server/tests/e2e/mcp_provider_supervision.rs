//! The `mcp` provider's supervision of its stdio MCP servers: a killed child fails the call at
//! once and comes back; while a child stays down calls fail fast, naming it; no child outlives
//! the gateway, even when the gateway is SIGKILLed.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn a_child_killed_mid_call_fails_the_call_then_recovers() {
    let extra = format!(
        "limits: {{ call_timeout_ms: 60000 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("supervised", &extra).await;
    let before = gw.child_pids();
    assert_eq!(before.len(), 1, "one child: {before:?}");

    let started = Instant::now();
    let slow = tokio::spawn({
        let url = gw.url("/call-tool");
        async move {
            let body = json!({"tool": "trigger-long-running-operation", "arguments": {"duration": 30, "steps": 30}});
            Answer::from(
                reqwest::Client::new()
                    .post(url)
                    .json(&body)
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    });
    // Kill only once the call is in flight.
    eventually(
        Duration::from_secs(10),
        "the call to be in flight",
        || async { (get(&gw, "/health").await.body["data"]["active_calls"] == 1).then_some(()) },
    )
    .await;
    // SAFETY: kill(2) on the gateway's child.
    unsafe { libc::kill(before[0] as i32, libc::SIGKILL) };

    let a = slow.await.unwrap();
    a.assert_envelope();
    assert_eq!(
        (a.status.as_u16(), a.code()),
        (500, "EXECUTION_ERROR"),
        "{}",
        a.body
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "answered before the operation could have finished"
    );

    // Restarted with backoff: calls succeed again, through a new child.
    eventually(Duration::from_secs(30), "recovery", || async {
        (call(&gw, "echo", json!({"message": "back"})).await.status == 200).then_some(())
    })
    .await;
    let after = gw.child_pids();
    assert_eq!(after.len(), 1);
    assert_ne!(after, before, "a new child");
    // The reconnect is pushed to /health by the provider: no periodic check to wait for.
    eventually(Duration::from_secs(2), "healthy again", || async {
        (get(&gw, "/health").await.body["data"]["status"] == "healthy").then_some(())
    })
    .await;
    assert!(
        gw.logs().contains("MCP server unavailable"),
        "the crash is logged"
    );
}

#[tokio::test]
async fn calls_fail_fast_while_the_child_is_down() {
    // Starts the real server once; while the `down` file exists, every restart fails.
    let dir = tempfile::tempdir().unwrap();
    let down = dir.path().join("down");
    let script = format!(
        "if [ -e '{down}' ]; then echo 'kept down by the test' >&2; exit 3; fi; exec node '{js}' stdio",
        down = down.display(),
        js = everything_js()
    );
    let extra = format!(
        "limits: {{ call_timeout_ms: 60000 }}\nproviders:\n  - {{ name: flaky, kind: mcp, command: sh, args: [-c, {}] }}\n",
        serde_json::to_string(&script).unwrap()
    );
    let gw = Gateway::start("flaky", &extra).await;
    assert_eq!(
        call(&gw, "echo", json!({"message": "up"})).await.status,
        200
    );
    std::fs::write(&down, "").unwrap();
    let child = gw.child_pids()[0];
    // SAFETY: kill(2) on the gateway's child.
    unsafe { libc::kill(child as i32, libc::SIGKILL) };

    // Its only provider is down: no tool can run.
    let health = until_dependency(&gw, "flaky", "unavailable", Duration::from_secs(10)).await;
    assert_eq!(health.status, 503);
    assert_eq!(health.report()["status"], "unavailable");
    assert!(
        health.report()["dependencies"]["flaky"]["error"]
            .as_str()
            .unwrap()
            .contains("retrying in")
    );
    // The tools stay listed and fail at once, naming the dependency.
    let started = Instant::now();
    let a = call(&gw, "echo", json!({"message": "down"})).await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (500, "EXECUTION_ERROR"));
    assert!(
        a.body["error"]
            .as_str()
            .unwrap()
            .contains("Dependency unavailable: MCP server 'flaky'"),
        "{}",
        a.body
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "no waiting for a reconnect"
    );
    eventually(
        Duration::from_secs(10),
        "the failing child's stderr in the log",
        || async { gw.logs().contains("kept down by the test").then_some(()) },
    )
    .await;

    std::fs::remove_file(&down).unwrap();
    eventually(
        Duration::from_secs(60),
        "recovery after the file is gone",
        || async {
            (call(&gw, "echo", json!({"message": "back"})).await.status == 200).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn no_child_outlives_a_sigkilled_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "providers:\n{}{}{}",
        everything_provider("everything"),
        time_provider("time"),
        memory_provider("memory", dir.path())
    );
    let mut gw = Gateway::start("orphans", &extra).await;
    let children = gw.child_pids();
    assert_eq!(children.len(), 3, "{children:?}");
    gw.signal(libc::SIGKILL);
    gw.wait_exit(Duration::from_secs(10)).await;
    eventually(Duration::from_secs(10), "every child gone", || async {
        children.iter().all(|pid| !alive(*pid)).then_some(())
    })
    .await;
}

/// A child killed under 100 calls in flight is restarted once, not once per failed call: once
/// /health says "connected" again, calls go through and keep going through, on the same new
/// child.
#[tokio::test(flavor = "multi_thread")]
async fn a_child_killed_under_many_calls_restarts_once() {
    let extra = format!(
        "limits: {{ call_timeout_ms: 60000, max_concurrent_calls: 200 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("many-in-flight", &extra).await;
    let before = gw.child_pids();
    assert_eq!(before.len(), 1, "one child: {before:?}");
    let client = reqwest::Client::new();
    let calls: Vec<_> = (0..100)
        .map(|_| {
            let request = client.post(gw.url("/call-tool")).json(&json!({
                "tool": "trigger-long-running-operation",
                "arguments": {"duration": 30, "steps": 30}
            }));
            tokio::spawn(async move { Answer::from(request.send().await.unwrap()).await })
        })
        .collect();
    eventually(Duration::from_secs(20), "100 calls in flight", || async {
        (get(&gw, "/health").await.body["data"]["active_calls"] == 100).then_some(())
    })
    .await;
    // SAFETY: kill(2) on the gateway's child.
    unsafe { libc::kill(before[0] as i32, libc::SIGKILL) };
    for call in calls {
        let a = call.await.unwrap();
        assert_eq!(a.code(), "EXECUTION_ERROR", "{}", a.body);
    }
    // From now on, whenever /health says "connected", a call goes through: it must never say
    // so for the dead child, nor for the new one before its handshake is done.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut seen_down, mut through) = (false, 0);
    while through < 5 {
        assert!(Instant::now() < deadline, "not connected again within 30 s");
        let state = get(&gw, "/health").await.report()["dependencies"]["everything"]["status"]
            .as_str()
            .unwrap()
            .to_owned();
        if state != "connected" {
            assert_eq!(through, 0, "connected, then {state} again");
            seen_down = true;
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let a = call(&gw, "echo", json!({"message": "after connected"})).await;
        assert_eq!(
            a.status, 200,
            "a call after /health said connected: {}",
            a.body
        );
        through += 1;
    }
    assert!(seen_down, "/health never said the killed child was down");
    let child = gw.child_pids();
    for i in 0..20 {
        let a = call(&gw, "echo", json!({"message": format!("after {i}")})).await;
        assert_eq!(
            a.status, 200,
            "call {i} after the first one went through: {}",
            a.body
        );
    }
    assert_eq!(gw.child_pids(), child, "the same child served them");
    let starts = gw.logs().matches("started MCP server").count();
    assert_eq!(starts, 2, "the first start and one restart:\n{}", gw.logs());
}
