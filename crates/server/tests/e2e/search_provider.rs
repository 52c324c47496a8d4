//! The built-in `search` provider on real files: every tool, path escapes (`..`, absolute,
//! symlinks out of a root), binary and 10 MB files, `.gitignore`, a change picked up by the
//! watcher, a deleted root, a restart that reuses the index, a stop during the first pass;
//! and the shipped seekr/docwell configs choosing it when no MCP command is set.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

/// A code tree with what the provider must handle: identifiers to split, a `.gitignore`d
/// folder and file, a binary file, a 10 MB file, and symbolic links leaving the root.
fn code_tree(root: &Path, outside: &Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("ignored")).unwrap();
    std::fs::copy(fixture("search/code/src/http.rs"), root.join("src/http.rs")).unwrap();
    std::fs::copy(fixture("search/code/app.py"), root.join("app.py")).unwrap();
    std::fs::write(root.join(".gitignore"), "ignored/\n*.env\n").unwrap();
    std::fs::write(
        root.join("ignored/hidden.rs"),
        "fn gitignored_marker_token() {}\n",
    )
    .unwrap();
    std::fs::write(root.join("local.env"), "TOKEN=gitignored_secret_value\n").unwrap();
    let mut blob = b"binary_marker_token\0\0\x01\x02".to_vec();
    blob.extend(std::iter::repeat_n(0u8, 1024));
    std::fs::write(root.join("blob.bin"), blob).unwrap();
    // 10 MB of text: over max_file_bytes, so not indexed; read_file answers it capped.
    let line = "fn oversized_marker_token() { let x = 1; } // padding padding padding\n";
    let big: String = line.repeat(10 * 1024 * 1024 / line.len() + 1);
    std::fs::write(root.join("big.rs"), big).unwrap();
    std::fs::write(outside.join("secret.rs"), "fn outside_secret() {}\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.rs"), root.join("escape.rs")).unwrap();
    std::os::unix::fs::symlink(outside, root.join("outside_dir")).unwrap();
}

fn search_provider(name: &str, roots: &[(&Path, &str)], extra: &str) -> String {
    let roots: Vec<String> = roots
        .iter()
        .map(|(p, kind)| format!("{{ path: \"{}\", kind: {kind} }}", p.display()))
        .collect();
    format!(
        "providers:\n  - {{ name: {name}, kind: search, roots: [{}]{extra} }}\n",
        roots.join(", ")
    )
}

/// /health's index report of provider `name` once `check` holds.
async fn index_when(gw: &Gateway, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    eventually(Duration::from_secs(60), what, || async {
        let health = get(gw, "/health").await;
        let index = health.report()["providers"][name]["index"].clone();
        check(&index).then_some(index)
    })
    .await
}

async fn ready(gw: &Gateway, name: &str) -> Value {
    index_when(gw, name, "index ready", |i| i["state"] == "ready").await
}

fn data(a: &Answer) -> &Value {
    assert_eq!(a.status, 200, "{}", a.body);
    &a.body["data"]
}

