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

// serde_json keeps object keys in the order they came (`preserve_order`: what a server writes
// reaches the client as written), which makes a JSON value 80 bytes; the error types that
// carry one are then "large" to clippy, though they are built only on a failing call's path.
#![allow(clippy::result_large_err)]

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

#[cfg(test)]
mod architecture_map;

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
        ("http", &["config", "provider", "service"]),
        ("runtime", &["config", "service", "http", "mcp"]),
    ];
    /// The provider kinds: only `provider/` may name one (`provider::mcp`, …); the surfaces
    /// and the service see providers through the `Provider` and `ClientSession` traits.
    const PROVIDER_KINDS: &[&str] = &["mcp", "cypher", "http", "grpc", "search"];
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

    /// Where `text` names a provider kind (`provider::mcp::…`, `provider::{mcp, …}`).
    fn provider_kinds_named(text: &str) -> Vec<&'static str> {
        let mut named = Vec::new();
        for (at, _) in text.match_indices("provider::") {
            let rest = &text[at + "provider::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(str::trim)
                    .collect(),
                None => vec![rest],
            };
            for name in names {
                for kind in PROVIDER_KINDS {
                    let ends = |a: &str| !a.starts_with(|c: char| c.is_alphanumeric() || c == '_');
                    if name.strip_prefix(kind).is_some_and(ends) {
                        named.push(*kind);
                    }
                }
            }
        }
        named
    }

    #[test]
    fn finding_a_named_provider_kind() {
        assert_eq!(
            provider_kinds_named("use crate::provider::mcp::Upstream;"),
            ["mcp"]
        );
        assert_eq!(
            provider_kinds_named("use crate::provider::{Caller, grpc, ToolOutput};"),
            ["grpc"]
        );
        assert_eq!(provider_kinds_named("use crate::provider::http;"), ["http"]);
        assert!(provider_kinds_named("use crate::provider::{httpish, Caller};").is_empty());
        assert_eq!(
            provider_kinds_named("use crate::provider::search as s;"),
            ["search"]
        );
        assert!(provider_kinds_named("crate::provider::ToolOutput").is_empty());
    }

    /// No file outside `provider/` names a provider kind: a surface or the service that did
    /// would reach past the traits into one kind (issue 32).
    #[test]
    fn only_provider_names_a_provider_kind() {
        fn walk(dir: &Path, problems: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    if path.file_name().is_some_and(|n| n != "provider") {
                        walk(&path, problems);
                    }
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                    for kind in provider_kinds_named(code) {
                        problems.push(format!("{} names provider::{kind}", path.display()));
                    }
                }
            }
        }
        let mut problems = Vec::new();
        walk(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut problems,
        );
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    /// The modules of one folder of `config/` that `text` (a file `ups` folders below that
    /// folder's modules, its tests left out) names through `super::`: from `load.rs`,
    /// `super::load::…` and `super::{load::…, …}`; from `provider/mcp.rs`,
    /// `super::super::limits::…`.
    fn config_modules_used(text: &str, ups: usize, modules: &[String]) -> Vec<String> {
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect()
        };
        let mut used = Vec::new();
        for (at, _) in code.match_indices("super::") {
            if code[..at].ends_with("super::") {
                continue;
            }
            let mut rest = &code[at..];
            let mut up = 0;
            while let Some(after) = rest.strip_prefix("super::") {
                rest = after;
                up += 1;
            }
            if up != ups {
                continue;
            }
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(str::trim)
                    .collect(),
                None => vec![rest],
            };
            for name in names {
                let module = ident(name);
                if name[module.len()..].starts_with("::") && modules.contains(&module) {
                    used.push(module);
                }
            }
        }
        used
    }

    /// The files of a folder of `config/` as its modules, each with how far below them it is:
    /// `load.rs` is `load` (1); a subfolder's `provider/mod.rs` is `provider` (1) and the files
    /// beside it are `provider` too (2). The folder's own `mod.rs` declares them all and is
    /// none of them.
    fn config_module_files(dir: &Path) -> Vec<(String, usize, String)> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if path.is_dir() {
                for inner in std::fs::read_dir(&path).unwrap() {
                    let inner = inner.unwrap().path();
                    if inner.extension().is_some_and(|e| e == "rs") {
                        let ups = if inner.file_stem().is_some_and(|s| s == "mod") {
                            1
                        } else {
                            2
                        };
                        let text = std::fs::read_to_string(&inner).unwrap();
                        files.push((stem.to_owned(), ups, text));
                    }
                }
            } else if path.extension().is_some_and(|e| e == "rs") && stem != "mod" {
                files.push((stem.to_owned(), 1, std::fs::read_to_string(&path).unwrap()));
            }
        }
        files
    }

    /// The uses between the modules of one folder of `config/`, and the circles among them;
    /// then the same for each subfolder, its `mod.rs` declaring the files beside it.
    fn config_circles(dir: &Path, edges_seen: &mut Vec<(String, Vec<String>)>) -> Vec<String> {
        let files = config_module_files(dir);
        let mut modules: Vec<String> = files.iter().map(|(m, _, _)| m.clone()).collect();
        modules.sort();
        modules.dedup();
        let edges: Vec<(String, Vec<String>)> = modules
            .iter()
            .map(|module| {
                let used = files
                    .iter()
                    .filter(|(m, _, _)| m == module)
                    .flat_map(|(_, ups, text)| config_modules_used(text, *ups, &modules))
                    .filter(|used| used != module)
                    .collect();
                (module.clone(), used)
            })
            .collect();
        let uses = |module: &str| -> Vec<String> {
            edges
                .iter()
                .find(|(m, _)| m == module)
                .map(|(_, used)| used.clone())
                .unwrap_or_default()
        };
        // A path back to where it started is a circle.
        let mut circles = Vec::new();
        for start in &modules {
            let mut stack = vec![vec![start.clone()]];
            while let Some(path) = stack.pop() {
                for next in uses(path.last().unwrap()) {
                    if next == *start {
                        circles.push(format!("{} -> {start}", path.join(" -> ")));
                    } else if !path.contains(&next) {
                        let mut longer = path.clone();
                        longer.push(next);
                        stack.push(longer);
                    }
                }
            }
        }
        let folder = dir.file_name().unwrap().to_string_lossy().into_owned();
        edges_seen.extend(
            edges
                .iter()
                .map(|(m, used)| (format!("{folder}/{m}"), used.clone())),
        );
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                circles.extend(config_circles(&path, edges_seen));
            }
        }
        circles
    }

    /// `config/`'s files use each other without a circle (issue 32): a file that two others
    /// need in turn (an error type, a value type) lives in a file of its own. A subfolder
    /// (`provider/`) is one module among its siblings, and its own files are held to the same.
    #[test]
    fn config_files_import_no_circle() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config");
        let mut edges = Vec::new();
        let circles = config_circles(&dir, &mut edges);
        assert!(
            circles.is_empty(),
            "import circles in config/:\n{}",
            circles.join("\n")
        );
        let uses = |module: &str, used: &str| {
            edges
                .iter()
                .any(|(m, u)| m == module && u.iter().any(|u| u == used))
        };
        assert!(
            uses("config/load", "providers_file")
                && uses("config/provider", "limits")
                && uses("provider/entry", "mcp"),
            "the scan does not see the uses between config's files: {edges:?}"
        );
    }
}
