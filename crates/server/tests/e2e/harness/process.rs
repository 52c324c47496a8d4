//! The gateway under test as a process: the real `mcp-http-gateway` binary started on a
//! config written for the test, waited for until it serves, signalled, waited for until it
//! exits, and its JSON log read; and its children as /proc sees them.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;
use testkit::{free_port, until};

use super::fixtures::{service_yaml, write_shipped_config};

/// The binary under test, built by cargo for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_mcp-http-gateway");

/// The gateway running as a child of the test; killed when dropped unless it already exited.
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
        Gateway::spawn_on(name, free_port(), extra, env)
    }

    /// As [`Gateway::spawn_env`], on `port` (a test that must know it before the start, to
    /// name the service's URL elsewhere).
    pub fn spawn_on(name: &str, port: u16, extra: &str, env: &[(&str, &str)]) -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&config, service_yaml(name, port, extra)).unwrap();
        Gateway::serve(config, port, dir, env)
    }

    /// `serve --config CONFIG`, the config being in `dir`.
    pub fn serve(
        config: PathBuf,
        port: u16,
        dir: tempfile::TempDir,
        env: &[(&str, &str)],
    ) -> Gateway {
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

    /// Starts the binary with `args`; `port` is where the test will talk to it, `dir` holds
    /// `config` and the log.
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

    /// As [`Gateway::start`], with extra environment variables for the gateway.
    pub async fn start_env(name: &str, extra: &str, env: &[(&str, &str)]) -> Gateway {
        let mut gateway = Gateway::spawn_env(name, extra, env);
        gateway.wait_running().await;
        gateway
    }

    /// Waits (at most 60 s) until /health says the service runs (HEALTHY, DEGRADED, or
    /// UNAVAILABLE when no tool can run); panics with the log if
    /// the process exits first.
    pub async fn wait_running(&mut self) {
        let client = reqwest::Client::new();
        let url = self.url("/health");
        let outcome = until(Duration::from_secs(60), || {
            let exited = self.try_exit();
            let health = client.get(&url).send();
            async move {
                if let Some(status) = exited {
                    return Some(Err(status));
                }
                let body = health.await.ok()?.json::<Value>().await.ok()?;
                // 503 (no tool can run) carries the report in meta.health.
                let report = if body["data"].is_object() {
                    &body["data"]
                } else {
                    &body["meta"]["health"]
                };
                let state = report["state"].as_str().unwrap_or_default();
                matches!(state, "HEALTHY" | "DEGRADED" | "UNAVAILABLE").then_some(Ok(()))
            }
        })
        .await;
        match outcome {
            Some(Ok(())) => {}
            Some(Err(status)) => panic!(
                "gateway exited with {status} before it was ready:\n{}",
                self.logs()
            ),
            None => panic!("gateway not ready within 60 s:\n{}", self.logs()),
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
        match until(within, || std::future::ready(self.try_exit())).await {
            Some(status) => status,
            None => panic!("gateway still running after {within:?}:\n{}", self.logs()),
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
            // Under scripts/test.sh (coverage) the gateway is asked to stop first: a process
            // killed outright writes no coverage profile, and its lines would count as never
            // run. It is then waited for in the background (`stopping`), not by the test.
            if std::env::var_os("MHG_TEST_STOP_GRACEFULLY").is_some() {
                // SAFETY: kill(2) on our own child's pid.
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                stopping::wait_for(child);
                return;
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Gateways asked to stop with SIGTERM, waited for by one background thread rather than by
/// the test that dropped them: a gateway's stop lasts as long as its stdio MCP servers take
/// to exit, and server-everything outlives its closed stdin until rmcp's SIGTERM, 3 s later
/// (MCP's stdio shutdown sequence), which made the e2e tests of a coverage run 45 % slower (341 s against 236 s). Each
/// is killed past [`STOP_DEADLINE`]; the ones still stopping when the test binary exits are
/// waited for then (atexit), so that none is left behind and every profile is written.
///
/// Under cargo-nextest (scripts/test.sh) each test is a process of its own, and that wait at
/// its exit would add its gateways' stop to every test (the median e2e test took 3.9 s). There
/// a gateway asked to stop is left to end by itself: its stop is bounded by its own drain grace
/// (`limits.shutdown_grace_ms`) and its children's stop, and it writes its profile then.
mod stopping {
    use std::process::Child;
    use std::sync::{Mutex, Once};
    use std::time::{Duration, Instant};

    const STOP_DEADLINE: Duration = Duration::from_secs(10);

    static STOPPING: Mutex<Vec<(Child, Instant)>> = Mutex::new(Vec::new());
    static REAPER: Once = Once::new();

    pub fn wait_for(child: Child) {
        if std::env::var("NEXTEST_EXECUTION_MODE").is_ok_and(|mode| mode == "process-per-test") {
            // Dropping a `Child` neither kills nor waits for it.
            drop(child);
            return;
        }
        REAPER.call_once(|| {
            std::thread::spawn(|| {
                loop {
                    reap();
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
            // SAFETY: registers a plain `extern "C" fn` with no arguments.
            unsafe { libc::atexit(reap_all) };
        });
        let deadline = Instant::now() + STOP_DEADLINE;
        STOPPING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((child, deadline));
    }

    /// Forgets the gateways that exited; kills those past their deadline. Whether any is
    /// still stopping.
    fn reap() -> bool {
        let mut stopping = STOPPING.lock().unwrap_or_else(|e| e.into_inner());
        stopping.retain_mut(|(child, deadline)| {
            if let Ok(Some(_)) = child.try_wait() {
                return false;
            }
            if Instant::now() >= *deadline {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
            true
        });
        !stopping.is_empty()
    }

    extern "C" fn reap_all() {
        while reap() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Starts the gateway on a shipped config of config/ with extra environment.
pub async fn start_shipped(file: &str, env: &[(&str, &str)]) -> Gateway {
    let port = free_port();
    let (dir, config) = write_shipped_config(file, port);
    let args = vec![
        "serve".into(),
        "--config".into(),
        config.to_string_lossy().into_owned(),
    ];
    let mut gateway = Gateway::spawn_with(args, port, dir, config, env);
    gateway.wait_running().await;
    gateway
}

fn children_of(pid: u32) -> Vec<u32> {
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
