//! The rate limits of replicas sharing Redis: the per-client limit holds across replicas behind
//! HAProxy and a tool's own limit across replicas called in turn (and, as a control, neither
//! does without Redis); a Redis outage fails the limit open or closed, shows in /health and
//! /metrics, and ends when Redis is back.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{
    Haproxy, KEY, Redis, backends, burst, cluster_of, replica_yaml, replicas, replicas_of, tools,
};
use crate::harness::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_holds_across_replicas_only_with_redis() {
    let (redis_bin, haproxy_bin) = tools();
    let redis = Redis::start(&redis_bin).await;

    // Three replicas sharing Redis: 60 a minute for alice, whichever replica she reaches.
    let shared = replicas(3, 60, Some(&redis)).await;
    let lb = Haproxy::start(&haproxy_bin, &backends(&shared)).await;
    let started = Instant::now();
    let answers = burst(&lb.url(""), 100).await;
    let took = started.elapsed();
    let allowed = answers.iter().filter(|(s, _)| *s == 200).count();
    let refused = answers.iter().filter(|(s, _)| *s == 429).count();
    let servers: BTreeSet<_> = answers.iter().filter_map(|(_, s)| s.clone()).collect();
    eprintln!("with redis: {allowed} allowed, {refused} refused of 100 in {took:?} by {servers:?}");
    assert_eq!(servers.len(), 3, "every replica took requests: {servers:?}");
    assert_eq!(allowed + refused, 100, "{answers:?}");
    // One more is allowed per second that passes: exact when the burst takes under a second.
    let refilled = took.as_secs() as usize;
    assert!(
        (60..=60 + refilled).contains(&allowed),
        "60 a minute across 3 replicas: {allowed} allowed in {took:?}"
    );
    // The headers tell the shared allowance: one more request is refused with Retry-After.
    let last = reqwest::Client::new()
        .get(lb.url("/tools"))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(last.status(), 429);
    assert!(last.headers().contains_key("retry-after"));
    assert_eq!(
        last.headers()["ratelimit-policy"],
        "\"per-client\";q=60;w=60"
    );
    drop(lb);
    drop(shared);

    // The control: the same three replicas without Redis each allow 60.
    let alone = replicas(3, 60, None).await;
    let lb = Haproxy::start(&haproxy_bin, &backends(&alone)).await;
    let answers = burst(&lb.url(""), 200).await;
    let allowed = answers.iter().filter(|(s, _)| *s == 200).count();
    eprintln!("without redis: {allowed} allowed of 200");
    assert!(
        allowed >= 180,
        "without Redis each replica counts alone (3 × 60): {allowed} allowed"
    );
}

/// A tool's own limit (`limits.tools[].rate_limit`) is kept in Redis too: 10 calls of echo a
/// minute for alice, whichever of two replicas she calls (in turn, no load balancer needed);
/// without Redis each replica counts its own 10.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_rate_limit_holds_across_replicas_only_with_redis() {
    let (redis_bin, _) = tools();
    let redis = Redis::start(&redis_bin).await;
    let providers = format!(
        "  - {{ name: everything, kind: mcp, command: node, args: [\"{}\", stdio], limits: {{ tools: [{{ tool: echo, rate_limit: 10 }}] }} }}\n",
        everything_js()
    );
    let shared = replicas_of(2, 1000, Some(&redis), &providers).await;
    let started = Instant::now();
    let (allowed, refused) = echo_in_turn(&shared, 16).await;
    let took = started.elapsed();
    eprintln!("with redis: {allowed} allowed, {refused} refused of 16 in {took:?}");
    // One more call a 6 s: exact when the calls take less.
    let refilled = (took.as_secs() / 6) as usize;
    assert!(
        (10..=10 + refilled).contains(&allowed) && allowed + refused == 16,
        "10 echo calls a minute across 2 replicas: {allowed} allowed, {refused} refused in {took:?}"
    );
    drop(shared);

    // The control: without Redis each replica allows 10, so all 16 pass.
    let alone = replicas_of(2, 1000, None, &providers).await;
    assert_eq!(echo_in_turn(&alone, 16).await, (16, 0));
}

