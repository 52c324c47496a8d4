//! Read-only results shared across replicas (issue 35): a result kept by one replica under a
//! `resilience.cache` rule is found in Redis by another, which answers it as a hit without
//! calling its upstream; without Redis each replica calls its own (the control).

use std::time::Duration;

use serde_json::{Value, json};

use super::{KEY, Redis, redis_command, replicas_of, tools};
use crate::harness::*;

/// The fault server of tests/fixtures, every call it receives written into `log`, its
/// `lookup` kept for a minute.
fn kept_lookup(log: &std::path::Path) -> String {
    format!(
        "  - name: faulty
    kind: mcp
    command: \"{}\"
    args: [\"{}\"]
    env: {{ FAULT_LOG: \"{}\" }}
    resilience: {{ cache: {{ tools: [ {{ tool: lookup, ttl_ms: 60000 }} ] }} }}
",
        venv_python(),
        fixture("fault_mcp_server.py"),
        log.display()
    )
}

async fn lookup(gw: &Gateway) -> Value {
    let answer = reqwest::Client::new()
        .post(gw.url("/call-tool"))
        .header("x-api-key", KEY)
        .json(&json!({"tool": "lookup", "arguments": {"key": "shared"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    answer.json().await.unwrap()
}

fn received(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_result_kept_by_one_replica_answers_the_same_call_on_another() {
    let (redis_bin, _) = tools();
    let redis = Redis::start(&redis_bin).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("shared.log");
    let gws = replicas_of(
        2,
        testkit::BULK_RATE_LIMIT,
        Some(&redis),
        &kept_lookup(&log),
    )
    .await;
    let first = lookup(&gws[0]).await;
    assert_eq!(first["meta"]["cache"], "miss", "{first}");
    // Shared without waiting: r1 asks once it is in Redis.
    eventually(Duration::from_secs(10), "the result in Redis", || async {
        redis_command(redis.port, "KEYS mcp-http-gateway:shop:result:*")
            .filter(|keys| keys.contains("result:"))
    })
    .await;
    let second = lookup(&gws[1]).await;
    assert_eq!(second["meta"]["cache"], "hit", "{second}");
    assert_eq!(second["data"], first["data"]);
    assert_eq!(received(&log), 1, "both replicas called the upstream");

    // The control: without Redis, each replica calls its own.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("alone.log");
    let gws = replicas_of(2, testkit::BULK_RATE_LIMIT, None, &kept_lookup(&log)).await;
    assert_eq!(lookup(&gws[0]).await["meta"]["cache"], "miss");
    assert_eq!(lookup(&gws[1]).await["meta"]["cache"], "miss");
    assert_eq!(received(&log), 2);
}
