//! The ceiling for docs/performance.md and the load test's reference (`--reference-url`): a
//! bare axum server answering every GET (`/`, `/tools`, …) with the envelope of a successful
//! answer, so `wrk` against it measures what this machine gives any axum service
//! doing the least the gateway must do per request. With a file, its JSON text is the `data`
//! (GET /tools's `data`, fetched from the gateway under test, for the same bytes); each answer
//! gets a fresh request id (UUID v4), timestamp and `meta.execution_time_ms`, as the
//! gateway's do.
//!
//! `cargo run --release -p loadtest --example hello_axum -- PORT [DATA_JSON_FILE]`

use axum::Router;
use axum::routing::get;
use chrono::{SecondsFormat, Utc};

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(18999);
    let data: &'static [u8] = match args.next() {
        Some(file) => std::fs::read(&file)
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .leak(),
        None => br#"{"hello":"world"}"#,
    };
    let answer = move || async move {
        // Timed, as every answer of the gateway is (the load test requires `meta`).
        let meta = contract::Meta {
            execution_time_ms: Some(0),
            ..Default::default()
        };
        let body = contract::envelope::ok_body_with_json_data(
            data,
            &uuid::Uuid::new_v4().to_string(),
            &Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
            Some(&meta),
        );
        ([("content-type", "application/json")], body)
    };
    // Every path, so the load test's GET /tools reaches it as `wrk`'s GET / does.
    let app = Router::new().route("/", get(answer)).fallback(answer);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    axum::serve(listener, app).await.unwrap();
}
