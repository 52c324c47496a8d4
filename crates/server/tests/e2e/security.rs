//! The `security` section: a rate limit answers 429 with Retry-After (never on /health), API
//! keys guard everything but the public routes (/health by default) and never reach the log,
//! CORS allows loopback origins only by default. Named keys and their scopes: api_keys.rs.

use crate::harness::*;

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
        "40 concurrent requests against 10 per minute were all served"
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
async fn api_keys_guard_everything_but_the_public_routes() {
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
        // Only /health is public by default (security.public_routes): the document and the
        // Swagger UI name every tool.
        ("/openapi.json", None, 401),
        ("/docs/", None, 401),
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
        client
            .get(gw.url("/docs/"))
            .header("x-api-key", "k-one")
            .send()
            .await
            .unwrap()
            .status(),
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
