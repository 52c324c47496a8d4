//! A pool of stdio children (`instances: N`): calls spread to the least-loaded live child, a
//! client session's calls stay on its pinned child, each child is restarted and reported on
//! its own, and children that list different tools are reported.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

fn pooled_everything(name: &str, instances: u32) -> String {
    format!(
        "limits: {{ call_timeout_ms: 60000 }}\nproviders:\n  - {{ name: {name}, kind: mcp, command: node, args: [\"{}\", stdio], instances: {instances} }}\n",
        everything_js()
    )
}

/// The pool's children as /health reports them.
async fn instances(gw: &Gateway, provider: &str) -> Vec<Value> {
    get(gw, "/health").await.report()["providers"][provider]["instances"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn in_flight(children: &[Value]) -> Vec<u64> {
    children
        .iter()
        .map(|c| c["calls_in_flight"].as_u64().unwrap())
        .collect()
}

/// Starts `n` calls of a 3 s operation, over REST.
fn slow_calls(gw: &Gateway, n: usize) -> Vec<tokio::task::JoinHandle<Answer>> {
    (0..n)
        .map(|_| {
            let url = gw.url("/call-tool");
            tokio::spawn(async move {
                let body = json!({"tool": "trigger-long-running-operation", "arguments": {"duration": 3, "steps": 1}});
                Answer::from(
                    reqwest::Client::new()
                        .post(url)
                        .json(&body)
                        .send()
                        .await
                        .unwrap(),
                )
                .await
            })
        })
        .collect()
}

#[tokio::test]
async fn calls_spread_over_the_children_and_each_is_restarted_on_its_own() {
    let gw = Gateway::start("pooled", &pooled_everything("everything", 2)).await;
    assert_eq!(gw.child_pids().len(), 2, "two children");
    let children = instances(&gw, "everything").await;
    assert_eq!(children.len(), 2, "{children:?}");
    for (k, child) in children.iter().enumerate() {
        assert_eq!(child["instance"], k as u64 + 1);
        assert_eq!(child["status"], "connected", "{child}");
        assert_eq!(child["restarts"], 0);
        assert!(child.get("tools_differ").is_none(), "{child}");
    }

    // Four calls at once: two on each child (one child would hold all four).
    let calls = slow_calls(&gw, 4);
    eventually(
        Duration::from_secs(10),
        "two calls on each child",
        || async { (in_flight(&instances(&gw, "everything").await) == [2, 2]).then_some(()) },
    )
    .await;
    for call in calls {
        assert_eq!(call.await.unwrap().status, 200);
    }

    // One child killed: the provider stays connected through the other, calls go there,
    // and only the killed child is restarted.
    let pids = gw.child_pids();
    // SAFETY: kill(2) on one of the gateway's children.
    unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) };
    let restarted = eventually(
        Duration::from_secs(30),
        "the killed child restarted",
        || async {
            let children = instances(&gw, "everything").await;
            let restarts: Vec<u64> = children
                .iter()
                .map(|c| c["restarts"].as_u64().unwrap())
                .collect();
            let connected = children.iter().all(|c| c["status"] == "connected");
            (connected && restarts.iter().sum::<u64>() == 1).then_some(restarts)
        },
    )
    .await;
    assert!(
        restarted.contains(&0),
        "the other child ran on: {restarted:?}"
    );
    let health = get(&gw, "/health").await;
    assert_eq!(
        health.report()["dependencies"]["everything"]["status"],
        "connected"
    );
    assert_eq!(gw.child_pids().len(), 2);
    assert!(
        gw.child_pids().contains(&pids[1]),
        "the other child is the same process"
    );
    for _ in 0..10 {
        assert_eq!(
            call(&gw, "echo", json!({"message": "hi"})).await.status,
            200
        );
    }
}

#[tokio::test]
async fn a_client_session_stays_on_one_child() {
    let gw = Gateway::start("pinned", &pooled_everything("everything", 2)).await;
    let session = McpSession::open(&gw).await;
    // Three calls of one MCP session at once: all on its pinned child.
    let calls: Vec<_> = (0..3)
        .map(|k| {
            let (client, url, id) = (session.client.clone(), session.url.clone(), session.id.clone());
            tokio::spawn(async move {
                McpSession::send(&client, &url, Some(&id), json!({"jsonrpc": "2.0", "id": 10 + k, "method": "tools/call",
                    "params": {"name": "trigger-long-running-operation", "arguments": {"duration": 3, "steps": 1}}}))
                .await
                .text()
                .await
                .unwrap()
            })
        })
        .collect();
    let loads = eventually(
        Duration::from_secs(10),
        "the three calls in flight",
        || async {
            let loads = in_flight(&instances(&gw, "everything").await);
            (loads.iter().sum::<u64>() == 3).then_some(loads)
        },
    )
    .await;
    assert!(
        loads.contains(&3),
        "one child holds the session's calls: {loads:?}"
    );
    for call in calls {
        assert!(call.await.unwrap().contains("\"result\""));
    }
}

#[tokio::test]
async fn children_that_list_other_tools_are_reported() {
    // The first child to start runs server-everything, the second mcp-server-time.
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "if mkdir '{first}' 2>/dev/null; then exec node '{js}' stdio; else exec '{time}' --local-timezone UTC; fi",
        first = dir.path().join("first").display(),
        js = everything_js(),
        time = time_bin()
    );
    let extra = format!(
        "providers:\n  - {{ name: mixed, kind: mcp, command: sh, args: [-c, {}], instances: 2 }}\n",
        serde_json::to_string(&script).unwrap()
    );
    let gw = Gateway::start("mixed", &extra).await;
    let children = instances(&gw, "mixed").await;
    let differ: Vec<&str> = children
        .iter()
        .filter_map(|c| c["tools_differ"].as_str())
        .collect();
    assert_eq!(
        differ.len(),
        1,
        "one child differs from the one served: {children:?}"
    );
    assert!(
        differ[0].contains("lacks") && differ[0].contains("also lists"),
        "{differ:?}"
    );
    assert!(gw.logs().contains("children disagree on tools/list"));
}
