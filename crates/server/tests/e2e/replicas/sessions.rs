//! MCP sessions across replicas: a 2025-11-25 session sticks to its owner and gets a clean 404
//! once the owner is gone, a 2026-07-28 stateless request works on any replica, and a legacy
//! SSE session's messages reach it through any replica (forwarded to the owner, counted once
//! in the rate limit).

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use testkit::until;

use super::{
    Haproxy, KEY, Redis, backends, cluster_of, redis_command, replica_yaml, replicas, served_by,
    tools,
};
use crate::harness::*;

/// A 2026-07-28 request: no session, its protocol version and client in `_meta`.
fn stateless_echo(client: &reqwest::Client, url: &str, message: &str) -> reqwest::RequestBuilder {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"message": message},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "by-hand", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    client
        .post(url)
        .header("x-api-key", KEY)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .json(&body)
}

/// A 2025-11-25 session through `url` (the handshake done): its id and the replica holding it.
async fn open_session(client: &reqwest::Client, url: &str) -> (String, String) {
    let init = mcp_post(client, url, None, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
    .await;
    assert_eq!(init.status(), 200);
    let id = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let owner = served_by(&init).unwrap();
    let _ = init.text().await;
    let done = mcp_post(
        client,
        url,
        Some(&id),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert!(done.status().is_success(), "{}", done.status());
    (id, owner)
}

async fn mcp_post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> reqwest::Response {
    let mut request = client
        .post(url)
        .header("x-api-key", KEY)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body);
    if let Some(s) = session {
        request = request.header("mcp-session-id", s);
    }
    request.send().await.unwrap()
}

/// Two replicas sharing a Redis behind HAProxy's plain round robin (no stick table).
async fn round_robin_pair() -> (Redis, Vec<Gateway>, Haproxy) {
    let (redis_bin, haproxy_bin) = tools();
    let redis = Redis::start(&redis_bin).await;
    let gws = replicas(2, testkit::BULK_RATE_LIMIT, Some(&redis)).await;
    let lb = Haproxy::round_robin(&haproxy_bin, &backends(&gws)).await;
    (redis, gws, lb)
}

/// The JSON-RPC message of an answer (JSON, or the first one in an SSE stream).
async fn rpc(answer: reqwest::Response) -> Value {
    let text = answer.text().await.unwrap();
    serde_json::from_str(&text).ok().unwrap_or_else(|| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str(d.trim()).ok())
            .unwrap_or_else(|| panic!("no JSON-RPC message in: {text}"))
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_stick_to_their_replica_and_a_dead_owner_means_404_then_a_new_session() {
    let (redis_bin, haproxy_bin) = tools();
    let redis = Redis::start(&redis_bin).await;
    let mut gws = replicas(3, testkit::BULK_RATE_LIMIT, Some(&redis)).await;
    let lb = Haproxy::start(&haproxy_bin, &backends(&gws)).await;
    let client = reqwest::Client::new();
    let mcp = lb.url("/mcp");

    // A 2026-07-28 request needs no session and no stickiness: every replica answers it.
    let mut stateless = BTreeSet::new();
    for i in 0..6 {
        let answer = stateless_echo(&client, &mcp, &format!("s{i}"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        stateless.insert(served_by(&answer).unwrap());
        let message = rpc(answer).await;
        assert_eq!(
            message["result"]["content"][0]["text"],
            format!("Echo: s{i}"),
            "{message}"
        );
    }
    assert_eq!(stateless.len(), 3, "round robin reached {stateless:?}");

    // A session sticks to its owner across many requests (round robin would send two thirds
    // of them to replicas that answer 404).
    let (id, owner) = open_session(&client, &mcp).await;
    for i in 0..30 {
        let answer = mcp_post(&client, &mcp, Some(&id), json!({"jsonrpc": "2.0", "id": i + 2,
            "method": "tools/call", "params": {"name": "echo", "arguments": {"message": format!("m{i}")}}}))
        .await;
        assert_eq!(answer.status(), 200, "request {i}");
        assert_eq!(served_by(&answer).as_deref(), Some(owner.as_str()));
        assert_eq!(
            rpc(answer).await["result"]["content"][0]["text"],
            format!("Echo: m{i}")
        );
    }
    // Redis knows the owner.
    let record = until(Duration::from_secs(5), || async {
        let reply = redis_command(
            redis.port,
            &format!("GET mcp-http-gateway:shop:session:{id}"),
        )?;
        reply
            .contains(&format!("\"owner\":\"{owner}\""))
            .then_some(reply)
    })
    .await;
    assert!(record.is_some(), "a session record in redis names {owner}");

    // The owner dies: the session's next request reaches another replica, which answers a
    // clean 404 naming the owner; a new session works.
    let index: usize = owner.trim_start_matches('r').parse().unwrap();
    gws[index].signal(libc::SIGKILL);
    gws[index].wait_exit(Duration::from_secs(10)).await;
    let gone = mcp_post(
        &client,
        &mcp,
        Some(&id),
        json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}),
    )
    .await;
    assert_eq!(gone.status(), 404);
    assert_ne!(served_by(&gone).as_deref(), Some(owner.as_str()));
    let message = rpc(gone).await;
    assert_eq!(message["error"]["code"], -32001, "{message}");
    assert_eq!(
        message["error"]["data"]["owner"],
        owner.as_str(),
        "{message}"
    );
    let (again, new_owner) = open_session(&client, &mcp).await;
    assert_ne!(new_owner, owner);
    let answer = mcp_post(
        &client,
        &mcp,
        Some(&again),
        json!({"jsonrpc": "2.0", "id": 2,
        "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "again"}}}),
    )
    .await;
    assert_eq!(answer.status(), 200);
    assert_eq!(
        rpc(answer).await["result"]["content"][0]["text"],
        "Echo: again"
    );
}

/// Through a balancer with no affinity (round robin, no stick table), a session's requests
/// land on every replica in turn; those that reach another replica than its owner are sent on
/// to the owner (its Redis record says where), so every call of the session answers, and its
/// stream of notifications works from any replica too (issue 33).
#[tokio::test(flavor = "multi_thread")]
async fn a_session_works_through_round_robin_with_no_affinity() {
    let (_redis, gws, lb) = round_robin_pair().await;
    let client = reqwest::Client::new();
    let mcp = lb.url("/mcp");
    let (id, owner) = open_session(&client, &mcp).await;
    let mut reached = BTreeSet::new();
    for i in 0..10 {
        let answer = mcp_post(&client, &mcp, Some(&id), json!({"jsonrpc": "2.0", "id": i + 2,
            "method": "tools/call", "params": {"name": "echo", "arguments": {"message": format!("rr{i}")}}}))
        .await;
        assert_eq!(answer.status(), 200, "request {i}");
        reached.insert(served_by(&answer).unwrap_or_default());
        assert_eq!(
            rpc(answer).await["result"]["content"][0]["text"],
            format!("Echo: rr{i}"),
            "request {i}"
        );
    }
    // Round robin brought the calls to both replicas (X-Served-By is the one the balancer
    // reached); the one that is not the owner sent them on, or they would have been 404.
    assert_eq!(reached.len(), 2, "{reached:?}, owner {owner}");
    let forwarded = gws
        .iter()
        .flat_map(|gw| gw.log_lines())
        .filter(|l| {
            l["target"] == "mcp_session"
                && l["fields"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("could not be sent on"))
        })
        .count();
    assert_eq!(forwarded, 0, "every request reached the owner");
    // A GET stream of the session from whichever replica the balancer picks, and its end.
    let stream = client
        .get(&mcp)
        .header("x-api-key", KEY)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    drop(stream);
    let ended = client
        .delete(&mcp)
        .header("x-api-key", KEY)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
}

/// The next answers (`message` events with an `id`; the server's notifications are skipped) of
/// a legacy SSE stream, parsed, until `n` have come (10 s at most for each chunk).
async fn sse_messages(stream: &mut reqwest::Response, n: usize) -> Vec<Value> {
    let mut text = String::new();
    let mut messages = Vec::new();
    while messages.len() < n {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("{} of {n} messages came: {messages:?}", messages.len()))
            .unwrap()
            .expect("the stream stays open");
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            if event.starts_with("event: message") {
                let data = event
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .unwrap();
                let message: Value = serde_json::from_str(data).unwrap();
                if message.get("id").is_some() {
                    messages.push(message);
                }
            }
        }
    }
    messages
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_sse_session_takes_its_messages_through_any_replica_counted_once() {
    let (redis_bin, haproxy_bin) = tools();
    let redis = Redis::start(&redis_bin).await;
    // 21 requests a minute: the test sends 19 through the balancer, so a message counted
    // again by the replica it is forwarded to (12 of the 18 posts, round robin over 3) would
    // be refused.
    let gws = replicas(3, 21, Some(&redis)).await;
    let lb = Haproxy::start(&haproxy_bin, &backends(&gws)).await;
    // Each replica has read the forwarding secret (its first Redis round trip) before posts come.
    for gw in &gws {
        let seen = until(Duration::from_secs(10), || async {
            let report = cluster_of(gw).await?;
            (report["redis"] == "connected").then_some(())
        })
        .await;
        assert!(seen.is_some(), "a replica reached redis");
    }
    let client = reqwest::Client::new();
    let (mut stream, endpoint) = open_sse_at(&lb.url("/sse"), Some(KEY)).await;
    let owner = served_by(&stream).unwrap();
    let post = |body: Value| {
        let request = client
            .post(lb.url(&endpoint))
            .header("x-api-key", KEY)
            .json(&body)
            .send();
        async move {
            let answer = request.await.unwrap();
            let by = served_by(&answer).unwrap();
            (answer.status().as_u16(), by, answer.text().await.unwrap())
        }
    };
    let mut served = Vec::new();
    let (status, by, text) = post(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}}))
    .await;
    assert_eq!(status, 202, "{text}");
    served.push(by);
    let init = sse_messages(&mut stream, 1).await;
    assert_eq!(init[0]["id"], 0, "{init:?}");
    assert!(init[0]["result"]["serverInfo"].is_object(), "{init:?}");
    let (status, by, text) =
        post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!(status, 202, "{text}");
    served.push(by);
    for i in 1..=16 {
        let (status, by, text) = post(json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": format!("m{i}")}}}))
        .await;
        assert_eq!(status, 202, "message {i} (through {by}): {text}");
        served.push(by);
    }
    let elsewhere = served.iter().filter(|by| **by != owner).count();
    assert!(
        elsewhere >= 10,
        "most posts reached a replica other than the owner {owner}: {served:?}"
    );
    let mut answers = sse_messages(&mut stream, 16).await;
    answers.sort_by_key(|m| m["id"].as_u64());
    for (i, answer) in (1..=16).zip(&answers) {
        assert_eq!(answer["id"], i, "{answers:?}");
        assert_eq!(
            answer["result"]["content"][0]["text"],
            format!("Echo: m{i}"),
            "{answer}"
        );
    }
    // The session's record in Redis names its owner.
    let session = endpoint.rsplit('=').next().unwrap();
    let record = redis_command(
        redis.port,
        &format!("GET mcp-http-gateway:shop:session:{session}"),
    );
    assert!(
        record
            .as_deref()
            .is_some_and(|r| r.contains(&format!("\"owner\":\"{owner}\""))),
        "{record:?}"
    );
}

/// A 2026-07-28 call that waits for its client's input is held by one replica; its retry,
/// which round robin brings to either, is sent on to that one (the parked call's Redis record
/// says which), so every call ends with its result (issue 33).
#[tokio::test(flavor = "multi_thread")]
async fn a_parked_calls_retry_reaches_its_replica_through_round_robin() {
    let (_redis, _gws, lb) = round_robin_pair().await;
    let client = reqwest::Client::new();
    let mcp = lb.url("/mcp");
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientInfo": {"name": "by-hand", "version": "1"},
                      "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}});
    let post = |params: Value| {
        client
            .post(&mcp)
            .header("x-api-key", KEY)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "trigger-elicitation-request")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
            .send()
    };
    let mut crossed = 0;
    for i in 0..4 {
        let mut params =
            json!({"name": "trigger-elicitation-request", "arguments": {}, "_meta": meta});
        let mut holder: Option<String> = None;
        let mut done = None;
        // Every round's asks answered (a roots/list the server asks at start may come too).
        for _ in 0..4 {
            let answer = post(params.clone()).await.unwrap();
            let served = served_by(&answer).unwrap_or_default();
            if holder.as_ref().is_some_and(|h| *h != served) {
                crossed += 1;
            }
            let body = rpc(answer).await;
            let result = &body["result"];
            if result["resultType"] != "input_required" {
                done = Some(body);
                break;
            }
            holder = Some(served);
            let mut responses = serde_json::Map::new();
            for (key, request) in result["inputRequests"].as_object().unwrap() {
                let answer = match request["method"].as_str() {
                    Some("roots/list") => json!({"roots": []}),
                    _ => json!({"action": "decline"}),
                };
                responses.insert(key.clone(), answer);
            }
            // The record is written off the request path: the replica that does not hold
            // the call waits for it (as for a session's).
            params["requestState"] = result["requestState"].clone();
            params["inputResponses"] = Value::Object(responses);
        }
        let done = done.unwrap_or_else(|| panic!("call {i}: no result within 4 rounds"));
        assert!(
            done.to_string().contains("declined"),
            "call {i}: the retry reached the waiting call: {done}"
        );
    }
    assert!(
        crossed > 0,
        "round robin brought a retry to the other replica"
    );
}

