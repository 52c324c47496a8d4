//! The code-graph-rag service over a graph of THIS repository: `code-graph-index` (the
//! workspace's indexer) writes it into a real ArcadeDB, the gateway's shipped code-graph-rag
//! tools answer from it, and the answers are checked against the source files themselves.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

const PROJECT: &str = "mcp-http-gateway";
/// A function of this repository with callers in many files (split so this file is not one).
const TARGET_NAME: &str = "free_port";
const TARGET_MODULE: &str = "crates.testkit.src.ports";

fn qn(rest: &str) -> String {
    format!("{PROJECT}.{rest}")
}

/// Runs the indexer on the repository; its stderr (the summary) on success.
fn index(db: &testkit::BoltDb) -> String {
    index_tree(db, &repo(), PROJECT)
}

/// Runs the indexer on `tree` as project `project`; its stderr (the summary) on success.
fn index_tree(db: &testkit::BoltDb, tree: &Path, project: &str) -> String {
    let out = Command::new(testkit::workspace_bin("code-graph-index"))
        .args(["--repo", tree.to_str().unwrap(), "--project", project])
        .args(["--uri", &db.uri()])
        .env("CODE_GRAPH_BOLT_PASSWORD", "code-graph-rag")
        .output()
        .expect("code-graph-index runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "code-graph-index failed:\n{stderr}");
    stderr
}

fn rows<'a>(a: &'a Answer, key: &str) -> &'a Vec<Value> {
    assert_eq!(a.status.as_u16(), 200, "{}", a.body);
    a.body["data"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no data.{key}: {}", a.body))
}

fn names(a: &Answer, key: &str) -> BTreeSet<String> {
    rows(a, key)
        .iter()
        .map(|r| r["qualified_name"].as_str().unwrap().to_owned())
        .collect()
}