/// `n` echo calls with alice's key, to each replica in turn; how many were allowed and how
/// many refused as RATE_LIMITED.
async fn echo_in_turn(gws: &[Gateway], n: usize) -> (usize, usize) {
    let client = reqwest::Client::new();
    let (mut allowed, mut refused) = (0, 0);
    for i in 0..n {
        let answer = client
            .post(gws[i % gws.len()].url("/call-tool"))
            .header("x-api-key", KEY)
            .json(&json!({"tool": "echo", "arguments": {"message": "x"}}))
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        let body: Value = answer.json().await.unwrap();
        match status {
            200 => allowed += 1,
            429 => {
                assert_eq!(body["code"], "RATE_LIMITED", "{body}");
                assert_eq!(body["meta"]["tool"], "echo", "{body}");
                refused += 1;
            }
            _ => panic!("echo answered {status}: {body}"),
        }
    }
    (allowed, refused)
}

/// The value of the sample `name` in a /metrics text.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (series, value) = l.rsplit_once(' ')?;
        (series.split('{').next()? == name).then(|| value.parse().ok())?
    })
}

async fn tools_status(gw: &Gateway) -> u16 {
    reqwest::Client::new()
        .get(gw.url("/tools"))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_down_fails_the_limit_open_or_closed_shows_it_and_recovers() {
    let (redis_bin, _) = tools();
    let mut redis = Redis::start(&redis_bin).await;
    let cluster = |mode: &str| {
        format!(
            "cluster: {{ redis_url: \"{}\", rate_limit_on_redis_error: {mode}, timeout_ms: 200 }}\n",
            redis.url()
        )
    };
    let base = replica_yaml(100, None, &everything_provider("everything"));
    let open = Gateway::start_env(
        "shop",
        &format!("{}{base}", cluster("open")),
        &[("MHG_ALICE_KEY", KEY)],
    )
    .await;
    let closed = Gateway::start_env(
        "shop",
        &format!("{}{base}", cluster("closed")),
        &[("MHG_ALICE_KEY", KEY)],
    )
    .await;
    for gw in [&open, &closed] {
        eventually(Duration::from_secs(10), "redis connected", || async {
            (cluster_of(gw).await?["redis"] == "connected").then_some(())
        })
        .await;
        assert_eq!(tools_status(gw).await, 200);
    }
    let report = cluster_of(&open).await.unwrap();
    assert_eq!(report["rate_limit_on_redis_error"], "open");
    assert!(
        report["replica_id"]
            .as_str()
            .unwrap()
            .ends_with(&format!(":{}", open.port))
    );

    redis.kill();
    for gw in [&open, &closed] {
        let down = eventually(Duration::from_secs(10), "redis down in /health", || async {
            let body: Value = reqwest::get(gw.url("/health"))
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            (body["data"]["cluster"]["redis"] == "down").then_some(body)
        })
        .await;
        assert_eq!(down["data"]["status"], "degraded", "{down}");
        assert!(down["data"]["cluster"]["last_error"].is_string(), "{down}");
        let text = reqwest::Client::new()
            .get(gw.url("/metrics"))
            .header("x-api-key", KEY)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(
            metric(&text, "mcp_http_gateway_cluster_redis_up"),
            Some(0.0),
            "{text}"
        );
        assert!(
            metric(&text, "mcp_http_gateway_cluster_redis_errors_total").unwrap() >= 1.0,
            "{text}"
        );
    }
    assert_eq!(tools_status(&open).await, 200, "open: requests pass");
    let refused = reqwest::Client::new()
        .get(closed.url("/tools"))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429, "closed: requests are refused");
    assert_eq!(refused.headers()["retry-after"], "1");

    // Back on the same port, empty (the script is loaded again on NOSCRIPT).
    redis.spawn().await;
    for gw in [&open, &closed] {
        eventually(Duration::from_secs(15), "redis connected again", || async {
            (cluster_of(gw).await?["redis"] == "connected").then_some(())
        })
        .await;
    }
    let counted = reqwest::Client::new()
        .get(closed.url("/tools"))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(counted.status(), 200);
    assert_eq!(counted.headers()["ratelimit"], "\"per-client\";r=99;t=1");
}