fn paths(hits: &Value, key: &str) -> Vec<String> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|h| h[key].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn code_tools_on_real_files_confined_to_their_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    code_tree(&root, &outside);
    let cache = dir.path().join("cache");
    let gw = Gateway::start_env(
        "code",
        &search_provider("code", &[(&root, "code")], ""),
        &[("XDG_CACHE_HOME", cache.to_str().unwrap())],
    )
    .await;
    let index = ready(&gw, "code").await;
    assert_eq!(index["skipped"]["binary"], 1, "{index}");
    assert_eq!(index["skipped"]["too_large"], 1, "{index}");
    assert_eq!(index["watcher"], "watching", "{index}");
    assert!(index["documents"].as_u64().unwrap() >= 2, "{index}");
    assert!(index["index_bytes"].as_u64().unwrap() > 0, "{index}");
    assert!(index["last_commit"].is_string(), "{index}");
    assert!(
        index["location"]
            .as_str()
            .unwrap()
            .starts_with(cache.to_str().unwrap()),
        "the index is under the cache folder: {index}"
    );
    let health = get(&gw, "/health").await;
    assert_eq!(health.report()["status"], "healthy", "{}", health.body);
    assert_eq!(health.report()["providers"]["code"]["kind"], "search");

    // search_code: identifiers split, ranked hits with a line range and the matching line.
    let a = call(&gw, "search_code", json!({"query": "parse http request"})).await;
    let hits = &data(&a)["hits"];
    assert_eq!(hits[0]["path"], "src/http.rs", "{hits}");
    let (from, to) = (
        hits[0]["start_line"].as_u64().unwrap(),
        hits[0]["end_line"].as_u64().unwrap(),
    );
    assert!(
        from <= 9 && 9 <= to,
        "line 9 defines parseHttpRequest: {hits}"
    );
    assert!(
        hits[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("parseHttpRequest"),
        "{hits}"
    );
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
    assert_eq!(hits[0]["language"], "rust");
    // The snake_case spelling finds the camelCase one, and the other way round.
    let a = call(&gw, "search_code", json!({"query": "maxHeaderBytes"})).await;
    assert_eq!(paths(&data(&a)["hits"], "path"), ["src/http.rs"]);
    // Filters.
    let a = call(
        &gw,
        "search_code",
        json!({"query": "settings", "language": "python"}),
    )
    .await;
    assert_eq!(paths(&data(&a)["hits"], "path"), ["app.py"]);
    let a = call(
        &gw,
        "search_code",
        json!({"query": "settings", "language": "rust"}),
    )
    .await;
    assert_eq!(data(&a)["count"], 0);
    let a = call(
        &gw,
        "search_code",
        json!({"query": "path", "path_glob": "src/**", "limit": 5}),
    )
    .await;
    assert!(
        paths(&data(&a)["hits"], "path")
            .iter()
            .all(|p| p.starts_with("src/")),
        "{}",
        a.body
    );
    // Not indexed: .gitignore'd, binary, too large, behind a link leaving the root.
    for (token, file) in [
        ("gitignored_marker_token", "ignored/hidden.rs"),
        ("gitignored_secret_value", "local.env"),
        ("binary_marker_token", "blob.bin"),
        ("oversized_marker_token", "big.rs"),
        ("outside_secret", "escape.rs"),
        ("outside_secret", "outside_dir/secret.rs"),
    ] {
        let a = call(&gw, "search_code", json!({"query": token})).await;
        let found = paths(&data(&a)["hits"], "path");
        assert!(!found.iter().any(|p| p == file), "{file}: {}", a.body);
    }

    // find_files: the indexed files only.
    let a = call(&gw, "find_files", json!({"glob": "*.rs"})).await;
    assert_eq!(paths(&data(&a)["files"], "path"), ["src/http.rs"]);
    let a = call(&gw, "find_files", json!({"glob": "*", "limit": 1})).await;
    assert_eq!(data(&a)["truncated"], true, "{}", a.body);

    // read_file: lines, capped, confined.
    let a = call(
        &gw,
        "read_file",
        json!({"path": "src/http.rs", "start_line": 9, "end_line": 9}),
    )
    .await;
    assert_eq!(
        data(&a)["text"],
        "pub fn parseHttpRequest(line: &str) -> Option<HttpRequest> {"
    );
    let a = call(&gw, "read_file", json!({"path": "big.rs"})).await;
    let text = data(&a)["text"].as_str().unwrap();
    assert_eq!(data(&a)["truncated"], true);
    assert!(
        text.len() <= 256 * 1024,
        "capped at max_read_bytes: {}",
        text.len()
    );
    for escape in [
        "../outside/secret.rs",
        "src/../../outside/secret.rs",
        "/etc/passwd",
        root.join("src/http.rs").to_str().unwrap(),
        "escape.rs",
        "outside_dir/secret.rs",
        "local.env",
        "ignored/hidden.rs",
    ] {
        let a = call(&gw, "read_file", json!({"path": escape})).await;
        a.assert_envelope();
        assert_eq!(a.code(), "INVALID_ARGUMENTS", "{escape}: {}", a.body);
    }
    let a = call(&gw, "read_file", json!({"path": "blob.bin"})).await;
    assert_eq!(a.code(), "EXECUTION_ERROR", "{}", a.body);
    let a = call(&gw, "read_file", json!({"path": "nope.rs"})).await;
    assert_eq!(a.code(), "EXECUTION_ERROR", "{}", a.body);

    // The watcher: a saved file is searchable without a restart; edited, then deleted.
    let saved = Instant::now();
    std::fs::write(root.join("src/fresh.rs"), "fn freshlyWrittenToken() {}\n").unwrap();
    let found = |query: &'static str| {
        let gw = &gw;
        move || async move {
            let a = call(gw, "search_code", json!({"query": query})).await;
            (a.body["data"]["count"] != 0).then_some(a)
        }
    };
    eventually(
        Duration::from_secs(20),
        "a new file searchable",
        found("freshly_written_token"),
    )
    .await;
    eprintln!("save → searchable: {} ms", saved.elapsed().as_millis());
    std::fs::write(root.join("src/fresh.rs"), "fn renamedAfterEdit() {}\n").unwrap();
    eventually(
        Duration::from_secs(20),
        "an edit searchable",
        found("renamed_after_edit"),
    )
    .await;
    let a = call(
        &gw,
        "search_code",
        json!({"query": "freshly_written_token"}),
    )
    .await;
    assert_eq!(data(&a)["count"], 0, "the old text is gone: {}", a.body);
    std::fs::remove_file(root.join("src/fresh.rs")).unwrap();
    eventually(Duration::from_secs(20), "a deleted file gone", || async {
        let a = call(&gw, "find_files", json!({"glob": "src/fresh.rs"})).await;
        (a.body["data"]["count"] == 0).then_some(())
    })
    .await;
    // A .gitignore'd file written now stays out.
    std::fs::write(root.join("ignored/late.rs"), "fn lateIgnoredToken() {}\n").unwrap();
    std::fs::write(root.join("src/after.rs"), "fn afterIgnoredToken() {}\n").unwrap();
    eventually(
        Duration::from_secs(20),
        "the later file searchable",
        found("after_ignored_token"),
    )
    .await;
    let a = call(&gw, "search_code", json!({"query": "late_ignored_token"})).await;
    let found = paths(&data(&a)["hits"], "path");
    assert!(!found.iter().any(|p| p == "ignored/late.rs"), "{}", a.body);
}

