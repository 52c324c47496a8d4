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
//!   config/  read once (and on SIGHUP) and handed down; runtime/ binds, signals, reloads;
//!   shutdown.rs is the one shutdown mechanism; telemetry/ is the trace context and spans
//!   every layer may carry
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
pub mod shutdown;
pub mod sync;
pub mod telemetry;

/// The map above, held true: each module may use only the modules below it, so no import cycle
/// can come back unnoticed.
#[cfg(test)]
mod layering {
    use std::path::Path;

    /// Each top-level module and what it may use (besides the leaf helpers `clock`, `sync`,
    /// `shutdown`, `logging`, `telemetry`, which use nothing but each other and `config`).
    const ALLOWED: &[(&str, &[&str])] = &[
        ("config", &[]),
        ("dependency", &["config"]),
        ("provider", &["config", "dependency"]),
        ("service", &["config", "dependency", "provider"]),
        ("mcp", &["config", "provider", "service"]),
        ("http", &["config", "provider", "service", "mcp"]),
        ("runtime", &["config", "service", "http"]),
    ];
    const LEAVES: &[&str] = &["clock", "sync", "shutdown", "logging", "telemetry"];

    fn uses(dir: &Path, found: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                uses(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (at, _) in text.match_indices("crate::") {
                    let name: String = text[at + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect();
                    found.push((path.display().to_string(), name));
                }
            }
        }
    }

    #[test]
    fn modules_use_only_the_layers_below_them() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut problems = Vec::new();
        for (module, allowed) in ALLOWED {
            let mut found = Vec::new();
            uses(&src.join(module), &mut found);
            assert!(
                !found.is_empty() || *module == "config",
                "{module} has no files?"
            );
            for (file, used) in found {
                if used != *module
                    && !allowed.contains(&used.as_str())
                    && !LEAVES.contains(&used.as_str())
                {
                    problems.push(format!("{file} uses crate::{used}"));
                }
            }
        }
        assert!(
            problems.is_empty(),
            "against the layering of lib.rs:\n{}",
            problems.join("\n")
        );
    }
}
