//! The ceiling for docs/performance.md: a bare axum server answering GET / with the envelope of
//! a successful answer, so `wrk` against it measures what this machine gives any axum service
//! doing the least the gateway must do per request. With a file, its JSON text is the `data`
//! (GET /tools's `data`, fetched from the gateway under test, for the same bytes); each answer
//! gets a fresh request id (UUID v4) and timestamp, as the gateway's do.
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
    let app = Router::new().route(
        "/",
        get(move || async move {
            let body = contract::envelope::ok_body_with_json_data(
                data,
                &uuid::Uuid::new_v4().to_string(),
                &Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
                None,
            );
            ([("content-type", "application/json")], body)
        }),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    axum::serve(listener, app).await.unwrap();
}