/// The lines start..=end of a file of the repository.
fn source(path: &str, start: i64, end: i64) -> String {
    let text = std::fs::read_to_string(repo().join(path)).unwrap();
    text.lines()
        .skip(start as usize - 1)
        .take((end - start + 1) as usize)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A call of `name` in code (not a comment, not its definition): `name(` after a non-ident.
fn calls(line: &str, name: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("//") || t.contains(&format!("fn {name}")) {
        return false;
    }
    let needle = format!("{name}(");
    line.match_indices(&needle).any(|(i, _)| {
        line[..i]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// Every .rs file of the repository (as the indexer sees it: not target/, not .deps/).
fn rust_files(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if p.is_dir() {
            rust_files(&p, out);
        } else if name.ends_with(".rs") {
            out.push(
                p.strip_prefix(repo())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
}

async fn count(graph: &neo4rs::Graph, text: &str, project: &str) -> i64 {
    let mut rows = graph
        .execute(neo4rs::query(text).param("p", project))
        .await
        .unwrap();
    let row = rows.next().await.unwrap().expect("a row");
    row.get::<i64>("c").unwrap()
}

/// A refused login ends the indexer at once, naming the variable the password came from
/// (neo4rs retries a refused login inside each query: it used to hang for minutes).
fn a_refused_login_is_said_at_once(db: &testkit::BoltDb) {
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(tree.path().join("lib.rs"), "fn f() {}\n").unwrap();
    for (password, says) in [
        (
            "",
            "no password: $CODE_GRAPH_BOLT_PASSWORD is not set or empty",
        ),
        (
            "not-the-password",
            "the password from $CODE_GRAPH_BOLT_PASSWORD",
        ),
    ] {
        let log = tree.path().join("stderr");
        let child = Command::new(testkit::workspace_bin("code-graph-index"))
            .args([
                "--repo",
                tree.path().to_str().unwrap(),
                "--project",
                "refused",
            ])
            .args(["--uri", &db.uri()])
            .env("CODE_GRAPH_BOLT_PASSWORD", password)
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("code-graph-index runs");
        // Well past the indexer's own 15 s login deadline: a hang fails here, not at the
        // runner's 180 s.
        let mut child = testkit::Killed(child);
        let status = testkit::poll(
            Duration::from_secs(30),
            "the refused indexer to end",
            || child.0.try_wait().unwrap(),
        );
        let stderr = std::fs::read_to_string(&log).unwrap();
        assert!(!status.success(), "a wrong password was taken:\n{stderr}");
        assert!(
            stderr.contains("cannot log in to") && stderr.contains(says),
            "{stderr}"
        );
    }
}

#[tokio::test]
async fn code_graph_rag_tools_answer_about_this_repository() {
    let db = testkit::BoltDb::start();
    a_refused_login_is_said_at_once(&db);
    let summary = index(&db);
    assert!(summary.contains("CALLS"), "{summary}");
    // The shipped config, with a pooled connection waited for up to 10 s instead of 1 s:
    // this test checks answers, and under the whole suite's load on 2 cores ArcadeDB has
    // taken more than a second to hand out a connection (CI saw it once).
    // A free port found here, not with the harness' helper: this file must not become one of
    // the target function's callers that the assertions below count.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let (dir, config) = write_shipped_config("code-graph-rag.yaml", port);
    let text = std::fs::read_to_string(&config).unwrap();
    let patient = text.replace(
        "    max_connections: 16\n",
        "    max_connections: 16\n    timeout_ms: 10000\n",
    );
    assert_ne!(patient, text, "the shipped config names its pool size");
    std::fs::write(&config, patient).unwrap();
    let args = vec![
        "serve".to_owned(),
        "--config".to_owned(),
        config.to_string_lossy().into_owned(),
    ];
    let env = [
        ("CODE_GRAPH_BOLT_URI", db.uri()),
        ("CODE_GRAPH_BOLT_PASSWORD", "code-graph-rag".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut gw = Gateway::spawn_with(args, port, dir, config, &env);
    gw.wait_running().await;
    let target = qn(&format!("{TARGET_MODULE}.{TARGET_NAME}"));

    // query_callers: every caller really calls the target within its lines, and every file
    // that calls it has a caller in the answer.
    let a = call(
        &gw,
        "query_callers",
        json!({"function_name": target, "max_depth": 1}),
    )
    .await;
    a.assert_envelope();
    let callers = rows(&a, "callers");
    assert!(callers.len() >= 10, "{}", a.body);
    let mut caller_files = BTreeSet::new();
    for c in callers {
        let path = c["path"].as_str().unwrap();
        let start = c["start_line"].as_i64().unwrap();
        let body = source(
            path,
            start,
            end_line(&db, c["qualified_name"].as_str().unwrap()).await,
        );
        assert!(
            body.lines().any(|l| calls(l, TARGET_NAME)),
            "{} ({path}:{start}) does not call {TARGET_NAME}:\n{body}",
            c["qualified_name"]
        );
        caller_files.insert(path.to_owned());
    }
    let mut files = Vec::new();
    rust_files(&repo(), &mut files);
    let calling: BTreeSet<String> = files
        .into_iter()
        .filter(|f| !f.ends_with("ports.rs"))
        .filter(|f| {
            std::fs::read_to_string(repo().join(f))
                .unwrap()
                .lines()
                .any(|l| calls(l, TARGET_NAME))
        })
        .collect();
    let missing: Vec<_> = calling.difference(&caller_files).collect();
    assert!(
        missing.is_empty(),
        "files that call {TARGET_NAME} with no caller in the graph: {missing:?}"
    );
    let start_shipped_qn = qn("crates.server.tests.e2e.harness.process.start_shipped");
    assert!(names(&a, "callers").contains(&start_shipped_qn));

    // query_callees: what start_shipped calls, a free function and a method of another file.
    let a = call(
        &gw,
        "query_callees",
        json!({"function_name": start_shipped_qn, "max_depth": 1}),
    )
    .await;
    let callees = names(&a, "callees");
    assert!(callees.contains(&target), "{callees:?}");
    assert!(
        callees.contains(&qn(
            "crates.server.tests.e2e.harness.process.Gateway.spawn_with"
        )),
        "{callees:?}"
    );

    // query_hierarchy: the implementors of the Provider trait, each checked in its file.
    let provider = qn("crates.server.src.provider.mod.Provider");
    let a = call(
        &gw,
        "query_hierarchy",
        json!({"class_name": provider, "direction": "down", "max_depth": 1}),
    )
    .await;
    let subs = rows(&a, "hierarchy");
    assert!(subs.len() >= 3, "{}", a.body);
    for s in subs {
        let name = s["qualified_name"]
            .as_str()
            .unwrap()
            .rsplit('.')
            .next()
            .unwrap();
        let text = std::fs::read_to_string(repo().join(s["path"].as_str().unwrap())).unwrap();
        assert!(
            text.contains(&format!("Provider for {name}")),
            "{name} does not implement Provider in {}",
            s["path"]
        );
    }
    assert!(names(&a, "hierarchy").contains(&qn("crates.server.src.provider.mcp.mod.McpProvider")));

    // query_dependencies: the harness's process module imports testkit and calls free_port.
    let a = call(
        &gw,
        "query_dependencies",
        json!({"target": qn("crates.server.tests.e2e.harness.process")}),
    )
    .await;
    let deps = rows(&a, "dependencies");
    let has = |kind: &str, q: &str| {
        deps.iter()
            .any(|d| d["kind"] == kind && d["qualified_name"] == q)
    };
    assert!(has("imports", &qn("crates.testkit.src.lib")), "{}", a.body);
    assert!(has("calls", &target), "{}", a.body);

    // query_module_exports, find_symbol, list_projects.
    let a = call(
        &gw,
        "query_module_exports",
        json!({"module_name": qn(TARGET_MODULE)}),
    )
    .await;
    assert!(names(&a, "exports").contains(&target), "{}", a.body);
    let a = call(
        &gw,
        "find_symbol",
        json!({"name": TARGET_NAME, "label": "Function"}),
    )
    .await;
    let first = &rows(&a, "symbols")[0];
    assert_eq!(
        (
            first["qualified_name"].as_str(),
            first["match_type"].as_str()
        ),
        (Some(target.as_str()), Some("exact"))
    );
    let a = call(&gw, "list_projects", json!({})).await;
    let projects = rows(&a, "projects");
    let ours = projects
        .iter()
        .find(|p| p["qualified_name"] == PROJECT)
        .unwrap_or_else(|| panic!("{}", a.body));
    assert!(ours["module_count"].as_i64().unwrap() >= 100, "{ours}");
    assert!(
        projects.iter().any(|p| p["qualified_name"] == "shop"),
        "the fixture's project is still there: {}",
        a.body
    );

    // Re-indexing replaces a project's graph: the same counts, no key twice, the other
    // projects untouched. Shown on a small project (testkit's crate, indexed twice) beside
    // this repository's: the property does not depend on the size, and the repository's
    // second write took 15 s of a test that may take 20 (docs/testing.md).
    let small = "mcp-http-gateway-testkit";
    let testkit_crate = repo().join("crates/testkit");
    let graph = bolt(&db).await;
    let nodes = "MATCH (n) WHERE n.project = $p RETURN count(n) AS c";
    let rels = "MATCH (a)-[r]->(b) WHERE a.project = $p RETURN count(r) AS c";
    let shop = "MATCH (n) WHERE n.qualified_name STARTS WITH 'shop' RETURN count(n) AS c";
    let dups = "MATCH (n) WHERE n.project = $p WITH labels(n)[0] AS l, n.qualified_name AS q, \
                count(*) AS k WHERE k > 1 RETURN count(*) AS c";
    let ours_before = count(&graph, nodes, PROJECT).await;
    let first = index_tree(&db, &testkit_crate, small);
    assert!(first.contains(" 0 old nodes deleted"), "{first}");
    let before = (
        count(&graph, nodes, small).await,
        count(&graph, rels, small).await,
        count(&graph, shop, small).await,
    );
    assert!(before.0 >= 10 && before.1 >= 10, "{before:?}");
    let again = index_tree(&db, &testkit_crate, small);
    assert!(
        again.contains(&format!(" {} old nodes deleted", before.0)),
        "{again}"
    );
    let after = (
        count(&graph, nodes, small).await,
        count(&graph, rels, small).await,
        count(&graph, shop, small).await,
    );
    assert_eq!(
        before, after,
        "(nodes, relationships, fixture nodes) before and after"
    );
    assert_eq!(
        count(&graph, dups, small).await,
        0,
        "a (label, qualified_name) twice"
    );
    assert_eq!(
        count(&graph, nodes, PROJECT).await,
        ours_before,
        "re-indexing another project changed this repository's graph"
    );
    let a = call(
        &gw,
        "query_callers",
        json!({"function_name": target, "max_depth": 1}),
    )
    .await;
    assert_eq!(rows(&a, "callers").len(), callers.len());
}

async fn bolt(db: &testkit::BoltDb) -> neo4rs::Graph {
    let config = neo4rs::ConfigBuilder::default()
        .uri(db.uri())
        .user("root")
        .password("code-graph-rag")
        .build()
        .unwrap();
    neo4rs::Graph::connect(config).await.unwrap()
}

/// The end line of a definition (query_callers answers its start only).
async fn end_line(db: &testkit::BoltDb, qualified_name: &str) -> i64 {
    let graph = bolt(db).await;
    let mut rows = graph
        .execute(
            neo4rs::query("MATCH (n {qualified_name: $q}) RETURN n.end_line AS e")
                .param("q", qualified_name),
        )
        .await
        .unwrap();
    let row = rows.next().await.unwrap().expect("the node");
    row.get::<i64>("e").unwrap()
}
