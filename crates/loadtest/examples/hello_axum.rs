//! The ceiling for docs/performance.md: a bare axum server answering a static JSON body of the
//! envelope's shape on GET /, so `wrk` against it measures what this machine gives any axum
//! service. `cargo run --release -p loadtest --example hello_axum -- 18999`

use axum::Router;
use axum::routing::get;

#[tokio::main]
async fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(18999);
    let body = r#"{"success":true,"data":{"hello":"world"},"request_id":"7d0c3f0e-1c2b-4a5e-9f00-0123456789ab","timestamp":"2026-11-22T10:00:00.000Z","meta":{"execution_time_ms":0}}"#;
    let app = Router::new().route(
        "/",
        get(move || async move { ([("content-type", "application/json")], body) }),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    axum::serve(listener, app).await.unwrap();
}
