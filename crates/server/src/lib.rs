//! mcp-http-gateway: tool services behind one HTTP contract (REST and MCP), each service on its
//! own port, its tools coming from providers (MCP servers, Cypher queries, HTTP APIs).
//!
//! The modules follow a request from the outside in:
//!
//! ```text
//!  client ──HTTP──▶ http/   (REST: layers, handlers, envelope)  ─┐
//!  agent  ──MCP───▶ mcp/    (Streamable HTTP + legacy SSE)      ─┤
//!                                                                 ▼
//!                   service/ (tool set, validation, call, health, reload)
//!                                                                 │
//!                   provider/ (mcp/ · cypher/ · http/)  ◀─────────┘
//!                        │ upstream MCP servers, Bolt databases, HTTP APIs
//!                   dependency/ (shared pools and clients, their health)
//!
//!   config/  read once (and on SIGHUP) and handed down; runtime/ binds, signals, shuts down
//! ```
//!
//! `docs/architecture.md` is the same map in more words.

pub mod clock;
pub mod commands;
pub mod config;
pub mod dependency;
pub mod http;
pub mod logging;
pub mod mcp;
pub mod provider;
pub mod runtime;
pub mod service;
pub mod sync;
