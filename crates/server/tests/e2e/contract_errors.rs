//! Every error code of the contract, provoked from outside, with its status and envelope.

use serde_json::json;

use crate::harness::*;

/// everything + time, small body limit, short call timeout.
async fn gateway() -> Gateway {
    let extra = format!(
        "limits: {{ max_body_bytes: 4096, call_timeout_ms: 1500 }}\nproviders:\n{}{}",
        everything_provider("everything"),
        time_provider("time")
    );
    Gateway::start("errors", &extra).await
}

#[tokio::test]
async fn every_code_a_request_can_provoke() {
    let gw = gateway().await;
    let client = reqwest::Client::new();

    // 200 with data
    let ok = call(&gw, "echo", json!({"message": "hi"})).await;
    ok.assert_envelope();
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body["data"]["content"][0]["text"], "Echo: hi");
    assert!(ok.body["meta"]["execution_time_ms"].as_u64().is_some());

    // TOOL_NOT_FOUND 404
    let a = call(&gw, "no_such_tool", json!({})).await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (404, "TOOL_NOT_FOUND"));
    let a = post_json(&gw, "/tools/no_such_tool", &json!({})).await;
    assert_eq!((a.status.as_u16(), a.code()), (404, "TOOL_NOT_FOUND"));

    // INVALID_REQUEST 400: malformed JSON, wrong content type, missing tool, wrong shape, empty
    for (body, content_type, needle) in [
        ("{\"tool\": ", "application/json", "not valid JSON"),
        (
            "{\"tool\":\"echo\"}",
            "text/plain",
            "Content-Type must be application/json",
        ),
        (
            "{\"arguments\":{}}",
            "application/json",
            "missing field `tool`",
        ),
        (
            "{\"tool\":\"echo\",\"arguments\":[1]}",
            "application/json",
            "wrong shape",
        ),
        (
            "{\"tool\":\"echo\",\"surprise\":1}",
            "application/json",
            "unknown field `surprise`",
        ),
        ("", "application/json", "empty"),
    ] {
        let response = client
            .post(gw.url("/call-tool"))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        let a = Answer::from(response).await;
        a.assert_envelope();
        assert_eq!(
            (a.status.as_u16(), a.code()),
            (400, "INVALID_REQUEST"),
            "{body}"
        );
        assert!(
            a.body["error"].as_str().unwrap().contains(needle),
            "{body}: {}",
            a.body
        );
    }

    // INVALID_ARGUMENTS 400 with every failing path
    let a = call(&gw, "get-sum", json!({"a": "one"})).await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (400, "INVALID_ARGUMENTS"));
    let mut paths: Vec<&str> = a.body["meta"]["validation_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(paths, vec!["", "/a"], "{}", a.body);

    // NOT_FOUND 404
    let a = get(&gw, "/no/such/route").await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (404, "NOT_FOUND"));

    // METHOD_NOT_ALLOWED 405, keeping Allow
    for (method, path) in [
        ("DELETE", "/call-tool"),
        ("POST", "/tools"),
        ("PUT", "/health"),
    ] {
        let response = client
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                gw.url(path),
            )
            .send()
            .await
            .unwrap();
        let a = Answer::from(response).await;
        a.assert_envelope();
        assert_eq!(
            (a.status.as_u16(), a.code()),
            (405, "METHOD_NOT_ALLOWED"),
            "{method} {path}"
        );
        assert!(a.headers.contains_key("allow"), "{method} {path}");
    }

    // PAYLOAD_TOO_LARGE 413: declared length, and a chunked body with no length
    let big = json!({"tool": "echo", "arguments": {"message": "x".repeat(5000)}});
    let a = post_json(&gw, "/call-tool", &big).await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (413, "PAYLOAD_TOO_LARGE"));
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        vec![Ok(vec![b' '; 3000]), Ok(vec![b' '; 3000])];
    let response = client
        .post(gw.url("/call-tool"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    let a = Answer::from(response).await;
    assert_eq!((a.status.as_u16(), a.code()), (413, "PAYLOAD_TOO_LARGE"));

    // EXECUTION_ERROR 500: the tool ran and failed (mcp-server-time rejects the zone)
    let a = call(&gw, "get_current_time", json!({"timezone": "Not/AZone"})).await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (500, "EXECUTION_ERROR"));
    assert!(
        a.body["error"].as_str().unwrap().contains("Not/AZone"),
        "{}",
        a.body
    );

    // TIMEOUT 504 after call_timeout_ms
    let a = call(
        &gw,
        "trigger-long-running-operation",
        json!({"duration": 10, "steps": 2}),
    )
    .await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (504, "TIMEOUT"));
    assert!(
        a.body["meta"]["execution_time_ms"].as_u64().unwrap() >= 1500,
        "{}",
        a.body
    );
    assert!(gw.logs().contains("sent notifications/cancelled upstream"));

    // The service is still fine afterwards.
    assert_eq!(
        call(&gw, "echo", json!({"message": "after"})).await.status,
        200
    );
}

