//! The tools of a service: the name each is served under, which provider runs it and by which
//! name, each one's compiled validator, and the clashes of names met on the way.
//!
//! Built whenever a provider's tool list changes or the configuration is reloaded, never per
//! request; handlers only look up. Names are decided here, in order: the provider's `expose`
//! and `tool_prefix` and the identifier mapping (`identifier_names`, always for gRPC
//! providers; [`crate::config::served`]), then `on_name_clash` for names that more than one
//! tool came to. Every served tool also has its qualified name, `{provider}.{upstream name}`,
//! which lookups accept as well as the served name.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use contract::{ClashResolution, NameConflict, ToolSchema, qualified_name};

use crate::config::{OnNameClash, OutputValidation, ServiceConfig, clash_prefix, served};
use crate::provider::Provider;
use contract::ArgumentValidator;

/// One tool: who runs it and how to check its arguments.
pub struct RegisteredTool {
    /// The tool as it is served (its served name and description).
    pub schema: ToolSchema,
    /// The name its provider knows it by: what calls send upstream and what the provider's
    /// `limits.tools` rules match.
    pub upstream: String,
    pub provider: Arc<dyn Provider>,
    /// `None` when the upstream's schema does not compile; the upstream then validates alone.
    pub validator: Option<ArgumentValidator>,
    /// The compiled output schema and what to do on a violation; `None` when the tool
    /// declares none, it does not compile, or the provider does not check.
    pub output: Option<(ArgumentValidator, OutputValidation)>,
}

/// Tools of several providers (or of one, after renaming) that came to one name, and how the
/// clash was settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict(pub NameConflict);

