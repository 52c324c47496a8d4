//! The `cypher` provider and the shipped code-graph-rag service over a real Bolt database
//! (ArcadeDB) holding the fixture code graph: exact answers, depth bounds, and the database
//! going down and coming back.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

fn names(answer: &Answer, key: &str) -> Vec<String> {
    answer.body["data"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no data.{key}: {}", answer.body))
        .iter()
        .map(|r| r["qualified_name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn code_graph_rag_answers_the_fixture_and_survives_the_database_going_away() {
    let db = BoltDb::start();
    let uri = db.uri();
    let gw = start_shipped(
        "code-graph-rag.yaml",
        &[
            ("CODE_GRAPH_BOLT_URI", &uri),
            ("CODE_GRAPH_BOLT_PASSWORD", "code-graph-rag"),
        ],
    )
    .await;
    let health = get(&gw, "/health").await;
    assert_eq!(health.body["data"]["status"], "healthy", "{}", health.body);
    assert_eq!(
        health.body["data"]["dependencies"]["memgraph"]["status"],
        "connected"
    );

    // Callers: the depth bound is the tool's max_depth, written into the query.
    let log = "shop.app.infra.util.log";
    let a = call(
        &gw,
        "query_callers",
        json!({"function_name": log, "max_depth": 1}),
    )
    .await;
    a.assert_envelope();
    assert_eq!(
        names(&a, "callers"),
        [
            "shop.app.infra.db.connect",
            "shop.app.main.cli",
            "shop.app.service.OrderService.cancel_order",
            "shop.app.service.validate"
        ]
    );
    assert_eq!(a.body["data"]["count"], 4);
    let first = &a.body["data"]["callers"][0];
    assert_eq!(
        (
            first["path"].as_str(),
            first["start_line"].as_i64(),
            first["depth"].as_i64()
        ),
        (Some("app/infra/db.py"), Some(8), Some(1))
    );
    let a = call(&gw, "query_callers", json!({"function_name": log})).await;
    assert_eq!(
        a.body["data"]["count"], 8,
        "default max_depth 3: {}",
        a.body
    );
    assert!(names(&a, "callers").contains(&"shop.app.repo.SqlOrderRepo.save".to_owned()));
    let a = call(
        &gw,
        "query_callers",
        json!({"function_name": log, "max_depth": 10}),
    )
    .await;
    assert_eq!(a.body["data"]["count"], 9);
    for bad in [0, 11] {
        let a = call(
            &gw,
            "query_callers",
            json!({"function_name": log, "max_depth": bad}),
        )
        .await;
        assert_eq!(a.code(), "INVALID_ARGUMENTS", "max_depth {bad}");
    }
    let a = call(
        &gw,
        "query_callers",
        json!({"function_name": "no.such.function"}),
    )
    .await;
    assert_eq!(
        (a.status.as_u16(), a.body["data"]["count"].as_u64()),
        (200, Some(0))
    );

    // Hierarchy: the diamond lists Base once; direction and depth bound the walk.
    let a = call(
        &gw,
        "query_hierarchy",
        json!({"class_name": "shop.app.models.Order"}),
    )
    .await;
    let rows: Vec<(String, String)> = a.body["data"]["hierarchy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["direction"].as_str().unwrap().to_owned(),
                r["qualified_name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expect = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(d, n)| (d.to_string(), n.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        rows,
        expect(&[
            ("up", "shop.app.models.Entity"),
            ("up", "shop.app.models.Timestamped"),
            ("up", "shop.app.models.Base"),
            ("down", "shop.app.models.Refund")
        ])
    );
    let a = call(
        &gw,
        "query_hierarchy",
        json!({"class_name": "shop.app.models.Refund", "direction": "up", "max_depth": 2}),
    )
    .await;
    assert_eq!(
        names(&a, "hierarchy"),
        [
            "shop.app.models.Order",
            "shop.app.models.Entity",
            "shop.app.models.Timestamped"
        ]
    );
    let a = call(
        &gw,
        "query_hierarchy",
        json!({"class_name": "shop.app.models.Base", "direction": "down", "max_depth": 1}),
    )
    .await;
    assert_eq!(
        names(&a, "hierarchy"),
        ["shop.app.models.Entity", "shop.app.models.Timestamped"]
    );
    let a = call(
        &gw,
        "query_hierarchy",
        json!({"class_name": "shop.app.models.Base", "direction": "sideways"}),
    )
    .await;
    assert_eq!(a.code(), "INVALID_ARGUMENTS");

    // Dependencies: direct imports, then the transitive closure.
    let a = call(
        &gw,
        "query_dependencies",
        json!({"target": "shop.app.main", "dependency_type": "imports"}),
    )
    .await;
    assert_eq!(
        names(&a, "dependencies"),
        ["shop.app.api", "shop.app.infra.util"]
    );
    let a = call(
        &gw,
        "query_dependencies",
        json!({"target": "shop.app.main", "dependency_type": "imports", "include_transitive": true}),
    )
    .await;
    assert_eq!(
        names(&a, "dependencies"),
        [
            "shop.app.api",
            "shop.app.infra.util",
            "shop.app.service",
            "shop.app.models",
            "shop.app.repo",
            "shop.app.infra.db"
        ]
    );

    // The other tools answer with locations.
    let a = call(
        &gw,
        "query_callees",
        json!({"function_name": "shop.app.main.run", "max_depth": 10}),
    )
    .await;
    assert!(
        a.body["data"]["count"].as_u64().unwrap() >= 7,
        "the 7-deep chain: {}",
        a.body
    );
    let a = call(
        &gw,
        "query_module_exports",
        json!({"module_name": "shop.app.models"}),
    )
    .await;
    assert!(
        a.body["data"]["exports"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["path"] == "app/models.py")
    );
    let a = call(&gw, "find_symbol", json!({"name": "save"})).await;
    assert!(
        names(&a, "symbols").contains(&"shop.app.repo.SqlOrderRepo.save".to_owned()),
        "{}",
        a.body
    );
    let a = call(&gw, "list_projects", json!({})).await;
    assert_eq!(a.body["data"]["count"], 2, "{}", a.body);

    // The database goes away: calls fail fast, naming it; health says so.
    db.stop();
    let a = call(&gw, "query_callers", json!({"function_name": log})).await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (500, "EXECUTION_ERROR"));
    let error = a.body["error"].as_str().unwrap();
    assert!(
        error.starts_with("Dependency connection failed: memgraph: "),
        "{error}"
    );
    assert!(
        a.body["meta"]["execution_time_ms"].as_u64().unwrap() < 2000,
        "no hang: {}",
        a.body
    );
    // Every tool is a query on that database: no tool can run, so the service is unavailable.
    let health = until_dependency(&gw, "memgraph", "unavailable", Duration::from_secs(10)).await;
    health.assert_envelope();
    assert_eq!(
        (health.status.as_u16(), health.code()),
        (503, "SERVICE_UNAVAILABLE")
    );
    assert_eq!(health.report()["status"], "unavailable");
    assert_eq!(
        health.report()["tools"]["query_callers"]["status"],
        "unavailable"
    );
    let memgraph = &health.report()["dependencies"]["memgraph"];
    assert!(memgraph["last_ok"].is_string(), "{memgraph}");
    assert!(
        memgraph["error"]
            .as_str()
            .unwrap()
            .contains("scripts/bolt-db.sh start"),
        "{memgraph}"
    );

    // It comes back: no gateway restart needed.
    db.restart();
    let a = eventually(
        Duration::from_secs(30),
        "queries through the restarted database",
        || async {
            let a = call(
                &gw,
                "query_callers",
                json!({"function_name": log, "max_depth": 1}),
            )
            .await;
            (a.status == 200).then_some(a)
        },
    )
    .await;
    assert_eq!(a.body["data"]["count"], 4);
    eventually(Duration::from_secs(10), "healthy again", || async {
        (get(&gw, "/health").await.body["data"]["status"] == "healthy").then_some(())
    })
    .await;
}

#[tokio::test]
async fn code_graph_rag_without_a_database_starts_unavailable() {
    let dead = format!("bolt://127.0.0.1:{}", free_port());
    let gw = start_shipped("code-graph-rag.yaml", &[("CODE_GRAPH_BOLT_URI", &dead)]).await;
    // Its every tool needs the database: no tool can run.
    let health = get(&gw, "/health").await;
    assert_eq!(
        (health.status.as_u16(), health.report()["status"].as_str()),
        (503, Some("unavailable"))
    );
    let tools: Vec<Value> = get(&gw, "/tools").await.body["data"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(tools.len(), 7);
    for tool in &tools {
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
    }
    let a = call(&gw, "list_projects", json!({})).await;
    assert_eq!(a.code(), "EXECUTION_ERROR");
    assert!(
        a.body["error"].as_str().unwrap().contains("memgraph"),
        "{}",
        a.body
    );
}

/// The connect timeout bounds reaching the database, not the query: a query that runs longer
/// than it on a live database answers (CI once saw code-graph-rag's first query on a cold,
/// busy ArcadeDB refused as "no pooled connection within 1000 ms"), and the tool's own
/// timeout still bounds it.
#[tokio::test]
async fn a_query_longer_than_the_connect_timeout_answers_and_the_call_timeout_bounds_it() {
    let db = BoltDb::start();
    let connect_ms = 100;
    // About 0.5 s on ArcadeDB here; asserted below, so a faster database cannot pass unseen.
    let slow = "UNWIND range(1, 3000000) AS x RETURN count(x) AS n";
    let extra = format!(
        "dependencies:
  graphdb: {{ kind: bolt, uri: \"{uri}\", user: root, password_env: SLOW_BOLT_PASSWORD, timeout_ms: {connect_ms} }}
providers:
  - name: graph
    kind: cypher
    dependency: graphdb
    limits:
      tools:
        - {{ tool: cut_short, timeout_ms: 50 }}
    tools:
      - {{ name: count_long, description: a slow count, input_schema: {{ type: object }}, query: \"{slow}\" }}
      - {{ name: cut_short, description: the same count with a 50 ms timeout, input_schema: {{ type: object }}, query: \"{slow}\" }}
",
        uri = db.uri()
    );
    let gw = Gateway::start_env(
        "slow-query",
        &extra,
        &[("SLOW_BOLT_PASSWORD", "code-graph-rag")],
    )
    .await;

    let a = call(&gw, "count_long", json!({})).await;
    a.assert_envelope();
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["data"]["rows"][0]["n"], 3_000_000, "{}", a.body);
    let took = a.body["meta"]["execution_time_ms"].as_u64().unwrap();
    assert!(
        took > connect_ms,
        "the query took {took} ms, within the {connect_ms} ms connect timeout: this test needs a slower one"
    );

    let a = call(&gw, "cut_short", json!({})).await;
    a.assert_envelope();
    assert_eq!(
        (a.status.as_u16(), a.code()),
        (504, "TIMEOUT"),
        "{}",
        a.body
    );
}