#[tokio::test]
async fn a_provider_that_cannot_start_degrades_the_service_and_fails_fast() {
    let extra = format!(
        "providers:\n{}  - {{ name: ghost, kind: mcp, command: /nonexistent/mcp-server }}\n",
        everything_provider("everything")
    );
    let gw = Gateway::start("degraded", &extra).await;
    let health = get(&gw, "/health").await;
    health.assert_envelope();
    assert_eq!(health.status, 200);
    assert_eq!(health.body["data"]["status"], "degraded");
    assert_eq!(
        health.body["data"]["dependencies"]["everything"]["status"],
        "connected"
    );
    let ghost = &health.body["data"]["dependencies"]["ghost"];
    assert_eq!(ghost["status"], "unavailable");
    assert!(
        ghost["error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/mcp-server"),
        "{ghost}"
    );
    // Tools of the live provider still work.
    assert_eq!(call(&gw, "echo", json!({"message": "x"})).await.status, 200);
}

#[tokio::test]
async fn rate_limited_requests_get_429_with_retry_after() {
    let extra = format!(
        "security: {{ rate_limit: 10 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("limited", &extra).await;
    let client = reqwest::Client::new();
    let answers =
        futures::future::join_all((0..40).map(|_| async {
            Answer::from(client.get(gw.url("/tools")).send().await.unwrap()).await
        }))
        .await;
    let limited: Vec<&Answer> = answers.iter().filter(|a| a.status == 429).collect();
    assert!(
        !limited.is_empty(),
        "40 concurrent requests against 10/s were all served"
    );
    assert!(answers.iter().filter(|a| a.status == 200).count() >= 10);
    for a in limited {
        a.assert_envelope();
        assert_eq!(a.code(), "RATE_LIMITED");
        let retry: u64 = a.headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!(retry >= 1);
    }
    // /health is never limited.
    for _ in 0..20 {
        assert_eq!(get(&gw, "/health").await.status, 200);
    }
}

#[tokio::test]
async fn api_keys_guard_everything_but_health_and_docs() {
    let extra = format!(
        "security: {{ api_keys_enabled: true, api_keys_env: MHG_TEST_KEYS }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let mut gw = Gateway::spawn_env("keyed", &extra, &[("MHG_TEST_KEYS", "k-one, k-two")]);
    gw.wait_running().await;
    let client = reqwest::Client::new();
    // (path, header sent, expected status)
    let cases = [
        ("/tools", None, 401),
        ("/tools", Some(("x-api-key", "wrong")), 401),
        ("/tools", Some(("x-api-key", "k-one")), 200),
        ("/tools", Some(("authorization", "Bearer k-two")), 200),
        ("/tools", Some(("authorization", "Basic k-two")), 401),
        ("/health", None, 200),
    ];
    for (path, header, status) in cases {
        let mut request = client.get(gw.url(path));
        if let Some((name, value)) = header {
            request = request.header(name, value);
        }
        let a = Answer::from(request.send().await.unwrap()).await;
        a.assert_envelope();
        assert_eq!(a.status, status, "{path} with {header:?}");
        if status == 401 {
            assert_eq!(a.code(), "UNAUTHORIZED");
        }
    }
    assert_eq!(
        client.get(gw.url("/docs/")).send().await.unwrap().status(),
        200
    );
    // The keys never reach the log.
    let logs = gw.logs();
    assert!(!logs.contains("k-one") && !logs.contains("k-two"));
}

#[tokio::test]
async fn cors_allows_loopback_origins_only_by_default() {
    let gw = Gateway::start(
        "cors",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let client = reqwest::Client::new();
    let preflight = |origin: &'static str| {
        client
            .request(reqwest::Method::OPTIONS, gw.url("/call-tool"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .send()
    };
    let allowed = preflight("http://localhost:5173").await.unwrap();
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "http://localhost:5173"
    );
    let denied = preflight("https://evil.example").await.unwrap();
    assert!(!denied.headers().contains_key("access-control-allow-origin"));
    let simple = client
        .get(gw.url("/tools"))
        .header("origin", "http://127.0.0.1:3000")
        .send()
        .await
        .unwrap();
    assert_eq!(
        simple.headers()["access-control-allow-origin"],
        "http://127.0.0.1:3000"
    );
    let exposed = simple.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(exposed.contains("x-request-id"));
}