#[tokio::test]
async fn docs_tools_by_section() {
    let dir = tempfile::tempdir().unwrap();
    let docs = PathBuf::from(fixture("search/docs"));
    let gw = Gateway::start_env(
        "docs",
        &search_provider("docs", &[(&docs, "docs")], ", watch: false"),
        &[("XDG_CACHE_HOME", dir.path().to_str().unwrap())],
    )
    .await;
    let index = ready(&gw, "docs").await;
    assert_eq!(index["watcher"], "off");
    let tools: Vec<String> = get(&gw, "/tools").await.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, ["get_section", "list_documents", "search_docs"]);

    let a = call(&gw, "list_documents", json!({})).await;
    let listed = &data(&a)["documents"];
    assert_eq!(
        paths(listed, "document"),
        ["api.rst", "guide.md", "guide/notes.txt"]
    );
    assert_eq!(listed[1]["title"], "Guide");
    assert_eq!(listed[1]["format"], "markdown");
    assert_eq!(listed[1]["sections"], 4);
    assert_eq!(listed[0]["format"], "rst");

    let a = call(&gw, "search_docs", json!({"query": "folder searched"})).await;
    let hit = &data(&a)["hits"][0];
    assert_eq!(hit["document"], "guide.md", "{a:?}", a = a.body);
    assert_eq!(
        hit["heading_path"],
        json!(["Guide", "Configuration", "Roots"])
    );
    assert!(hit["snippet"].as_str().unwrap().contains("folder searched"));
    let a = call(
        &gw,
        "search_docs",
        json!({"query": "health endpoint progress"}),
    )
    .await;
    assert_eq!(
        data(&a)["hits"][0]["heading_path"],
        json!(["API", "Endpoints"])
    );
    let a = call(&gw, "search_docs", json!({"query": "release cadence"})).await;
    assert_eq!(data(&a)["hits"][0]["document"], "guide/notes.txt");

    let a = call(
        &gw,
        "get_section",
        json!({"document": "guide.md", "heading": "Install"}),
    )
    .await;
    assert_eq!(data(&a)["heading_path"], json!(["Guide", "Install"]));
    assert!(data(&a)["text"].as_str().unwrap().contains("installer"));
    let a = call(
        &gw,
        "get_section",
        json!({"document": "guide.md", "heading": "Guide > Configuration > Roots"}),
    )
    .await;
    assert!(
        data(&a)["text"]
            .as_str()
            .unwrap()
            .contains("not a heading, inside code")
    );
    let a = call(
        &gw,
        "get_section",
        json!({"document": "guide.md", "heading": "Nope"}),
    )
    .await;
    assert_eq!(a.code(), "EXECUTION_ERROR");
    assert!(
        a.body["error"]
            .as_str()
            .unwrap()
            .contains("Guide > Install"),
        "{}",
        a.body
    );
    for escape in ["../code/src/http.rs", "/etc/passwd"] {
        let a = call(
            &gw,
            "get_section",
            json!({"document": escape, "heading": "x"}),
        )
        .await;
        assert_eq!(a.code(), "INVALID_ARGUMENTS", "{escape}: {}", a.body);
    }
}

