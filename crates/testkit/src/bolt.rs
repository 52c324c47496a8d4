//! A Bolt database for the tests: ArcadeDB started by `scripts/bolt-db.sh` (the command users
//! run) on a free port with its own data folder, the fixture code graph loaded, stopped when
//! dropped.

use std::path::Path;
use std::process::Command;

use crate::checkout::repo;

/// ArcadeDB serving Bolt with `crates/server/tests/fixtures/code_graph.cypher` loaded; user
/// `root`, password `code-graph-rag` (the script's defaults).
pub struct BoltDb {
    pub port: u16,
    data: tempfile::TempDir,
}

impl BoltDb {
    pub fn start() -> BoltDb {
        let data = tempfile::tempdir().expect("a data folder");
        let fixture = repo().join("crates/server/tests/fixtures/code_graph.cypher");
        let port = BoltDb::run(
            data.path(),
            &[
                "--port",
                "0",
                "--load",
                fixture.to_str().expect("a UTF-8 path"),
            ],
        );
        BoltDb { port, data }
    }

    /// Starts it again on the same port and data (after [`BoltDb::stop`]).
    pub fn restart(&self) {
        BoltDb::run(self.data.path(), &["--port", &self.port.to_string()]);
    }

    /// Runs `bolt-db.sh start` and reads the port from the `BOLT_URL=` line it prints.
    fn run(data: &Path, extra: &[&str]) -> u16 {
        let out = Command::new(repo().join("scripts/bolt-db.sh"))
            .arg("start")
            .arg("--data")
            .arg(data)
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
        url.rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("a port in BOLT_URL={url}"))
    }

    pub fn stop(&self) {
        let out = self.stop_command().expect("scripts/bolt-db.sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn stop_command(&self) -> std::io::Result<std::process::Output> {
        Command::new(repo().join("scripts/bolt-db.sh"))
            .arg("stop")
            .arg("--data")
            .arg(self.data.path())
            .output()
    }

    pub fn uri(&self) -> String {
        format!("bolt://127.0.0.1:{}", self.port)
    }
}

impl Drop for BoltDb {
    fn drop(&mut self) {
        let _ = self.stop_command();
    }
}
