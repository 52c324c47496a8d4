//! End-to-end tests: the real binary, real MCP servers, real sockets.

mod config_cli;
mod conformance_runs;
mod contract_errors;
mod cypher_provider;
mod harness;
mod http_provider;
mod lifecycle;
mod mcp_bridge;
mod mcp_sessions;
mod mcp_surface;
mod mcp_upstreams;
mod request_ids;
mod shipped_services;
mod supervision;
