//! What the end-to-end tests of the loadtest and wrappers crates share: free loopback ports,
//! child processes killed when the test ends, the workspace's built binaries, and polling with
//! a deadline (never a sleep as synchronisation).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// The checkout's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the checkout")
}

/// A loopback port nothing listens on (now).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A binary of this workspace, beside the running test's own (target/<profile>/).
pub fn workspace_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .join(name);
    assert!(
        bin.exists(),
        "{} is not built: run `cargo build -p {name}` (cargo test --workspace does)",
        bin.display()
    );
    bin
}

/// A child process killed (and reaped) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `check` until it gives a value, every 100 ms; panics naming `what` after `within`.
pub fn poll<T>(within: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
