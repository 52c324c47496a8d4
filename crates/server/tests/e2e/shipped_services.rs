//! The services shipped in config/: all start together from the folder, each degraded with a
//! useful health entry when its backend is absent, and seekr/docwell run whatever MCP server
//! their environment variable names.

use std::time::Duration;

use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn every_shipped_service_starts_from_the_folder() {
    // The whole folder as shipped, each service on a free port, backends absent.
    let dir = tempfile::tempdir().unwrap();
    let mut ports = Vec::new();
    for entry in std::fs::read_dir(repo().join("config")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".yaml") || name == "services.yaml" {
            continue;
        }
        let port = free_port();
        let (_tmp, config) = write_shipped_config(&name, port);
        std::fs::copy(&config, dir.path().join(&name)).unwrap();
        ports.push((name.trim_end_matches(".yaml").to_owned(), port));
    }
    assert_eq!(
        ports.len(),
        6,
        "ai-gateway, code-graph-rag, seekr, docwell, the demo and hello: {ports:?}"
    );
    let dead = free_port();
    let env = [
        ("AI_GATEWAY_BASE_URL", format!("http://127.0.0.1:{dead}/v1")),
        ("CODE_GRAPH_BOLT_URI", format!("bolt://127.0.0.1:{dead}")),
        ("SEEKR_MCP_COMMAND", "/nonexistent/seekr-mcp".to_owned()),
        ("DOCWELL_MCP_COMMAND", "/nonexistent/docwell-mcp".to_owned()),
        ("MCP_EVERYTHING_JS", everything_js()),
        ("MCP_SERVER_TIME", time_bin()),
        ("HELLO_RS_ADDRESS", format!("127.0.0.1:{dead}")),
        ("HELLO_PY_ADDRESS", format!("127.0.0.1:{dead}")),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = vec![
        "serve".into(),
        "--config-dir".into(),
        dir.path().to_string_lossy().into_owned(),
    ];
    let (first, first_port) = ports[0].clone();
    let mut gw = Gateway::spawn_with(args, first_port, dir, std::path::PathBuf::from(first), &env);
    gw.wait_running().await;
    let client = reqwest::Client::new();
    for (name, port) in &ports {
        let health = eventually(
            Duration::from_secs(60),
            &format!("{name} running"),
            || async {
                let r = client
                    .get(format!("http://127.0.0.1:{port}/health"))
                    .send()
                    .await
                    .ok()?;
                let a = Answer::from(r).await;
                let state = a.report()["state"].as_str().unwrap_or_default();
                // A check that outran its budget on a loaded machine says `unknown`, which is
                // no verdict yet: wait for the next one.
                let undecided = a.report()["dependencies"]
                    .as_object()
                    .is_some_and(|d| d.values().any(|d| d["status"] == "unknown"));
                (state != "INITIALIZING" && !undecided).then_some(a)
            },
        )
        .await;
        let status = health.report()["status"].as_str().unwrap().to_owned();
        // Without their backend: ai-gateway still counts usage; the others have no tool that
        // can run.
        let expected = match name.as_str() {
            "everything" => "healthy",
            "ai-gateway" => "degraded",
            _ => "unavailable",
        };
        assert_eq!(status, expected, "{name}: {}", health.body);
        assert_eq!(
            health.status.as_u16(),
            if expected == "unavailable" { 503 } else { 200 },
            "{name}"
        );
        if name != "everything" {
            let errors: Vec<String> = health.report()["dependencies"]
                .as_object()
                .unwrap()
                .values()
                .filter_map(|d| d["error"].as_str().map(str::to_owned))
                .collect();
            assert!(
                errors.iter().any(|e| e.contains(" — ")),
                "{name}: the health entry says what to start: {errors:?}"
            );
        }
        if name == "ai-gateway" {
            // Exactly what to run: the no-configuration path (a local Ollama) and the other.
            let said = health.body.to_string();
            assert!(
                said.contains("`ollama serve`") && said.contains("AI_GATEWAY_BASE_URL"),
                "{said}"
            );
        }
    }
    gw.signal(libc::SIGTERM);
    assert_eq!(gw.wait_exit(Duration::from_secs(30)).await.code(), Some(0));
}

#[tokio::test]
async fn seekr_and_docwell_say_what_to_install_and_run_what_they_are_given() {
    let gw = start_shipped(
        "seekr.yaml",
        &[("SEEKR_MCP_COMMAND", "/nonexistent/seekr-mcp")],
    )
    .await;
    // Its only provider is down, so it has no tool: unavailable.
    let health = get(&gw, "/health").await;
    assert_eq!(health.status, 503);
    assert_eq!(health.report()["status"], "unavailable");
    let seekr = &health.report()["dependencies"]["seekr"];
    assert_eq!(seekr["status"], "unavailable");
    assert!(
        seekr["error"]
            .as_str()
            .unwrap()
            .contains("or set SEEKR_MCP_COMMAND"),
        "{seekr}"
    );
    // Its tools are unknown until it starts: an unknown tool says why.
    let a = call(&gw, "search", json!({"query": "x"})).await;
    a.assert_envelope();
    assert_eq!(a.code(), "TOOL_NOT_FOUND");
    assert!(
        a.body["error"]
            .as_str()
            .unwrap()
            .contains("MCP server 'seekr' is not connected"),
        "{}",
        a.body
    );

    // Given a real MCP server, docwell serves its tools.
    let gw = start_shipped("docwell.yaml", &[("DOCWELL_MCP_COMMAND", &time_bin())]).await;
    assert_eq!(get(&gw, "/health").await.body["data"]["status"], "healthy");
    let a = call(&gw, "get_current_time", json!({"timezone": "UTC"})).await;
    assert_eq!(a.status, 200, "{}", a.body);
}
