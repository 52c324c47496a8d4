//! Starting the real `mcp-http-gateway` binary on a free loopback port with a config written
//! for the test, talking to it over real sockets, and finding the real MCP servers that
//! `scripts/install-mcp-servers.sh` installed into `.deps/`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use contract::envelope;
pub use contract::envelope::is_millisecond_utc;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_mcp-http-gateway");

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// A file installed by scripts/install-mcp-servers.sh.
fn dep(relative: &str) -> String {
    let path = repo_root().join(".deps").join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-mcp-servers.sh first",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

pub fn everything_js() -> String {
    dep("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

pub fn memory_js() -> String {
    dep("node_modules/@modelcontextprotocol/server-memory/dist/index.js")
}

pub fn time_bin() -> String {
    dep("venv/bin/mcp-server-time")
}

pub fn venv_python() -> String {
    dep("venv/bin/python")
}

pub fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Provider entries (YAML flow mappings) for the real servers.
pub fn everything_provider(name: &str) -> String {
    format!(
        "  - {{ name: {name}, kind: mcp, command: node, args: [\"{}\", stdio] }}\n",
        everything_js()
    )
}

pub fn time_provider(name: &str) -> String {
    format!(
        "  - {{ name: {name}, kind: mcp, command: \"{}\", args: [--local-timezone, UTC] }}\n",
        time_bin()
    )
}

pub fn memory_provider(name: &str, dir: &Path) -> String {
    format!(
        "  - {{ name: {name}, kind: mcp, command: node, args: [\"{}\"], env: {{ MEMORY_FILE_PATH: \"{}\" }} }}\n",
        memory_js(),
        dir.join("memory.jsonl").display()
    )
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A service config: `extra` is YAML appended after the `service:` section (other sections
/// and `providers:`).
pub fn service_yaml(name: &str, port: u16, extra: &str) -> String {
    format!(
        "service: {{ name: {name}, port: {port} }}\nlogging: {{ level: info, format: json }}\n{extra}"
    )
}

pub struct Gateway {
    child: Option<Child>,
    pub port: u16,
    /// Holds the config and the log; removed with the gateway.
    _workdir: tempfile::TempDir,
    pub config: PathBuf,
    log: PathBuf,
    exit: Option<ExitStatus>,
}

impl Gateway {
    /// Writes `extra` into a config for service `name` on a free port and starts the binary.
    pub fn spawn(name: &str, extra: &str) -> Gateway {
        Gateway::spawn_env(name, extra, &[])
    }

    /// As [`Gateway::spawn`], with extra environment variables for the gateway.
    pub fn spawn_env(name: &str, extra: &str, env: &[(&str, &str)]) -> Gateway {
        let port = free_port();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&config, service_yaml(name, port, extra)).unwrap();
        Gateway::spawn_with(
            vec![
                "serve".into(),
                "--config".into(),
                config.to_string_lossy().into_owned(),
            ],
            port,
            dir,
            config,
            env,
        )
    }

    pub fn spawn_with(
        args: Vec<String>,
        port: u16,
        dir: tempfile::TempDir,
        config: PathBuf,
        env: &[(&str, &str)],
    ) -> Gateway {
        let log = dir.path().join("gateway.log");
        let out = std::fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        let child = Command::new(BIN)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .spawn()
            .expect("start mcp-http-gateway");
        Gateway {
            child: Some(child),
            port,
            _workdir: dir,
            config,
            log,
            exit: None,
        }
    }

    /// Starts and waits until /health says the service left INITIALIZING.
    pub async fn start(name: &str, extra: &str) -> Gateway {
        let mut gateway = Gateway::spawn(name, extra);
        gateway.wait_running().await;
        gateway
    }

    pub async fn wait_running(&mut self) {
        let client = reqwest::Client::new();
        let url = self.url("/health");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(response) = client.get(&url).send().await
                && let Ok(body) = response.json::<Value>().await
            {
                let state = body["data"]["state"].as_str().unwrap_or_default();
                if state == "HEALTHY" || state == "DEGRADED" {
                    return;
                }
            }
            if let Some(status) = self.try_exit() {
                panic!(
                    "gateway exited with {status} before it was ready:\n{}",
                    self.logs()
                );
            }
            assert!(
                Instant::now() < deadline,
                "gateway not ready within 60 s:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(self.pid() as i32, signal) };
        assert_eq!(rc, 0, "kill({signal})");
    }

    fn try_exit(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            self.exit = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
        }
        self.exit
    }

    /// Waits for the process to end (at most `within`).
    pub async fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.try_exit() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "gateway still running after {within:?}:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The JSON log lines.
    pub fn log_lines(&self) -> Vec<Value> {
        self.logs()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Direct children of the gateway process (the stdio MCP servers).
    pub fn child_pids(&self) -> Vec<u32> {
        children_of(self.pid())
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take()
            && self.exit.is_none()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub fn children_of(pid: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                pids.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok()),
                );
            }
        }
    }
    pids
}

/// True while a process exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or_default()
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// Polls `check` every 50 ms until it returns Some, failing after `within`.
pub async fn eventually<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One HTTP answer: status, headers, JSON body.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Answer {
    pub async fn from(response: reqwest::Response) -> Answer {
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
        Answer {
            status,
            headers,
            body,
        }
    }

    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }

    /// The contract's envelope rules ([`contract::envelope::check`]), the request id echoed
    /// in `X-Request-Id`, and a JSON content type: what every answer must meet.
    pub fn assert_envelope(&self) {
        if let Err(violations) = envelope::check(&self.body, self.status.as_u16()) {
            panic!("not the envelope ({violations}): {}", self.body);
        }
        let header = self
            .headers
            .get(contract::REQUEST_ID_HEADER)
            .map(|v| v.to_str().expect("X-Request-Id is text"));
        if let Err(violation) = envelope::check_request_id_header(&self.body, header) {
            panic!("{violation}: {}", self.body);
        }
        assert_eq!(self.headers["content-type"], "application/json");
    }
}

pub async fn get(gateway: &Gateway, path: &str) -> Answer {
    Answer::from(
        reqwest::Client::new()
            .get(gateway.url(path))
            .send()
            .await
            .unwrap(),
    )
    .await
}

pub async fn post_json(gateway: &Gateway, path: &str, body: &Value) -> Answer {
    Answer::from(
        reqwest::Client::new()
            .post(gateway.url(path))
            .json(body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

pub async fn call(gateway: &Gateway, tool: &str, arguments: Value) -> Answer {
    post_json(
        gateway,
        "/call-tool",
        &json!({"tool": tool, "arguments": arguments}),
    )
    .await
}

/// One HTTP/1.1 keep-alive connection, driven by hand so a test can tell it stayed open.
pub struct RawConnection {
    stream: tokio::io::BufReader<tokio::net::TcpStream>,
}

impl RawConnection {
    pub async fn open(gateway: &Gateway) -> RawConnection {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", gateway.port))
            .await
            .unwrap();
        RawConnection {
            stream: tokio::io::BufReader::new(stream),
        }
    }

    /// Sends a GET and reads the whole answer; panics if the server closed the connection.
    pub async fn get(&mut self, path: &str) -> (u16, Value) {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n");
        self.stream
            .get_mut()
            .write_all(request.as_bytes())
            .await
            .unwrap();
        let mut status_line = String::new();
        let n = self.stream.read_line(&mut status_line).await.unwrap();
        assert!(n > 0, "the server closed the keep-alive connection");
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).await.unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).await.unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }
}

/// A helper process (an upstream server) killed when the test ends, however it ends.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The LiteLLM proxy (installed by scripts/install-litellm.sh) with the mock models of
/// tests/fixtures/litellm.yaml: a real OpenAI-compatible server without weights or network.
pub struct LiteLlm {
    pub port: u16,
    _process: KillOnDrop,
}

/// The key the fixture's proxy accepts.
pub const LITELLM_KEY: &str = "sk-gateway-test-key";

impl LiteLlm {
    pub async fn start() -> LiteLlm {
        LiteLlm::start_on(free_port()).await
    }

    pub async fn start_on(port: u16) -> LiteLlm {
        let bin = dep("litellm-venv/bin/litellm");
        let log = std::fs::File::create(std::env::temp_dir().join(format!("litellm-{port}.log")))
            .unwrap();
        // A clean environment: the proxy reads HOST, PORT, DATABASE_URL, … from it, and
        // LITELLM_MODE=PRODUCTION keeps it from loading a .env file.
        let child = Command::new(bin)
            .args([
                "--config",
                &fixture("litellm.yaml"),
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .args(["--num_workers", "1", "--telemetry", "False"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .env("LITELLM_MODE", "PRODUCTION")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start litellm");
        let mut process = KillOnDrop(child);
        let client = reqwest::Client::new();
        let url = format!("http://127.0.0.1:{port}/health/liveliness");
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if client
                .get(&url)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                break;
            }
            if let Ok(Some(status)) = process.0.try_wait() {
                panic!("litellm exited with {status} before it was ready");
            }
            assert!(Instant::now() < deadline, "litellm not ready within 90 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The first completion is slow (lazy imports in the proxy): take it here, not in a
        // test with a short call timeout.
        let warm_up = client
            .post(format!("http://127.0.0.1:{port}/v1/chat/completions"))
            .bearer_auth(LITELLM_KEY)
            .json(&json!({"model": "mock-small", "messages": [{"role": "user", "content": "warm up"}]}))
            .send()
            .await
            .expect("litellm answers");
        assert!(
            warm_up.status().is_success(),
            "litellm warm-up: {}",
            warm_up.status()
        );
        LiteLlm {
            port,
            _process: process,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

/// A shipped config file of config/, on `port`, written into a fresh folder.
pub fn shipped_config(file: &str, port: u16) -> (tempfile::TempDir, PathBuf) {
    let text = std::fs::read_to_string(repo_root().join("config").join(file)).unwrap();
    let text: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("port:") {
                format!("  port: {port}")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join(file);
    std::fs::write(&config, text).unwrap();
    (dir, config)
}

/// Starts the gateway on a shipped config of config/ with extra environment.
pub async fn start_shipped(file: &str, env: &[(&str, &str)]) -> Gateway {
    let port = free_port();
    let (dir, config) = shipped_config(file, port);
    let args = vec![
        "serve".into(),
        "--config".into(),
        config.to_string_lossy().into_owned(),
    ];
    let mut gateway = Gateway::spawn_with(args, port, dir, config, env);
    gateway.wait_running().await;
    gateway
}

/// ArcadeDB serving Bolt, started by scripts/bolt-db.sh (the same command users run) on a
/// free port with its own data folder, the fixture code graph loaded.
pub struct BoltDb {
    pub port: u16,
    data: tempfile::TempDir,
}

impl BoltDb {
    pub fn start() -> BoltDb {
        let data = tempfile::tempdir().unwrap();
        let port = BoltDb::run(
            data.path(),
            &["--port", "0", "--load", &fixture("code_graph.cypher")],
        );
        BoltDb { port, data }
    }

    /// Starts it again on the same port and data (after [`BoltDb::stop`]).
    pub fn restart(&self) {
        BoltDb::run(self.data.path(), &["--port", &self.port.to_string()]);
    }

    fn run(data: &Path, extra: &[&str]) -> u16 {
        let out = Command::new(repo_root().join("scripts/bolt-db.sh"))
            .arg("start")
            .args(["--data", data.to_str().unwrap()])
            .args(extra)
            .output()
            .expect("scripts/bolt-db.sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "bolt-db.sh start failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = stdout
            .lines()
            .find_map(|l| l.strip_prefix("BOLT_URL="))
            .expect("BOLT_URL printed");
        url.rsplit(':').next().unwrap().parse().unwrap()
    }

    pub fn stop(&self) {
        let out = Command::new(repo_root().join("scripts/bolt-db.sh"))
            .args(["stop", "--data", self.data.path().to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn uri(&self) -> String {
        format!("bolt://127.0.0.1:{}", self.port)
    }
}

impl Drop for BoltDb {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("scripts/bolt-db.sh"))
            .args(["stop", "--data", self.data.path().to_str().unwrap()])
            .output();
    }
}

/// The MCP Inspector's command line, installed by scripts/install-mcp-servers.sh.
pub fn inspector_cli() -> String {
    dep("node_modules/@modelcontextprotocol/inspector/cli/build/cli.js")
}

/// A Streamable HTTP session driven by hand, JSON-RPC message by message.
pub struct McpSession {
    pub client: reqwest::Client,
    pub url: String,
    pub id: String,
}

impl McpSession {
    pub async fn open(gw: &Gateway) -> McpSession {
        let session = McpSession::initialize(gw, "t").await;
        session
            .post(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        session
    }

    /// A session after `initialize` only: the handshake is not finished.
    pub async fn initialize(gw: &Gateway, client_name: &str) -> McpSession {
        let client = reqwest::Client::new();
        let url = gw.url("/mcp");
        let init = McpSession::send(&client, &url, None, serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client_name, "version": "0.9"}}}))
        .await;
        let id = init.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let _ = init.text().await;
        McpSession { client, url, id }
    }

    pub async fn send(
        client: &reqwest::Client,
        url: &str,
        session: Option<&str>,
        body: Value,
    ) -> reqwest::Response {
        let mut request = client
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(s) = session {
            request = request.header("mcp-session-id", s);
        }
        request.send().await.unwrap()
    }

    pub async fn post(&self, body: Value) -> reqwest::Response {
        McpSession::send(&self.client, &self.url, Some(&self.id), body).await
    }

    /// Posts a request and returns its JSON-RPC answer (from JSON or the SSE stream).
    pub async fn ask(&self, body: Value) -> Value {
        let text = self.post(body).await.text().await.unwrap();
        if let Ok(message) = serde_json::from_str::<Value>(&text) {
            return message;
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in: {text}"))
    }
}

/// server-everything serving one HTTP transport (`sse` or `streamableHttp`) on `port`,
/// listening when this returns.
pub async fn start_everything_on(mode: &str, port: u16) -> KillOnDrop {
    let child = KillOnDrop(
        Command::new("node")
            .args([everything_js().as_str(), mode])
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    eventually(
        Duration::from_secs(30),
        "server-everything listening",
        || async {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()
                .map(|_| ())
        },
    )
    .await;
    child
}

/// Opens a legacy SSE session: the stream and the message URL its `endpoint` event names.
pub async fn open_sse(gw: &Gateway) -> (reqwest::Response, String) {
    let mut stream = reqwest::Client::new()
        .get(gw.url("/sse"))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let mut seen = String::new();
    while !seen.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        seen.starts_with("event: endpoint\ndata: /messages?sessionId="),
        "{seen}"
    );
    let endpoint = seen
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap()
        .to_owned();
    (stream, endpoint)
}

/// Polls GET /health until dependency `name` reports `state`; that /health answer.
pub async fn until_dependency(gw: &Gateway, name: &str, state: &str, within: Duration) -> Answer {
    eventually(within, &format!("{name} reported {state}"), || async {
        let health = get(gw, "/health").await;
        (health.body["data"]["dependencies"][name]["status"] == state).then_some(health)
    })
    .await
}