/// A client's session bound holds across replicas: alice opens 3 of her 4 sessions on r0;
/// once r1 has read r0's counts from Redis, r1 grants her one more and refuses the next (429,
/// the bound named).
#[tokio::test(flavor = "multi_thread")]
async fn a_clients_session_bound_holds_across_replicas() {
    let (redis_bin, _) = tools();
    let redis = Redis::start(&redis_bin).await;
    let mut gws = Vec::new();
    for name in ["r0", "r1"] {
        let yaml = format!(
            "mcp: {{ max_sessions_per_client: 4 }}\n{}",
            replica_yaml(
                1000,
                Some((&redis.url(), name)),
                &everything_provider("everything")
            )
        );
        gws.push(Gateway::spawn_env("shop", &yaml, &[("MHG_ALICE_KEY", KEY)]));
    }
    for gw in &mut gws {
        gw.wait_running().await;
    }
    let client = reqwest::Client::new();
    let initialize = |gw: &Gateway| {
        client
            .post(gw.url("/mcp"))
            .header("x-api-key", KEY)
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "hoarder", "version": "1"}}}),
            )
            .send()
    };
    for _ in 0..3 {
        assert_eq!(initialize(&gws[0]).await.unwrap().status(), 200);
    }
    eventually(
        Duration::from_secs(20),
        "r1 reading r0's sessions",
        || async {
            let clients = get(&gws[1], "/health").await.body["data"]["clients"].clone();
            (clients["sessions_elsewhere"] == 3).then_some(())
        },
    )
    .await;
    assert_eq!(initialize(&gws[1]).await.unwrap().status(), 200);
    let refused = initialize(&gws[1]).await.unwrap();
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mcp.max_sessions_per_client is 4"),
        "{body}"
    );
}
