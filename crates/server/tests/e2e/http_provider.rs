//! The `http` provider and the shipped ai-gateway service against a real OpenAI-compatible
//! server (the LiteLLM proxy with mock models): the three tools, usage counting, upstream
//! errors and timeouts, OpenAPI import, and the dependency going down and coming back.

use std::time::Duration;

use serde_json::json;

use crate::harness::*;

/// The shipped ai-gateway service in front of LiteLLM's proxy; the proxy and the service.
async fn ai_gateway_with_litellm() -> (LiteLlm, Gateway) {
    let llm = LiteLlm::start().await;
    let base = llm.base_url();
    let gw = start_shipped(
        "ai-gateway.yaml",
        &[
            ("AI_GATEWAY_BASE_URL", &base),
            ("AI_GATEWAY_API_KEY", LITELLM_KEY),
        ],
    )
    .await;
    (llm, gw)
}

#[tokio::test]
async fn ai_gateway_against_an_openai_compatible_server() {
    let (_llm, gw) = ai_gateway_with_litellm().await;

    let health = get(&gw, "/health").await;
    assert_eq!(health.body["data"]["status"], "healthy", "{}", health.body);
    assert!(health.body["data"]["dependencies"]["llm"]["last_ok"].is_string());
    let names: Vec<String> = get(&gw, "/tools").await.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, vec!["generate", "get_usage", "list_models"]);

    let models = call(&gw, "list_models", json!({})).await;
    models.assert_envelope();
    let ids: Vec<&str> = models.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"mock-small") && ids.contains(&"mock-large"),
        "{ids:?}"
    );

    let a = call(
        &gw,
        "generate",
        json!({"model": "mock-small", "prompt": "Bonjour ✓", "max_tokens": 16, "temperature": 0.2}),
    )
    .await;
    a.assert_envelope();
    assert_eq!(
        a.body["data"]["choices"][0]["message"]["content"], "Hello from mock-small.",
        "{}",
        a.body
    );
    let messages =
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]);
    let a = call(
        &gw,
        "generate",
        json!({"model": "mock-large", "messages": messages}),
    )
    .await;
    assert!(
        a.body["data"]["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .starts_with("Hello from mock-large.")
    );
    let a = call(
        &gw,
        "generate",
        json!({"model": "mock-small", "prompt": "again"}),
    )
    .await;
    assert_eq!(a.status, 200);

    // Neither prompt nor messages: refused before anything is sent.
    let a = call(&gw, "generate", json!({"model": "mock-small"})).await;
    assert_eq!(a.code(), "INVALID_ARGUMENTS");

    // Usage counted by the gateway from the upstream's answers (the mock reports 10 + 20).
    let usage = call(&gw, "get_usage", json!({})).await;
    usage.assert_envelope();
    let d = &usage.body["data"];
    assert_eq!(d["models"]["mock-small"]["calls"], 2, "{d}");
    assert_eq!(d["models"]["mock-small"]["prompt_tokens"], 20);
    assert_eq!(d["models"]["mock-small"]["completion_tokens"], 40);
    assert_eq!(d["models"]["mock-large"]["calls"], 1);
    assert_eq!(d["total"]["total_tokens"], 90);

    // Upstream failures carry the upstream status and an excerpt of its body.
    let a = call(
        &gw,
        "generate",
        json!({"model": "mock-broken", "prompt": "x"}),
    )
    .await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (500, "EXECUTION_ERROR"));
    assert!(
        a.body["error"]
            .as_str()
            .unwrap()
            .contains("Upstream answered 500"),
        "{}",
        a.body
    );
    let a = call(
        &gw,
        "generate",
        json!({"model": "mock-ratelimited", "prompt": "x"}),
    )
    .await;
    assert!(
        a.body["error"]
            .as_str()
            .unwrap()
            .contains("Upstream answered 429"),
        "{}",
        a.body
    );
    let a = call(
        &gw,
        "generate",
        json!({"model": "no-such-model", "prompt": "x"}),
    )
    .await;
    assert!(
        a.body["error"]
            .as_str()
            .unwrap()
            .contains("Upstream answered 400"),
        "{}",
        a.body
    );
}

/// The dependency goes down: calls fail at once, naming it, and the first failure has it
/// checked (no waiting for the periodic check): health says so and what to start. It comes
/// back on the same port and everything works again.
#[tokio::test]
async fn ai_gateway_s_dependency_going_away_and_back() {
    let (llm, gw) = ai_gateway_with_litellm().await;
    let health = get(&gw, "/health").await;
    assert_eq!(health.body["data"]["status"], "healthy", "{}", health.body);
    let port = llm.port;
    drop(llm);
    let a = call(&gw, "list_models", json!({})).await;
    assert_eq!(a.code(), "EXECUTION_ERROR");
    assert!(
        a.body["error"]
            .as_str()
            .unwrap()
            .starts_with("Dependency connection failed: llm"),
        "{}",
        a.body
    );
    let health = until_dependency(&gw, "llm", "unavailable", Duration::from_secs(5)).await;
    assert_eq!(health.body["data"]["status"], "degraded");
    let error = health.body["data"]["dependencies"]["llm"]["error"]
        .as_str()
        .unwrap();
    assert!(
        error.contains("no OpenAI-compatible server answers"),
        "{error}"
    );
    let _llm = LiteLlm::start_on(port).await;
    eventually(Duration::from_secs(20), "llm back", || async {
        (call(&gw, "list_models", json!({})).await.status == 200).then_some(())
    })
    .await;
    // A call through while it is recorded down has it checked again.
    eventually(Duration::from_secs(5), "healthy again", || async {
        (get(&gw, "/health").await.body["data"]["status"] == "healthy").then_some(())
    })
    .await;
}

