//! The `code-graph-index` binary from outside: a dry run over a small tree reports what it
//! found, and a database that is not there fails the run with its address (the end-to-end
//! test against a real database is crates/server/tests/e2e/code_graph_index.rs, which also
//! needs this binary built: an integration test here makes `cargo test --workspace` build it).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_code-graph-index");

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.py"),
        "def f():\n    g()\n\ndef g():\n    pass\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("b.ts"), "export function h() {}\n").unwrap();
    dir
}

#[test]
fn a_dry_run_counts_what_it_parsed() {
    let dir = tree();
    let out = Command::new(BIN)
        .args([
            "--repo",
            dir.path().to_str().unwrap(),
            "--project",
            "t",
            "--dry-run",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("2 files parsed"), "{err}");
    assert!(err.contains("3 functions"), "{err}");
    assert!(err.contains("1 CALLS"), "{err}");
}

#[test]
fn no_database_fails_with_its_address_and_a_bad_project_name_is_refused() {
    let dir = tree();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let uri = format!("bolt://127.0.0.1:{port}");
    let out = Command::new(BIN)
        .args([
            "--repo",
            dir.path().to_str().unwrap(),
            "--project",
            "t",
            "--uri",
            &uri,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&uri), "{err}");
    let out = Command::new(BIN)
        .args([
            "--repo",
            dir.path().to_str().unwrap(),
            "--project",
            "a.b",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
}
