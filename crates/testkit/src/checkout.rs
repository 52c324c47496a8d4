//! The checkout the tests run in: its root, and the services it ships in `config/`.

use std::path::{Path, PathBuf};

/// The checkout's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the checkout")
}

/// The per-client rate limit (requests per minute) of configs that tests drive in bulk.
pub const BULK_RATE_LIMIT: u64 = 10_000_000;

/// The shipped service configuration `config/<file>` as it is, but listening on `port`
/// (so tests run beside a running `scripts/run.sh` and beside each other), with the per-client
/// rate limit raised to [`BULK_RATE_LIMIT`].
pub fn shipped_config(file: &str, port: u16) -> String {
    let path = repo().join("config").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out: String = text
        .lines()
        .map(|l| {
            // The `service:` section's own port (dependencies have URLs, not ports).
            if l.starts_with("  port:") {
                format!("  port: {port}")
            } else if l.starts_with("  rate_limit:") {
                // A test is one client sending thousands of requests a minute (the conformance
                // tester, the load test); the per-client limit itself is tested on its own.
                format!("  rate_limit: {BULK_RATE_LIMIT}")
            } else {
                // Folders given relative to config/ (`${SEEKR_ROOTS:-..}`: the repository)
                // still name the repository from the copy's folder.
                l.replace(":-..}", &format!(":-{}}}", repo().display()))
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    out.push('\n');
    out
}