#[tokio::test]
async fn a_restart_reuses_the_index_and_a_deleted_root_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (a_root, b_root) = (dir.path().join("alpha"), dir.path().join("beta"));
    for (root, word) in [(&a_root, "alphaOnlyToken"), (&b_root, "betaOnlyToken")] {
        std::fs::create_dir_all(root).unwrap();
        for i in 0..20 {
            std::fs::write(
                root.join(format!("f{i}.rs")),
                format!("fn {word}{i}() {{}}\n"),
            )
            .unwrap();
        }
    }
    let cache = dir.path().join("cache");
    let env = [("XDG_CACHE_HOME", cache.to_str().unwrap())];
    let extra = search_provider("both", &[(&a_root, "code"), (&b_root, "code")], "");
    let mut gw = Gateway::start_env("both", &extra, &env).await;
    let first = ready(&gw, "both").await;
    assert_eq!(first["files"], 40, "{first}");
    assert_eq!(
        first["files_unchanged"], 0,
        "a new index reads every file: {first}"
    );
    // Two roots of one kind: paths name their root.
    let a = call(&gw, "find_files", json!({"glob": "beta/f1.rs"})).await;
    assert_eq!(data(&a)["count"], 1, "{}", a.body);
    gw.signal(libc::SIGTERM);
    assert_eq!(gw.wait_exit(Duration::from_secs(30)).await.code(), Some(0));

    // The same roots again: the index on disk is reused, no file is read again.
    let gw = Gateway::start_env("both", &extra, &env).await;
    let again = ready(&gw, "both").await;
    assert_eq!(again["location"], first["location"]);
    assert_eq!(again["files_unchanged"], 40, "{again}");
    let a = call(&gw, "search_code", json!({"query": "beta_only_token7"})).await;
    assert_eq!(data(&a)["hits"][0]["path"], "beta/f7.rs", "{}", a.body);

    // A root deleted while running: its files leave the index, /health names it, the
    // service is degraded and the other root still answers.
    std::fs::remove_dir_all(&b_root).unwrap();
    let index = index_when(&gw, "both", "the deleted root reported", |i| {
        i["missing_roots"].as_array().is_some_and(|m| !m.is_empty())
    })
    .await;
    assert!(
        index["missing_roots"][0]
            .as_str()
            .unwrap()
            .ends_with("beta"),
        "{index}"
    );
    let a = call(&gw, "find_files", json!({"glob": "beta/*"})).await;
    assert_eq!(data(&a)["count"], 0, "{}", a.body);
    let a = call(&gw, "search_code", json!({"query": "alpha_only_token3"})).await;
    assert_eq!(data(&a)["hits"][0]["path"], "alpha/f3.rs", "{}", a.body);
    let health = until_dependency(&gw, "both", "unknown", Duration::from_secs(10)).await;
    assert_eq!(health.report()["status"], "degraded", "{}", health.body);
    assert!(
        health.report()["dependencies"]["both"]["error"]
            .as_str()
            .unwrap()
            .contains("missing"),
        "{}",
        health.body
    );
}

