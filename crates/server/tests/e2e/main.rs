//! End-to-end tests: the real binary, real MCP servers, real sockets.

mod config_cli;
mod conformance_runs;
mod contract_errors;
mod harness;
mod lifecycle;
mod mcp_bridge;
mod request_ids;
mod supervision;
