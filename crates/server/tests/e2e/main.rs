//! End-to-end tests: the real binary, real MCP servers, real sockets. Each file is named after
//! what it tests; `harness/` is how they run the gateway and talk to it.

mod access_log;
mod admission;
mod api_keys;
mod bounded_inputs;
mod child_env;
mod code_graph_index;
mod config_cli;
mod conformance_runs;
mod cypher_provider;
mod error_codes;
mod harness;
mod health;
mod hosts;
mod http_provider;
mod lifecycle;
mod mcp_fidelity;
mod mcp_provider;
mod mcp_provider_http;
mod mcp_provider_supervision;
mod mcp_server;
mod mcp_server_sessions;
mod methods;
mod metrics;
mod openapi_document;
mod openapi_fidelity;
mod openapi_fuzz;
mod output_schemas;
mod request_ids;
mod security;
mod shipped_services;
mod tool_names;
mod traces;
