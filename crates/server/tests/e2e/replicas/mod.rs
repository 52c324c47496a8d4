//! Replicas of one service behind a real HAProxy, sharing state in a real Redis, all on
//! loopback (docs/scaling.md): the rate limit holds across replicas (and, as a control, does
//! not without Redis), a replica killed under load costs only the requests it held, an MCP
//! session sticks to its owner and gets a clean 404 once the owner is gone, a 2026-07-28
//! stateless request works on any replica, a legacy SSE session's messages reach it through
//! any replica (forwarded to the owner, counted once in the rate limit), a task is read and
//! cancelled through any replica, and a Redis outage fails the limit open or closed and shows
//! in /health and /metrics until Redis is back.
//!
//! `redis-server` and `haproxy` come from scripts/install-test-tools.sh (Debian packages). A
//! machine without them fails these tests, saying what to install: they never pass by
//! skipping.
//!
//! ```text
//! mod.rs          the programs (Redis, HAProxy, replicas) and the replica killed under load
//! rate_limits.rs  the rate limits shared through Redis, and a Redis outage
//! sessions.rs     MCP sessions: sticky, stateless, legacy SSE forwarded to the owner
//! tasks.rs        tasks (REST and MCP) read and cancelled through another replica
//! ```

mod rate_limits;
mod results;
mod sessions;
mod tasks;

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
/// on loopback; it listens where HAPROXY_LISTEN says. Without `sticky`, its stick table is
/// left out: plain round robin, as a Kubernetes Service or a cloud balancer does.
fn haproxy_cfg(backends: &[(String, u16)], sticky: bool) -> String {
    let servers: String = backends
        .iter()
        .map(|(name, p)| format!("    server {name} 127.0.0.1:{p} check\n"))
        .collect();
    let shipped = include_str!("../../../../../deploy/haproxy/haproxy.cfg");
    let config: String = shipped
        .lines()
        .filter(|line| sticky || !line.trim_start().starts_with("stick"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(sticky || !config.contains("stick"), "{config}");
    format!("{config}{servers}")
}

impl Haproxy {
    async fn start(binary: &Path, backends: &[(String, u16)]) -> Haproxy {
        Haproxy::start_with(binary, backends, true).await
    }

    /// The balancer without its stick table: each request to the next replica in turn.
    pub(crate) async fn round_robin(binary: &Path, backends: &[(String, u16)]) -> Haproxy {
        Haproxy::start_with(binary, backends, false).await
    }

    async fn start_with(binary: &Path, backends: &[(String, u16)], sticky: bool) -> Haproxy {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let cfg = dir.path().join("haproxy.cfg");
        std::fs::write(&cfg, haproxy_cfg(backends, sticky)).unwrap();
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

async fn cluster_of(gw: &Gateway) -> Option<Value> {
    let body: Value = reqwest::get(gw.url("/health"))
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    Some(body["data"]["cluster"].clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_killed_under_load_costs_only_the_requests_it_held() {
    let (redis_bin, haproxy_bin) = tools();
    let redis = Redis::start(&redis_bin).await;
    let mut gws = replicas(3, testkit::BULK_RATE_LIMIT, Some(&redis)).await;
    let lb = Haproxy::start(&haproxy_bin, &backends(&gws)).await;
    let client = reqwest::Client::new();

    // Each replica lists every replica up (cluster.replicas), and its status page links theirs.
    let listed = until(Duration::from_secs(10), || async {
        let cluster = cluster_of(&gws[0]).await?;
        (replica_ids(&cluster) == ["r0", "r1", "r2"]).then_some(cluster)
    })
    .await;
    let listed = match listed {
        Some(listed) => listed,
        None => panic!(
            "r0 lists r0, r1 and r2 within 10 s: {:?}",
            cluster_of(&gws[0]).await
        ),
    };
    for (i, replica) in listed["replicas"].as_array().unwrap().iter().enumerate() {
        assert_eq!(
            replica["address"],
            format!("127.0.0.1:{}", gws[i].port),
            "{replica}"
        );
        assert_eq!(replica["this"], i == 0, "{replica}");
        assert_eq!(replica["version"], env!("CARGO_PKG_VERSION"));
    }
    let page = crate::status_page::browse(&gws[0], &["--key", KEY]).await;
    assert!(page.success, "{}", page.output);
    let links: Vec<Value> = (0..3)
        .map(|i| {
            let this = if i == 0 { " (this one)" } else { "" };
            json!({"replica": format!("r{i}{this}"), "link": format!("http://127.0.0.1:{}/status", gws[i].port)})
        })
        .collect();
    assert_eq!(page.report["replicas"], json!(links), "{}", page.output);

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
    // The killed replica leaves the list when its record expires (5 s).
    let gone = until(Duration::from_secs(10), || async {
        (replica_ids(&cluster_of(&gws[0]).await?) == ["r0", "r2"]).then_some(())
    })
    .await;
    assert!(gone.is_some(), "r1 still listed 10 s after it was killed");
}

/// The ids in a `cluster` report's `replicas`.
fn replica_ids(cluster: &Value) -> Vec<String> {
    cluster["replicas"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["replica_id"].as_str().map(str::to_owned))
        .collect()
}
