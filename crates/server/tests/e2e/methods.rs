//! Methods: every route answers a method it does not take with 405 `METHOD_NOT_ALLOWED` in the
//! envelope and an `Allow` header, judged before the request's content (an odd `X-Request-Id`
//! or body does not turn it into a 400); a plain OPTIONS is 204 with `Allow`, and a CORS
//! preflight is still answered as one.

use reqwest::Method;
use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn undeclared_methods_are_405_with_allow_on_every_route() {
    let gw = Gateway::start(
        "methods",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let client = reqwest::Client::new();
    let routes = [
        ("/tools", "GET, HEAD, OPTIONS"),
        ("/health", "GET, HEAD, OPTIONS"),
        ("/openapi.json", "GET, HEAD, OPTIONS"),
        ("/call-tool", "POST, OPTIONS"),
        ("/tools/echo", "POST, OPTIONS"),
        ("/docs/", "GET, HEAD, OPTIONS"),
        ("/mcp", "GET, HEAD, POST, DELETE, OPTIONS"),
        ("/sse", "GET, HEAD, OPTIONS"),
        ("/messages", "POST, OPTIONS"),
        ("/metrics", "GET, HEAD, OPTIONS"),
    ];
    let undeclared = ["TRACE", "PUT", "PATCH", "DELETE", "POST", "GET"];
    let mut tried = 0;
    for (path, allow) in routes {
        for name in undeclared {
            if allow.split(", ").any(|m| m == name) {
                continue;
            }
            let method = Method::from_bytes(name.as_bytes()).unwrap();
            let answer = Answer::from(
                client
                    .request(method, gw.url(path))
                    // Content that would be refused on its own: the method is judged first.
                    .header("x-request-id", "not-a-uuid")
                    .header("content-type", "text/plain")
                    .body("{not json")
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(answer.status, 405, "{name} {path}: {}", answer.body);
            answer.assert_envelope();
            assert_eq!(answer.code(), "METHOD_NOT_ALLOWED");
            assert_eq!(answer.headers["allow"], allow, "{name} {path}");
            tried += 1;
        }
    }
    assert!(tried >= 30, "{tried}");
    // CONNECT needs an authority-form target; sent by hand on a raw connection.
    let raw = raw_request(
        &gw,
        "CONNECT /tools HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(
        raw.starts_with("HTTP/1.1 405")
            && raw
                .to_ascii_lowercase()
                .contains("allow: get, head, options"),
        "{raw}"
    );
}

#[tokio::test]
async fn options_answers_allow_and_preflights_still_work() {
    let gw = Gateway::start(
        "options",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let client = reqwest::Client::new();
    let plain = client
        .request(Method::OPTIONS, gw.url("/call-tool"))
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 204);
    assert_eq!(plain.headers()["allow"], "POST, OPTIONS");
    assert!(plain.headers().contains_key("x-request-id"));
    let preflight = client
        .request(Method::OPTIONS, gw.url("/call-tool"))
        .header("origin", "http://localhost:5173")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "http://localhost:5173"
    );
    // The declared methods still work.
    let answer = call(&gw, "echo", json!({"message": "still here"})).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

/// Sends `request` as written and returns the whole answer as text.
async fn raw_request(gw: &Gateway, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", gw.port))
        .await
        .unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}
