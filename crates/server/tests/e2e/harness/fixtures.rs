//! What the gateway is run against and the configs that name it: the installed MCP servers and
//! the fixture files of tests/fixtures, provider entries and whole service configs in YAML,
//! the shipped configs of config/ on a test's port, server-everything on an HTTP port, and the
//! LiteLLM proxy as a real OpenAI-compatible upstream. (The Bolt database is testkit's.)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
pub use testkit::BoltDb;
pub use testkit::installed::{everything_js, inspector_cli, time_bin, venv_python};
use testkit::installed::{litellm_bin, memory_js};
use testkit::{Killed, eventually, free_port, shipped_config, until};

/// Runs a Python fixture program (with the venv that has the official MCP SDK) to its end and
/// reads the JSON object it prints last; panics with its output when it fails.
pub async fn run_python(args: Vec<String>) -> serde_json::Value {
    run_python_with_stderr(args).await.0
}

/// [`run_python`], also answering what the program wrote on stderr.
pub async fn run_python_with_stderr(args: Vec<String>) -> (serde_json::Value, String) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new(venv_python()).args(&args).output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (
        serde_json::from_str(stdout.lines().last().unwrap()).unwrap(),
        stderr,
    )
}

/// Runs a Node fixture program (the official TypeScript SDK comes from .deps/node_modules) to
/// its end and reads the JSON object it prints last; panics with its output when it fails.
pub async fn run_node(args: Vec<String>) -> serde_json::Value {
    let out = tokio::task::spawn_blocking(move || Command::new("node").args(&args).output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

/// A Node fixture server of crates/server/tests/fixtures: `node FILE ARGS… PORT`, once it
/// listens on `port`.
pub async fn start_node_server_on(file: &str, args: &[&str], port: u16) -> Killed {
    let mut server = Command::new("node");
    server.arg(fixture(file)).args(args).arg(port.to_string());
    listening(server, port, file).await
}

/// A file of crates/server/tests/fixtures.
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

/// A service config: `extra` is YAML appended after the `service:` section (other sections
/// and `providers:`).
/// Unless `extra` has its own `security:` section, the per-client rate limit is raised: a test
/// is one client, and some send thousands of requests a minute.
pub fn service_yaml(name: &str, port: u16, extra: &str) -> String {
    let security = if extra.contains("security:") {
        String::new()
    } else {
        format!("security: {{ rate_limit: {} }}\n", testkit::BULK_RATE_LIMIT)
    };
    format!(
        "service: {{ name: {name}, port: {port} }}\nlogging: {{ level: info, format: json }}\n{security}{extra}"
    )
}

/// A shipped config file of config/, on `port`, written into a fresh folder.
pub fn write_shipped_config(file: &str, port: u16) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join(file);
    std::fs::write(&config, shipped_config(file, port)).unwrap();
    (dir, config)
}

/// server-everything serving one HTTP transport (`sse` or `streamableHttp`) on `port`,
/// listening when this returns.
pub async fn start_everything_on(mode: &str, port: u16) -> Killed {
    let mut server = Command::new("node");
    server
        .args([everything_js().as_str(), mode])
        .env("PORT", port.to_string());
    listening(server, port, "server-everything").await
}

/// `server` started with its output dropped, once it listens on `port` (30 s at most).
async fn listening(mut server: Command, port: u16, what: &str) -> Killed {
    let child = Killed(
        server
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    eventually(
        Duration::from_secs(30),
        &format!("{what} listening"),
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

/// A Python fixture server of crates/server/tests/fixtures serving Streamable HTTP on `port`
/// (`--http PORT`), once it listens.
pub async fn start_python_server_on(file: &str, port: u16) -> Killed {
    let mut server = Command::new(venv_python());
    server.args([fixture(file).as_str(), "--http", &port.to_string()]);
    listening(server, port, file).await
}

/// The LiteLLM proxy (installed by scripts/install-litellm.sh) with the mock models of
/// tests/fixtures/litellm.yaml: a real OpenAI-compatible server without weights or network.
pub struct LiteLlm {
    pub port: u16,
    _process: Killed,
}

/// The key the fixture's proxy accepts.
pub const LITELLM_KEY: &str = "sk-gateway-test-key";

impl LiteLlm {
    pub async fn start() -> LiteLlm {
        LiteLlm::start_on(free_port()).await
    }

    pub async fn start_on(port: u16) -> LiteLlm {
        let log = std::fs::File::create(std::env::temp_dir().join(format!("litellm-{port}.log")))
            .unwrap();
        // A clean environment: the proxy reads HOST, PORT, DATABASE_URL, … from it, and
        // LITELLM_MODE=PRODUCTION keeps it from loading a .env file.
        let child = Command::new(litellm_bin())
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
        let mut process = Killed(child);
        let client = reqwest::Client::new();
        let url = format!("http://127.0.0.1:{port}/health/liveliness");
        let ready = until(Duration::from_secs(90), || {
            let exited = process.0.try_wait().ok().flatten();
            let live = client.get(&url).send();
            async move {
                if let Some(status) = exited {
                    return Some(Err(status));
                }
                live.await
                    .is_ok_and(|r| r.status().is_success())
                    .then_some(Ok(()))
            }
        })
        .await;
        match ready {
            Some(Ok(())) => {}
            Some(Err(status)) => panic!("litellm exited with {status} before it was ready"),
            None => panic!("litellm not ready within 90 s"),
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

/// A real OTLP/HTTP receiver (tests/fixtures/otlp_receiver.py) on loopback, writing each span
/// it is sent as a JSON line.
pub struct OtlpReceiver {
    pub port: u16,
    file: PathBuf,
    _dir: tempfile::TempDir,
    _process: Killed,
}

impl OtlpReceiver {
    /// Started, and answering (a GET is not an export: 501).
    pub async fn start() -> OtlpReceiver {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("spans.jsonl");
        let port = free_port();
        let process = Killed(
            Command::new(venv_python())
                .args([
                    fixture("otlp_receiver.py"),
                    port.to_string(),
                    file.to_string_lossy().into_owned(),
                ])
                .spawn()
                .unwrap(),
        );
        eventually(Duration::from_secs(20), "the OTLP receiver", || async {
            reqwest::get(format!("http://127.0.0.1:{port}/")).await.ok()
        })
        .await;
        OtlpReceiver {
            port,
            file,
            _dir: dir,
            _process: process,
        }
    }

    /// The `monitoring:` section that exports to this receiver.
    pub fn monitoring(&self) -> String {
        format!(
            "monitoring: {{ otlp_endpoint: \"http://127.0.0.1:{}\", otlp_timeout_ms: 5000 }}\n",
            self.port
        )
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Once at least `count` spans have arrived, all of them.
    pub async fn at_least(&self, count: usize) -> Vec<serde_json::Value> {
        eventually(Duration::from_secs(10), "the exported spans", || async {
            let spans = self.spans();
            (spans.len() >= count).then_some(spans)
        })
        .await
    }
}