#[tokio::test]
async fn declared_tools_timeouts_and_openapi_import() {
    let llm = LiteLlm::start().await;
    let root = format!("http://127.0.0.1:{}", llm.port);
    let extra = format!(
        r#"limits: {{ call_timeout_ms: 1000 }}
dependencies:
  proxy: {{ kind: http, base_url: "{root}", health_path: /health/liveliness, headers: {{ Authorization: "Bearer {LITELLM_KEY}" }} }}
providers:
  - name: declared
    kind: http
    dependency: proxy
    tools:
      - name: chat
        description: chat with a template body
        input_schema: {{ type: object, properties: {{ model: {{ type: string }}, text: {{ type: string }} }}, required: [model, text] }}
        method: POST
        path: /v1/chat/completions
        body: '{{"model": {{{{ model | tojson }}}}, "messages": [{{"role": "user", "content": {{{{ text | tojson }}}}}}]}}'
        result: /choices/0/message/content
      - name: model_info
        description: one model, by id in the path
        input_schema: {{ type: object, properties: {{ id: {{ type: string }} }}, required: [id] }}
        path: /v1/models/{{id}}
  - name: imported
    kind: http
    dependency: proxy
    openapi: "{root}/openapi.json"
    include: [model_list_v1_models_get]
"#
    );
    let gw = Gateway::start("http-tools", &extra).await;
    let a = call(&gw, "chat", json!({"model": "mock-small", "text": "hé"})).await;
    a.assert_envelope();
    assert_eq!(a.body["data"], "Hello from mock-small.", "{}", a.body);
    let a = call(&gw, "model_info", json!({"id": "mock-large"})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    // Slower than limits.call_timeout_ms (the mock waits 3 s).
    let a = call(&gw, "chat", json!({"model": "mock-slow", "text": "x"})).await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (504, "TIMEOUT"));
    // An operation imported from the upstream's own OpenAPI document.
    let tools = get(&gw, "/tools").await;
    let imported: Vec<&str> = tools.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| *n == "model_list_v1_models_get")
        .collect();
    assert_eq!(imported.len(), 1, "{}\n{}", tools.body, gw.logs());
    let a = call(&gw, "model_list_v1_models_get", json!({})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(
        a.body["data"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == "mock-small")
    );
}

#[tokio::test]
async fn ai_gateway_without_its_upstream_starts_degraded() {
    let dead = format!("http://127.0.0.1:{}/v1", free_port());
    let gw = start_shipped("ai-gateway.yaml", &[("AI_GATEWAY_BASE_URL", &dead)]).await;
    let health = get(&gw, "/health").await;
    assert_eq!(health.status, 200);
    assert_eq!(health.body["data"]["status"], "degraded");
    let llm = &health.body["data"]["dependencies"]["llm"];
    assert_eq!(llm["status"], "unavailable");
    assert!(
        llm["error"]
            .as_str()
            .unwrap()
            .contains("AI_GATEWAY_BASE_URL"),
        "{llm}"
    );
    // The tools are listed (they are declared) and fail naming the dependency.
    let a = call(&gw, "generate", json!({"model": "m", "prompt": "p"})).await;
    a.assert_envelope();
    assert_eq!(a.code(), "EXECUTION_ERROR");
    assert!(
        a.body["error"]
            .as_str()
            .unwrap()
            .contains("Dependency connection failed: llm"),
        "{}",
        a.body
    );
    // get_usage needs no upstream.
    assert_eq!(call(&gw, "get_usage", json!({})).await.status, 200);
}

#[tokio::test]
async fn a_dependency_that_does_not_answer_in_a_second_is_unknown() {
    // A real socket that accepts and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming().flatten() {
            held.push(stream);
        }
    });
    let extra = format!(
        "dependencies:\n  mute: {{ kind: http, base_url: \"http://127.0.0.1:{port}\", health_path: /health }}\nproviders:\n  - name: quiet\n    kind: http\n    dependency: mute\n    usage_tool: usage\n"
    );
    let gw = Gateway::start("unknown-dep", &extra).await;
    let health = get(&gw, "/health").await;
    health.assert_envelope();
    assert_eq!(health.body["data"]["status"], "degraded");
    let mute = &health.body["data"]["dependencies"]["mute"];
    assert_eq!(mute["status"], "unknown", "{mute}");
    assert!(
        mute["error"].as_str().unwrap().contains("within 1000 ms"),
        "{mute}"
    );
    assert!(
        health.body["meta"]["execution_time_ms"].as_u64().unwrap() < 3000,
        "/health itself stays bounded"
    );
}