impl std::error::Error for Conflict {}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.0;
        match c.providers.as_slice() {
            [a, b] if a == b => write!(
                f,
                "tool '{}' is offered twice by provider '{a}' (after renaming)",
                c.tool
            ),
            [a, b] => write!(
                f,
                "tool '{}' is offered by both provider '{a}' and provider '{b}'",
                c.tool
            ),
            all => write!(
                f,
                "tool '{}' is offered by providers {}",
                c.tool,
                all.iter()
                    .map(|p| format!("'{p}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

impl Conflict {
    /// Settled by keeping the first provider's tool: one tool is not served.
    pub fn kept_first(&self) -> bool {
        self.0.resolution == ClashResolution::KeptFirst
    }
}

#[derive(Default)]
pub struct ToolRegistry {
    /// Sorted by name: the order GET /tools lists them in.
    tools: Vec<ToolSchema>,
    by_name: HashMap<String, RegisteredTool>,
    /// Qualified name → served name, for the tools served.
    by_qualified: HashMap<String, String>,
    /// Sorted by name.
    conflicts: Vec<Conflict>,
}

/// A tool on its way to the registry.
struct Candidate {
    provider: usize,
    upstream: String,
    schema: ToolSchema,
}

impl ToolRegistry {
    /// Collects the tools of every provider under the names `config` gives them. A name that
    /// several tools came to is settled by `service.on_name_clash` (`prefix`: each served as
    /// `{provider}_{name}`; `error`: the first provider in config order keeps it); every clash
    /// is in [`ToolRegistry::conflicts`] for the caller to judge and report.
    pub fn build(
        providers: &[Arc<dyn Provider>],
        config: &ServiceConfig,
        service: &str,
    ) -> ToolRegistry {
        let candidates = candidates(providers, config, service);
        let policy = config.service.on_name_clash;
        let (candidates, mut conflicts) = settle(candidates, providers, policy);
        // A prefixed name may meet a tool that already had it: the first keeps it then.
        let (candidates, more) = settle(candidates, providers, OnNameClash::Error);
        conflicts.extend(more);
        conflicts.sort_by(|a, b| a.0.tool.cmp(&b.0.tool));

        let mut by_name: HashMap<String, RegisteredTool> = HashMap::new();
        for Candidate {
            provider,
            upstream,
            schema,
        } in candidates
        {
            let provider = &providers[provider];
            let validator = match ArgumentValidator::compile(&schema.input_schema) {
                Ok(v) => Some(v),
                Err(e) => {
                    tracing::warn!(service, provider = provider.name(), tool = %schema.name, "input schema does not compile, arguments go unchecked: {e}");
                    None
                }
            };
            let policy = config
                .provider_entries()
                .find(|p| p.name().as_str() == provider.name())
                .map(|p| p.validate_output())
                .unwrap_or_default();
            let output = match (&schema.output_schema, policy) {
                (None, _) | (_, OutputValidation::Off) => None,
                (Some(output), _) => match ArgumentValidator::compile(output) {
                    Ok(v) => Some((v, policy)),
                    Err(e) => {
                        tracing::warn!(service, provider = provider.name(), tool = %schema.name, "output schema does not compile, results go unchecked: {e}");
                        None
                    }
                },
            };
            by_name.insert(
                schema.name.clone(),
                RegisteredTool {
                    schema,
                    upstream,
                    provider: provider.clone(),
                    validator,
                    output,
                },
            );
        }
        let mut tools: Vec<ToolSchema> = by_name.values().map(|t| t.schema.clone()).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let by_qualified = tools
            .iter()
            .filter_map(|t| Some((t.qualified_name.clone()?, t.name.clone())))
            .collect();
        ToolRegistry {
            tools,
            by_name,
            by_qualified,
            conflicts,
        }
    }

    /// A tool by its served name.
    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.by_name.get(name)
    }

    /// The served name of the tool `name` names: itself when it is a served name, else the
    /// served name of the tool whose qualified name it is. A served name wins over a qualified
    /// one (they can only meet when an MCP server's own tool name contains a `.`).
    pub fn served_name<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        match self.by_name.get_key_value(name) {
            Some((served, _)) => Some(served),
            None => self.by_qualified.get(name).map(String::as_str),
        }
    }

    pub fn tools(&self) -> &[ToolSchema] {
        &self.tools
    }

    /// The clashes of names met while building, sorted by name.
    pub fn conflicts(&self) -> &[Conflict] {
        &self.conflicts
    }
}

/// Every provider's tools, in provider and list order, under their names before any clash;
/// hidden ones left out. An `expose` key that names none of a connected provider's tools is
/// logged (a typo would otherwise change nothing).
fn candidates(
    providers: &[Arc<dyn Provider>],
    config: &ServiceConfig,
    service: &str,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (index, provider) in providers.iter().enumerate() {
        let entry = config
            .provider_entries()
            .find(|e| e.name().as_str() == provider.name());
        let default = crate::config::Expose::default();
        let expose = entry.map_or(&default, |e| e.expose());
        let prefix = entry.and_then(|e| e.tool_prefix());
        let identifier_names = config.service.identifier_names;
        let maps = entry.map_or(identifier_names, |e| e.maps_names(identifier_names));
        let tools = provider.tools();
        for key in expose.rename.keys().chain(expose.describe.keys()) {
            if !tools.is_empty() && !tools.iter().any(|t| &t.name == key) {
                tracing::warn!(service, provider = provider.name(), tool = %key, "expose names a tool the provider does not have");
            }
        }
        for mut schema in tools {
            let Some(as_served) = served(&schema.name, expose, prefix, maps) else {
                continue;
            };
            let upstream = std::mem::replace(&mut schema.name, as_served.name);
            schema.qualified_name = Some(qualified_name(provider.name(), &upstream));
            if let Some(description) = as_served.description {
                schema.description = description;
            }
            out.push(Candidate {
                provider: index,
                upstream,
                schema,
            });
        }
    }
    out
}

/// Settles the names several candidates came to: under `prefix`, when they come from distinct
/// providers, each is renamed `{provider}_{name}`; otherwise the first keeps the name and the
/// others are dropped. Order is kept.
fn settle(
    candidates: Vec<Candidate>,
    providers: &[Arc<dyn Provider>],
    policy: OnNameClash,
) -> (Vec<Candidate>, Vec<Conflict>) {
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, c) in candidates.iter().enumerate() {
        by_name.entry(c.schema.name.as_str()).or_default().push(i);
    }
    let mut conflicts = Vec::new();
    // What becomes of each candidate: None (kept), Some(None) dropped, Some(Some(name)) renamed.
    let mut fate: HashMap<usize, Option<String>> = HashMap::new();
    for (name, group) in by_name.iter().filter(|(_, g)| g.len() > 1) {
        let owners: Vec<usize> = group.iter().map(|&i| candidates[i].provider).collect();
        let distinct = owners
            .iter()
            .enumerate()
            .all(|(k, o)| !owners[..k].contains(o));
        let names: Vec<String> = owners
            .iter()
            .map(|&o| providers[o].name().to_owned())
            .collect();
        let (served, resolution) = if policy == OnNameClash::Prefix && distinct {
            let served: Vec<String> = names
                .iter()
                .map(|p| format!("{}{name}", clash_prefix(p)))
                .collect();
            for (&i, new) in group.iter().zip(&served) {
                fate.insert(i, Some(new.clone()));
            }
            (served, ClashResolution::Prefixed)
        } else {
            for &i in &group[1..] {
                fate.insert(i, None);
            }
            (vec![(*name).to_owned()], ClashResolution::KeptFirst)
        };
        conflicts.push(Conflict(NameConflict {
            tool: (*name).to_owned(),
            providers: names,
            served,
            resolution,
        }));
    }
    let kept = candidates
        .into_iter()
        .enumerate()
        .filter_map(|(i, mut c)| match fate.remove(&i) {
            None => Some(c),
            Some(None) => None,
            Some(Some(name)) => {
                c.schema.name = name;
                Some(c)
            }
        })
        .collect();
    (kept, conflicts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{CallContext, JsonObject, ToolError};
    use contract::DependencyStatus;
    use futures::FutureExt;
    use futures::future::BoxFuture;
    use serde_json::{Value, json};

    /// A provider that only has a fixed tool list (a registry never calls a provider).
    struct Listed(&'static str, Vec<&'static str>);

    impl Provider for Listed {
        fn name(&self) -> &str {
            self.0
        }
        fn start(&self) -> BoxFuture<'_, ()> {
            futures::future::ready(()).boxed()
        }
        fn tools(&self) -> Vec<ToolSchema> {
            self.1
                .iter()
                .map(|n| ToolSchema {
                    qualified_name: None,
                    name: (*n).to_owned(),
                    title: None,
                    description: format!("{n} of {}", self.0),
                    input_schema: json!({"type": "object"}),
                    output_schema: None,
                    untyped_result: contract::UntypedResult::AnyJson,
                    annotations: None,
                    icons: None,
                    score: None,
                })
                .collect()
        }
        fn call<'a>(
            &'a self,
            _: &'a str,
            _: JsonObject,
            _: &'a CallContext,
        ) -> BoxFuture<'a, Result<crate::provider::ToolOutput, ToolError>> {
            futures::future::ready(Ok(crate::provider::ToolOutput::Data(Value::Null))).boxed()
        }
        fn health(&self) -> BoxFuture<'_, Vec<(String, DependencyStatus)>> {
            futures::future::ready(Vec::new()).boxed()
        }
    }

    fn build(providers: Vec<Listed>, yaml: &str) -> ToolRegistry {
        let config = ServiceConfig::parse(yaml, "t.yaml", ".".into()).unwrap();
        let providers: Vec<Arc<dyn Provider>> = providers
            .into_iter()
            .map(|p| Arc::new(p) as Arc<dyn Provider>)
            .collect();
        ToolRegistry::build(&providers, &config, "t")
    }

    fn names(r: &ToolRegistry) -> Vec<&str> {
        r.tools().iter().map(|t| t.name.as_str()).collect()
    }

    const TWO: &str = "providers:\n  - { name: one, kind: mcp, command: x }\n  - { name: two-b, kind: mcp, command: x }\n";

    #[test]
    fn error_keeps_the_first_and_reports_the_clash() {
        let r = build(
            vec![
                Listed("one", vec!["echo", "a"]),
                Listed("two-b", vec!["echo", "b"]),
            ],
            &format!("service: {{ name: t, port: 9000 }}\n{TWO}"),
        );
        assert_eq!(names(&r), ["a", "b", "echo"]);
        assert_eq!(r.get("echo").unwrap().provider.name(), "one");
        assert_eq!(r.conflicts().len(), 1);
        let c = &r.conflicts()[0];
        assert!(c.kept_first());
        assert_eq!(c.0.served, ["echo"]);
        assert_eq!(
            c.to_string(),
            "tool 'echo' is offered by both provider 'one' and provider 'two-b'"
        );
    }

    #[test]
    fn prefix_serves_both_under_their_provider_and_calls_the_upstream_name() {
        let r = build(
            vec![
                Listed("one", vec!["echo", "a"]),
                Listed("two-b", vec!["echo", "one_echo"]),
            ],
            &format!("service: {{ name: t, port: 9000, on_name_clash: prefix }}\n{TWO}"),
        );
        // two-b's own `one_echo` meets one's prefixed `echo`: the first in order keeps it.
        assert_eq!(names(&r), ["a", "one_echo", "two_b_echo"]);
        assert_eq!(r.get("two_b_echo").unwrap().upstream, "echo");
        assert_eq!(r.get("one_echo").unwrap().provider.name(), "one");
        assert_eq!(r.get("one_echo").unwrap().upstream, "echo");
        let resolutions: Vec<_> = r
            .conflicts()
            .iter()
            .map(|c| (c.0.tool.as_str(), c.0.resolution))
            .collect();
        assert_eq!(
            resolutions,
            [
                ("echo", ClashResolution::Prefixed),
                ("one_echo", ClashResolution::KeptFirst)
            ]
        );
        assert_eq!(r.conflicts()[0].0.served, ["one_echo", "two_b_echo"]);
        // The qualified name keeps the provider's own name whatever the served name became.
        let qualified = |served: &str| r.get(served).unwrap().schema.qualified_name.clone();
        assert_eq!(qualified("two_b_echo").as_deref(), Some("two-b.echo"));
        assert_eq!(qualified("one_echo").as_deref(), Some("one.echo"));
        assert_eq!(r.served_name("one.echo"), Some("one_echo"));
        assert_eq!(r.served_name("two-b.echo"), Some("two_b_echo"));
        // two-b's own `one_echo` lost its name to one's prefixed `echo`: not served at all.
        assert_eq!(r.served_name("two-b.one_echo"), None);
    }

    #[test]
    fn grpc_names_are_mapped_and_every_tool_is_found_by_its_qualified_name() {
        let yaml = "service: { name: t, port: 9000 }\nproviders:\n  - { name: hello-rs, kind: grpc, address: \"127.0.0.1:50052\" }\n  - { name: one, kind: mcp, command: x }\n";
        let r = build(
            vec![
                Listed("hello-rs", vec!["echo.v1", "slow.v1", "2fa.v1", "echo_v1"]),
                Listed("one", vec!["get-sum", "echo.v1"]),
            ],
            yaml,
        );
        // gRPC names are always mapped; MCP names only with identifier_names.
        assert_eq!(
            names(&r),
            ["_2fa_v1", "echo.v1", "echo_v1", "get-sum", "slow_v1"]
        );
        let echo = r.get("echo_v1").unwrap();
        assert_eq!(echo.upstream, "echo.v1");
        assert_eq!(echo.provider.name(), "hello-rs");
        assert_eq!(
            echo.schema.qualified_name.as_deref(),
            Some("hello-rs.echo.v1")
        );
        assert_eq!(r.served_name("hello-rs.echo.v1"), Some("echo_v1"));
        assert_eq!(r.served_name("hello-rs.2fa.v1"), Some("_2fa_v1"));
        assert_eq!(r.served_name("echo_v1"), Some("echo_v1"));
        assert_eq!(r.served_name("one.get-sum"), Some("get-sum"));
        assert_eq!(r.served_name("one.echo.v1"), Some("echo.v1"));
        for unknown in ["hello-rs.nope", "nope.echo.v1", "hello-rs", "echo", ""] {
            assert_eq!(r.served_name(unknown), None, "{unknown}");
        }
        // `echo.v1` mapped onto the provider's own `echo_v1`: the first in its list keeps
        // the name, the other is not served, not even by its qualified name.
        let c = &r.conflicts()[0];
        assert_eq!(c.0.tool, "echo_v1");
        assert_eq!(c.0.providers, ["hello-rs", "hello-rs"]);
        assert!(c.kept_first());
        assert_eq!(r.served_name("hello-rs.echo_v1"), None);
        assert!(r.tools().iter().all(|t| t.qualified_name.is_some()));
    }

    #[test]
    fn a_served_name_wins_over_a_qualified_name_that_spells_it() {
        let yaml = "service: { name: t, port: 9000 }\nproviders:\n  - { name: a, kind: mcp, command: x }\n  - { name: x, kind: mcp, command: x }\n";
        let r = build(vec![Listed("a", vec!["b"]), Listed("x", vec!["a.b"])], yaml);
        assert_eq!(r.served_name("a.b"), Some("a.b"));
        assert_eq!(r.get("a.b").unwrap().provider.name(), "x");
        assert_eq!(r.served_name("x.a.b"), Some("a.b"));
    }

    #[test]
    fn expose_and_prefix_apply_before_clashes_and_identifier_names_maps() {
        let yaml = "service: { name: t, port: 9000, identifier_names: true }\nproviders:\n  - { name: one, kind: mcp, command: x, expose: { exclude: [hidden], rename: { echo: say }, describe: { get-sum: Sums. } } }\n  - { name: two-b, kind: mcp, command: x, tool_prefix: b_ }\n";
        let r = build(
            vec![
                Listed("one", vec!["echo", "hidden", "get-sum", "get_sum"]),
                Listed("two-b", vec!["echo"]),
            ],
            yaml,
        );
        assert_eq!(names(&r), ["b_echo", "get_sum", "say"]);
        assert_eq!(r.get("say").unwrap().upstream, "echo");
        assert_eq!(r.get("get_sum").unwrap().upstream, "get-sum");
        assert_eq!(r.get("get_sum").unwrap().schema.description, "Sums.");
        assert!(r.get("hidden").is_none());
        // `get-sum` mapped onto `get_sum` of the same provider: prefixing cannot help.
        let c = &r.conflicts()[0];
        assert_eq!(c.0.providers, ["one", "one"]);
        assert!(c.kept_first());
        assert!(c.to_string().contains("offered twice by provider 'one'"));
        // Without the mapping, a bridged name is served as it is.
        let kept = build(
            vec![Listed("one", vec!["get-sum"])],
            "service: { name: t, port: 9000 }\nproviders:\n  - { name: one, kind: mcp, command: x }\n",
        );
        assert_eq!(names(&kept), ["get-sum"]);
        assert!(kept.conflicts().is_empty());
    }
}
