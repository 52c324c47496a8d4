//! Replicas of one service behind a real HAProxy, sharing state in a real Redis, all on
//! loopback (docs/scaling.md): the rate limit holds across replicas (and, as a control, does
//! not without Redis), a replica killed under load costs only the requests it held, an MCP
//! session sticks to its owner and gets a clean 404 once the owner is gone, a 2026-07-28
//! stateless request works on any replica, a legacy SSE session's messages reach it through
//! any replica (forwarded to the owner, counted once in the rate limit), and a Redis outage
//! fails the limit open or closed and shows in /health and /metrics until Redis is back.
//!
//! `redis-server` and `haproxy` come from scripts/install-test-tools.sh (Debian packages). A
//! machine without them fails these tests, saying what to install: they never pass by
//! skipping.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{Killed, until};

use crate::harness::*;

const KEY: &str = "alice-key-0123456789";

/// `name` on PATH or in /usr/sbin (Debian puts haproxy there). Missing, the test fails:
/// scripts/install-test-tools.sh (run by the README's test command) installs it, and a test
/// that skips would pass while testing nothing.
fn tool(name: &str, package: &str) -> PathBuf {
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{name}` is not installed: run scripts/install-test-tools.sh (Debian package `{package}`)"
            )
        })
}

/// Both tools.
fn tools() -> (PathBuf, PathBuf) {
    (
        tool("redis-server", "redis-server"),
        tool("haproxy", "haproxy"),
    )
}

/// A redis-server on a free loopback port, without persistence; killed when dropped.
struct Redis {
    binary: PathBuf,
    port: u16,
    process: Option<Killed>,
    dir: tempfile::TempDir,
}

impl Redis {
    async fn start(binary: &Path) -> Redis {
        let mut redis = Redis {
            binary: binary.to_owned(),
            port: free_port(),
            process: None,
            dir: tempfile::tempdir().unwrap(),
        };
        redis.spawn().await;
        redis
    }

    /// Starts it (again, on the same port) and waits until it answers PING.
    async fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("redis.log")).unwrap();
        let child = Command::new(&self.binary)
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start redis-server");
        self.process = Some(Killed(child));
        let port = self.port;
        let up = until(Duration::from_secs(20), || async move {
            (redis_command(port, "PING").as_deref() == Some("+PONG")).then_some(())
        })
        .await;
        assert!(up.is_some(), "redis-server did not answer:\n{}", self.log());
    }

    fn kill(&mut self) {
        self.process = None;
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }
}

/// One inline command over RESP, its first reply line (`+PONG`), or `None`.
fn redis_command(port: u16, command: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    stream.write_all(format!("{command}\r\n").as_bytes()).ok()?;
    let mut buf = [0u8; 4096];
    let n = stream.read(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    Some(text.trim_end().to_owned())
}

/// HAProxy in front of `backends` (name, port), as docs/scaling.md configures it; killed when
/// dropped. Each answer says which replica served it in `X-Served-By`.
struct Haproxy {
    _process: Killed,
    port: u16,
    _dir: tempfile::TempDir,
}

/// deploy/haproxy/haproxy.cfg (docs/scaling.md) with a `server` line for each of `backends`
/// on loopback; it listens where HAPROXY_LISTEN says.
fn haproxy_cfg(backends: &[(String, u16)]) -> String {
    let servers: String = backends
        .iter()
        .map(|(name, p)| format!("    server {name} 127.0.0.1:{p} check\n"))
        .collect();
    format!(
        "{}{servers}",
        include_str!("../../../../deploy/haproxy/haproxy.cfg")
    )
}

impl Haproxy {
    async fn start(binary: &Path, backends: &[(String, u16)]) -> Haproxy {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let cfg = dir.path().join("haproxy.cfg");
        std::fs::write(&cfg, haproxy_cfg(backends)).unwrap();
        let log = std::fs::File::create(dir.path().join("haproxy.log")).unwrap();
        let child = Command::new(binary)
            .arg("-db")
            .arg("-f")
            .arg(&cfg)
            .env("HAPROXY_LISTEN", format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start haproxy");
        let haproxy = Haproxy {
            _process: Killed(child),
            port,
            _dir: dir,
        };
        // Every backend must be up (its checks passed) before the test counts on round robin.
        let client = reqwest::Client::new();
        let names: BTreeSet<String> = backends.iter().map(|(n, _)| n.clone()).collect();
        let seen = until(Duration::from_secs(30), || {
            let client = client.clone();
            let url = haproxy.url("/health");
            let names = names.clone();
            async move {
                let mut seen = BTreeSet::new();
                for _ in 0..names.len() * 3 {
                    let answer = client.get(&url).send().await.ok()?;
                    seen.insert(served_by(&answer)?);
                }
                (seen == names).then_some(seen)
            }
        })
        .await;
        assert!(
            seen.is_some(),
            "haproxy did not reach every replica:\n{}",
            std::fs::read_to_string(haproxy._dir.path().join("haproxy.log")).unwrap_or_default()
        );
        haproxy
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn served_by(answer: &reqwest::Response) -> Option<String> {
    Some(
        answer
            .headers()
            .get("x-served-by")?
            .to_str()
            .ok()?
            .to_owned(),
    )
}

/// A service config for one replica: `providers`, API key `alice`, metrics on, and `cluster`
/// when given (with replica id `name`).
fn replica_yaml(rate_limit: u64, cluster: Option<(&str, &str)>, providers: &str) -> String {
    let cluster = match cluster {
        Some((url, name)) => format!("cluster: {{ redis_url: \"{url}\", replica_id: {name} }}\n"),
        None => String::new(),
    };
    format!(
        "monitoring: {{ metrics_enabled: true }}\nsecurity:\n  rate_limit: {rate_limit}\n  api_keys:\n    - {{ name: alice, value_env: MHG_ALICE_KEY }}\n{cluster}providers:\n{providers}"
    )
}

/// `n` replicas (r0, r1, …) of service `shop` serving server-everything, running.
async fn replicas(n: usize, rate_limit: u64, redis: Option<&Redis>) -> Vec<Gateway> {
    replicas_of(n, rate_limit, redis, &everything_provider("everything")).await
}

/// `n` replicas (r0, r1, …) of service `shop` serving `providers`, running.
async fn replicas_of(
    n: usize,
    rate_limit: u64,
    redis: Option<&Redis>,
    providers: &str,
) -> Vec<Gateway> {
    let mut out = Vec::new();
    for i in 0..n {
        let name = format!("r{i}");
        let url = redis.map(Redis::url);
        let cluster = url.as_deref().map(|u| (u, name.as_str()));
        let yaml = replica_yaml(rate_limit, cluster, providers);
        out.push(Gateway::spawn_env("shop", &yaml, &[("MHG_ALICE_KEY", KEY)]));
    }
    for gw in &mut out {
        gw.wait_running().await;
    }
    out
}

fn backends(gws: &[Gateway]) -> Vec<(String, u16)> {
    gws.iter()
        .enumerate()
        .map(|(i, gw)| (format!("r{i}"), gw.port))
        .collect()
}

/// Sends `n` GET /tools with alice's key through `url`, 10 at a time; the statuses and which
/// replica served each.
async fn burst(url: &str, n: usize) -> Vec<(u16, Option<String>)> {
    let client = reqwest::Client::new();
    let mut out = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(10) {
        let answers = futures::future::join_all(chunk.iter().map(|_| {
            client
                .get(format!("{url}/tools"))
                .header("x-api-key", KEY)
                .send()
        }))
        .await;
        for answer in answers {
            let answer = answer.expect("haproxy answers");
            out.push((answer.status().as_u16(), served_by(&answer)));
        }
    }
    out
}

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

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_killed_under_load_costs_only_the_requests_it_held() {
    let (redis_bin, haproxy_bin) = tools();
    let redis = Redis::start(&redis_bin).await;
    let mut gws = replicas(3, testkit::BULK_RATE_LIMIT, Some(&redis)).await;
    let lb = Haproxy::start(&haproxy_bin, &backends(&gws)).await;
    let client = reqwest::Client::new();

    // Eight clients call a tool in a loop; each request's outcome, replica and time is kept.
    const CLIENTS: usize = 8;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|w| {
            let client = client.clone();
            let url = lb.url("/call-tool");
            let (stop, done) = (stop.clone(), done.clone());
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let sent = start.elapsed();
                    let answer = client
                        .post(&url)
                        .header("x-api-key", KEY)
                        .json(
                            &json!({"tool": "echo", "arguments": {"message": format!("{w}-{i}")}}),
                        )
                        .send()
                        .await;
                    let outcome = match answer {
                        Ok(a) => (a.status().as_u16(), served_by(&a)),
                        Err(_) => (0, None),
                    };
                    seen.push((sent, outcome));
                    done.fetch_add(1, Ordering::Relaxed);
                }
                seen
            })
        })
        .collect();
    let completed = |n: usize| {
        let done = done.clone();
        async move { (done.load(Ordering::Relaxed) >= n).then_some(()) }
    };
    // Kill r1 once the stream runs, and keep it running until as many requests again have
    // been answered (haproxy has taken r1 out by then: its checks run every 500 ms).
    eventually(Duration::from_secs(30), "300 requests answered", || {
        completed(300)
    })
    .await;
    let killed_at = start.elapsed();
    gws[1].signal(libc::SIGKILL);
    gws[1].wait_exit(Duration::from_secs(10)).await;
    let then = done.load(Ordering::Relaxed);
    eventually(
        Duration::from_secs(60),
        "1500 more requests answered",
        || completed(then + 1500),
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.await.unwrap());
    }
    let failed: Vec<_> = all.iter().filter(|(_, (s, _))| *s != 200).collect();
    let by: BTreeMap<String, usize> = all.iter().fold(BTreeMap::new(), |mut m, (_, (_, s))| {
        *m.entry(s.clone().unwrap_or_else(|| "none".into()))
            .or_default() += 1;
        m
    });
    eprintln!(
        "{} requests, {} failed ({failed:?}), by replica {by:?}, r1 killed at {killed_at:?}",
        all.len(),
        failed.len()
    );
    // At most the requests r1 held when it died (one per client at most) may fail, and only
    // those sent before it was gone.
    assert!(
        failed.len() <= CLIENTS,
        "{} failed, more than were in flight",
        failed.len()
    );
    for (sent, _) in &failed {
        assert!(
            *sent <= killed_at + Duration::from_millis(100),
            "a request sent at {sent:?}, after r1 died at {killed_at:?}, failed"
        );
    }
    let later: BTreeSet<_> = all
        .iter()
        .filter(|(sent, _)| *sent > killed_at + Duration::from_secs(1))
        .filter_map(|(_, (_, s))| s.clone())
        .collect();
    assert_eq!(
        later,
        BTreeSet::from(["r0".to_owned(), "r2".to_owned()]),
        "after the kill r0 and r2 serve"
    );
    // The shared usage counts every successful call of every replica (r1's own count may be
    // lost with it: its last batch dies with it).
    let ok = all.iter().filter(|(_, (s, _))| *s == 200).count() as u64;
    let usage = until(Duration::from_secs(10), || async {
        let health = reqwest::get(gws[0].url("/health")).await.ok()?;
        let body: Value = health.json().await.ok()?;
        let calls = body["data"]["cluster"]["usage"]["echo"]["calls"].as_u64()?;
        (calls + (CLIENTS as u64) * 2 >= ok).then_some(calls)
    })
    .await;
    assert!(usage.is_some(), "the shared usage counts about {ok} calls");
}

/// The value of the sample `name` in a /metrics text.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (series, value) = l.rsplit_once(' ')?;
        (series.split('{').next()? == name).then(|| value.parse().ok())?
    })
}

async fn cluster_of(gw: &Gateway) -> Option<Value> {
    let body: Value = reqwest::get(gw.url("/health"))
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    Some(body["data"]["cluster"].clone())
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