#[tokio::test]
async fn the_service_starts_before_the_index_and_stops_during_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("many");
    for d in 0..30 {
        let sub = root.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..100 {
            std::fs::write(
                sub.join(format!("f{f}.rs")),
                format!("fn item_{d}_{f}() {{ let value = {f}; }}\n").repeat(20),
            )
            .unwrap();
        }
    }
    let mut gw = Gateway::start_env(
        "many",
        &search_provider("many", &[(&root, "code")], ""),
        &[("XDG_CACHE_HOME", dir.path().join("cache").to_str().unwrap())],
    )
    .await;
    // Serving while indexing: progress in /health, degraded until ready.
    let health = get(&gw, "/health").await;
    let index = &health.report()["providers"]["many"]["index"];
    if index["state"] == "building" {
        assert_eq!(health.report()["status"], "degraded", "{}", health.body);
        assert!(
            health.report()["dependencies"]["many"]["error"]
                .as_str()
                .unwrap()
                .contains("indexing")
        );
        // Every file can be read (100 %) while the index is still being committed.
        let percent = index["percent"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&percent), "{index}");
    }
    // A stop during (or after) the first pass ends the indexer thread promptly.
    gw.signal(libc::SIGTERM);
    let exit = gw.wait_exit(Duration::from_secs(20)).await;
    assert_eq!(exit.code(), Some(0), "{}", gw.logs());
}

#[tokio::test]
async fn shipped_seekr_and_docwell_serve_the_built_in_search_without_an_mcp_command() {
    let cache = tempfile::tempdir().unwrap();
    let code = fixture("search/code");
    let gw = start_shipped(
        "seekr.yaml",
        &[
            ("SEEKR_ROOTS", &code),
            ("XDG_CACHE_HOME", cache.path().to_str().unwrap()),
        ],
    )
    .await;
    ready(&gw, "seekr-search").await;
    let health = get(&gw, "/health").await;
    let providers = &health.report()["providers"];
    assert_eq!(providers["seekr"]["serving"], false, "{providers}");
    assert_eq!(providers["seekr"]["reason"], "SEEKR_MCP_COMMAND is not set");
    assert_eq!(providers["seekr-search"]["serving"], true);
    assert_eq!(providers["seekr-search"]["kind"], "search");
    assert_eq!(health.report()["status"], "healthy", "{}", health.body);
    let a = call(&gw, "search_code", json!({"query": "parseHttpRequest"})).await;
    assert_eq!(data(&a)["hits"][0]["path"], "src/http.rs");

    let gw = start_shipped(
        "docwell.yaml",
        &[
            ("DOCWELL_ROOTS", &fixture("search/docs")),
            ("XDG_CACHE_HOME", cache.path().to_str().unwrap()),
        ],
    )
    .await;
    ready(&gw, "docwell-search").await;
    let a = call(&gw, "list_documents", json!({})).await;
    assert_eq!(
        paths(&data(&a)["documents"], "document"),
        ["api.rst", "guide.md"]
    );

    // With the MCP command set, the MCP server serves and the built-in search is left out.
    let gw = start_shipped("docwell.yaml", &[("DOCWELL_MCP_COMMAND", &time_bin())]).await;
    let health = get(&gw, "/health").await;
    let providers = &health.report()["providers"];
    assert_eq!(providers["docwell"]["serving"], true, "{providers}");
    assert_eq!(providers["docwell-search"]["serving"], false);
    assert_eq!(
        providers["docwell-search"]["reason"],
        "DOCWELL_MCP_COMMAND is set"
    );
}
