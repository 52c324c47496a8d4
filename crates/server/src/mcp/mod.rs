//! The incoming MCP surface of a service: the same tools as the REST routes, for agents.
//!
//! `/mcp` is rmcp's Streamable HTTP server running [`handler::McpBridge`] behind our
//! [`gate`] (the session rules of [`sessions`], duplicate ids; a plain `tools/call` answered
//! as JSON by [`direct`]), after the service's one Host and Origin check (`http/hosts.rs`, in
//! front of every route);
//! `/sse` + `/messages` is the legacy transport ([`legacy_sse`]) with the same gate and bridge.
//! Failures are answered as [`errors`] maps them. Resources, prompts and completions go
//! through the service's catalog ([`catalog`]), like REST's; a 2026-07-28 client's
//! `subscriptions/listen` stream is [`listen`]'s. Each session is a
//! [`client_session::McpClientSession`]: the providers reach it through the
//! `provider::ClientSession` trait, and no part of this surface knows a provider kind.

mod call;
mod capabilities;
mod catalog;
pub mod client_session;
mod direct;
pub mod errors;
pub mod gate;
pub mod handler;
pub mod input_required;
pub mod legacy_sse;
mod listen;
pub mod sessions;
mod tasks;

use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};

use crate::service::Service;

/// The MCP routes of one service, to be merged into its router; they end when the service's
/// drain is cancelled.
pub fn router(service: Arc<Service>) -> Router {
    let settings = service.settings();
    let rules = settings.config.mcp.clone();
    let book = sessions::SessionBook::new(
        rules.session_ttl,
        rules.max_sessions,
        service.client_load.clone(),
    )
    .with_client_bounds(rules.sessions_per_client(), rules.unused_session_grace)
    .with_streams_per_client(rules.streams_per_client())
    .with_metrics(service.metrics.clone())
    .with_cluster(service.cluster.clone());
    let stop = service.drain().clone();
    let direct = direct::DirectSessions::default();
    let parked = input_required::ParkedCalls::new(service.cluster.clone(), &stop);
    let (endpoint, rmcp_sessions) = handler::endpoint(
        service.clone(),
        direct.clone(),
        parked.clone(),
        stop.token(),
    );
    gate::sweep_sessions(book.clone(), rmcp_sessions, direct.clone(), stop);
    let gate = gate::McpGate {
        book,
        service: service.clone(),
        direct,
        parked,
        in_flight: gate::InFlight::default(),
        max_body: settings.config.limits.max_body_bytes,
        json: settings.config.limits.json(),
    };
    let streamable = Router::new()
        .fallback_service(endpoint)
        .layer(from_fn_with_state(gate.clone(), gate::gate));
    let legacy = Router::new()
        .route("/sse", get(legacy_sse::open))
        .route("/messages", post(legacy_sse::message))
        .with_state(legacy_sse::SseSessions::new(service, gate));
    Router::new().nest("/mcp", streamable).merge(legacy)
}
