//! The processes a test starts: the workspace's binaries, and children that end with the test.

use std::path::{Path, PathBuf};
use std::process::Child;

/// A binary of this workspace, beside the running test's own (target/<profile>/). A crate's
/// own tests use `env!("CARGO_BIN_EXE_<name>")` instead, which cargo builds for them.
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

/// A child process killed (and reaped) when dropped, however the test ends.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
