//! Every error code a request can provoke from outside, with its status and envelope
//! (UNAUTHORIZED and RATE_LIMITED come from the `security` section: security.rs; SERVICE_UNAVAILABLE
//! while initializing: lifecycle.rs).

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

/// What a fuzzer found answered 500 or wrongly typed, each now the caller's 4xx: a server
/// refusing arguments its schema allows (400), a resource URI that is no URI (400), a tool
/// that needs sampling called over REST (403 naming where to call it), and a body left out
/// where `{}` is a valid call (200, and the document says the body is optional).
#[tokio::test]
async fn the_callers_faults_are_4xx_and_the_document_says_so() {
    let gw = gateway().await;

    // server-everything's schema sets no maximum for `count`; the server allows 10.
    let a = call(&gw, "get-resource-links", json!({"count": 11})).await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (400, "INVALID_ARGUMENTS"));
    assert!(
        a.body["error"].as_str().unwrap().contains("<=10"),
        "{}",
        a.body
    );
    assert!(
        a.body["meta"].get("validation_errors").is_none(),
        "{}",
        a.body
    );

    // In the query: no scheme, a stray `%`, a space and a control character (decoded).
    for uri in ["notauri", "demo://a%25", "demo://a%20b", "demo://x%01"] {
        let a = get(
            &gw,
            &format!("/resources/read?uri={uri}&provider=everything"),
        )
        .await;
        a.assert_envelope();
        assert_eq!(
            (a.status.as_u16(), a.code()),
            (400, "INVALID_REQUEST"),
            "{uri}: {}",
            a.body
        );
        assert!(
            a.body["error"]
                .as_str()
                .unwrap()
                .contains("is not a resource URI"),
            "{}",
            a.body
        );
    }
    let ok = get(
        &gw,
        "/resources/read?uri=demo%3A%2F%2Fresource%2Fdynamic%2Ftext%2F1",
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);

    let a = call(&gw, "trigger-sampling-request", json!({"prompt": "hi"})).await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (403, "CAPABILITY_REQUIRED"));
    let error = a.body["error"].as_str().unwrap();
    assert!(
        error.contains("sampling") && error.contains("/mcp"),
        "{error}"
    );

    let client = reqwest::Client::new();
    let bare = client
        .post(gw.url("/tools/get-tiny-image"))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), 200);
    let document = get(&gw, "/openapi.json").await.body;
    let body_of = |tool: &str| {
        document["paths"][format!("/tools/{tool}")]["post"]["requestBody"]["required"].clone()
    };
    assert_eq!(body_of("get-tiny-image"), json!(false));
    assert_eq!(body_of("echo"), json!(true));
    let bare = client.post(gw.url("/tools/echo")).send().await.unwrap();
    assert_eq!(bare.status(), 400);
    // One tag per operation.
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if let Some(tags) = op.get("tags") {
                assert_eq!(tags.as_array().unwrap().len(), 1, "{method} {path}: {tags}");
            }
        }
    }
}
