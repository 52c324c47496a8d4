//! The tools a service offers right now, with every form clients read them in built once per
//! change of the list: the registry (lookup and compiled validators), GET /tools's `data`, MCP
//! `tools/list`, and the per-service OpenAPI document. A client whose API key has a tool scope
//! reads the same forms built from only its tools: built once per scope on first use, and
//! dropped with the tool set, so they follow every change of the list.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use contract::service_document::{
    Limits, OAuthPublication, Publication, server_url, service_document,
};
use contract::{PromptInfo, QUALIFIED_NAME_META_KEY, ToolSchema, ToolsResponse};
use rmcp::model::Tool;
use serde_json::json;

use super::admission::{Admission, CallGates, Scope};
use super::client::ToolScope;
use super::discovery::{Meaning, ToolIndex};
use super::registry::ToolRegistry;
use super::resilience::{ProviderResilience, Resilience, ToolPolicy};
use crate::config::{
    DependencyConfig, ProviderConfig, Resilience as ResilienceSection, ResolvedToolLimits,
    ServiceConfig, UpstreamAuth, wildcard_match,
};
use crate::provider::Provider;
use crate::sync::Unpoisoned;

/// The providers and what was derived from their tools, replaced together.
pub(super) struct ToolSet {
    pub providers: Vec<Arc<dyn Provider>>,
    pub registry: ToolRegistry,
    /// The per-service OpenAPI document as JSON text, serialised once per tool list.
    pub openapi: Bytes,
    /// GET /tools's `data` as JSON text, serialised once per tool list rather than per
    /// request; the envelope is spliced around it.
    pub tools_data: Bytes,
    /// The same tools as MCP `tools/list` answers them, also built once per tool list.
    pub mcp_tools: Arc<Vec<rmcp::model::Tool>>,
    /// Each tool's limits and the gates its calls pass, resolved once per change.
    pub plans: HashMap<String, CallPlan>,
    /// The tools ranked for a query (GET /tools?q=, MCP `find_tools`), indexed once per change.
    pub discovery: ToolIndex,
    /// What the per-service document says of the service, to build a scope's document.
    publication: OwnedPublication,
    /// The forms above for each tool scope asked for so far, built on first use.
    scoped: Mutex<HashMap<Arc<ToolScope>, Arc<ScopedForms>>>,
}

/// The client-facing forms of the tools one scope allows.
pub struct ScopedForms {
    pub tools_data: Bytes,
    pub mcp_tools: Arc<Vec<Tool>>,
    pub openapi: Bytes,
}

/// [`Publication`] without the borrows, kept in the tool set.
struct OwnedPublication {
    service: String,
    version: String,
    server_url: String,
    keys_required: bool,
    oauth: Option<OAuthPublication>,
    limits: Limits,
    /// The prompts each have their operation in the document.
    prompts: Arc<Vec<PromptInfo>>,
}

impl OwnedPublication {
    /// The per-service document as JSON text.
    fn document(&self, tools: &[ToolSchema]) -> Bytes {
        let publication = Publication {
            service: &self.service,
            version: &self.version,
            server_url: self.server_url.clone(),
            api_keys_enabled: self.keys_required,
            oauth: self.oauth.clone(),
            limits: self.limits,
        };
        json_text(&service_document(&publication, tools, &self.prompts))
    }
}

/// The service's parts a tool's call plan takes its gates and containment from.
#[derive(Clone, Copy)]
pub struct CallControls<'a> {
    pub admission: &'a Admission,
    pub resilience: &'a Resilience,
}

/// How a call of one tool is admitted and bounded.
#[derive(Clone)]
pub struct CallPlan {
    pub limits: ResolvedToolLimits,
    pub gates: CallGates,
    /// Its provider's breaker, budget and cache, and what they do for this tool.
    pub resilience: Arc<ProviderResilience>,
    pub policy: ToolPolicy,
}

impl ToolSet {
    /// The providers with their registry, and every form derived from its tools (and, for the
    /// document, from `prompts`, the providers' prompts as GET /prompts lists them).
    #[expect(
        clippy::too_many_arguments,
        reason = "each is another part of the service; a struct of them would be built at both callers only to be taken apart here"
    )]
    pub fn new(
        name: &str,
        version: &str,
        config: &ServiceConfig,
        providers: Vec<Arc<dyn Provider>>,
        registry: ToolRegistry,
        prompts: Arc<Vec<PromptInfo>>,
        controls: CallControls<'_>,
        meaning: Option<&Meaning>,
    ) -> ToolSet {
        let limits = Limits {
            max_body_bytes: config.limits.max_body_bytes as u64,
            call_timeout_ms: config.limits.call_timeout.as_millis() as u64,
            json: config.limits.json(),
            max_header_bytes: config.limits.max_header_bytes as u64,
            max_headers: config.limits.max_headers as u64,
        };
        let publication = OwnedPublication {
            service: name.to_owned(),
            version: version.to_owned(),
            server_url: server_url(&config.service.host.value, config.service.port.get()),
            keys_required: config.security.keys_required(),
            oauth: config.security.oauth.as_ref().map(|o| OAuthPublication {
                issuer: o.issuer.clone(),
                authorization_url: o.authorization_endpoint.clone(),
                token_url: o.token_endpoint.clone(),
                scopes: o
                    .scopes
                    .iter()
                    .map(|(name, tools)| {
                        let text = tools.description.clone().unwrap_or_else(|| name.clone());
                        (name.clone(), text)
                    })
                    .collect(),
            }),
            limits,
            prompts,
        };
        ToolSet {
            openapi: publication.document(registry.tools()),
            tools_data: tools_data(name, version, registry.tools()),
            mcp_tools: Arc::new(mcp_tools(registry.tools())),
            plans: plans(name, config, &registry, controls),
            discovery: match meaning {
                Some(meaning) => ToolIndex::with_meaning(registry.tools(), meaning),
                None => ToolIndex::new(registry.tools()),
            },
            publication,
            scoped: Mutex::default(),
            providers,
            registry,
        }
    }

    /// The forms of the tools `scope` allows, built the first time this tool set is asked for
    /// that scope (scopes come from the configured keys and token scopes, so they are few).
    pub fn scoped(&self, scope: &Arc<ToolScope>) -> Arc<ScopedForms> {
        if let Some(forms) = self.scoped.write_unpoisoned().get(scope) {
            return forms.clone();
        }
        let tools: Vec<ToolSchema> = self
            .registry
            .tools()
            .iter()
            .filter(|t| scope.allows(&t.name))
            .cloned()
            .collect();
        let p = &self.publication;
        let forms = Arc::new(ScopedForms {
            tools_data: tools_data(&p.service, &p.version, &tools),
            mcp_tools: Arc::new(mcp_tools(&tools)),
            openapi: p.document(&tools),
        });
        self.scoped
            .write_unpoisoned()
            .entry(scope.clone())
            .or_insert(forms)
            .clone()
    }
}

/// Every tool's limits from its provider's entry, with the gates they need; a tool rule that
/// matches none of its provider's tools is logged (a typo would otherwise limit nothing).
/// Rules match the name the provider knows a tool by (before `expose.rename`, `tool_prefix` or
/// a clash's prefix), so a rule keeps its tool whatever name it is served under.
fn plans(
    service: &str,
    config: &ServiceConfig,
    registry: &ToolRegistry,
    CallControls {
        admission,
        resilience,
    }: CallControls<'_>,
) -> HashMap<String, CallPlan> {
    let mut plans = HashMap::new();
    resilience.retain(|name| config.provider_entries().any(|e| e.name().as_str() == name));
    for entry in config.provider_entries() {
        let limits = entry.limits();
        let provider = entry.name().as_str();
        let contained = resilience.of(service, provider, entry.resilience());
        let per_caller = calls_with_callers_credentials(config, entry);
        let own_connections = matches!(entry, ProviderConfig::Mcp(m) if m.session_per_client);
        let cypher = matches!(entry, ProviderConfig::Cypher(_));
        let provider_gate = admission.gate(Scope::Provider, provider, limits.max_concurrent);
        // (served name, upstream name) of this provider's tools.
        let tools: Vec<(&str, &str)> = registry
            .tools()
            .iter()
            .filter_map(|t| {
                let registered = registry.get(&t.name)?;
                (registered.provider.name() == provider)
                    .then_some((t.name.as_str(), registered.upstream.as_str()))
            })
            .collect();
        for rule in &limits.tools {
            let matched = tools.iter().any(|(_, upstream)| {
                limits
                    .rule_for(upstream)
                    .is_some_and(|r| std::ptr::eq(r, rule))
            });
            if !matched && !tools.is_empty() {
                tracing::warn!(service, provider, rule = %rule.tool, "limits.tools rule matches none of the provider's tools (or only tools an earlier rule took)");
            }
        }
        warn_unmatched(service, provider, entry.resilience(), &tools);
        for (tool, upstream) in tools {
            let resolved = limits.resolve(upstream, cypher, config.limits.call_timeout);
            let annotations = registry
                .get(tool)
                .and_then(|t| t.schema.annotations.as_ref());
            let mut policy = contained.policy(upstream, annotations, per_caller);
            if own_connections {
                // Each client session has its own upstream connection, maybe its own state
                // there: one session's result never answers another's call.
                policy.share = None;
            }
            let gates = CallGates {
                tool: admission.gate(Scope::Tool, tool, resolved.tool_max_concurrent),
                provider: provider_gate.clone(),
            };
            plans.insert(
                tool.to_owned(),
                CallPlan {
                    limits: resolved,
                    gates,
                    resilience: contained.clone(),
                    policy,
                },
            );
        }
    }
    plans
}

/// Logs each `resilience` glob (read_only, idempotent, a cache rule) that matches none of the
/// provider's tools: a typo would otherwise protect or share nothing.
fn warn_unmatched(
    service: &str,
    provider: &str,
    section: &ResilienceSection,
    tools: &[(&str, &str)],
) {
    if tools.is_empty() {
        return;
    }
    let globs = section
        .read_only
        .iter()
        .map(|g| ("read_only", g.0.as_str()))
        .chain(
            section
                .idempotent
                .iter()
                .map(|g| ("idempotent", g.0.as_str())),
        )
        .chain(
            section
                .cache
                .tools
                .iter()
                .map(|r| ("cache.tools", r.tool.as_str())),
        );
    for (key, glob) in globs {
        if !tools
            .iter()
            .any(|(_, upstream)| wildcard_match(glob, upstream))
        {
            tracing::warn!(
                service,
                provider,
                glob,
                "resilience.{key} matches none of the provider's tools"
            );
        }
    }
}

/// Whether `entry` calls its upstream with each caller's own credentials (an http provider
/// whose dependency exchanges the caller's token): its results are the caller's own.
fn calls_with_callers_credentials(config: &ServiceConfig, entry: &ProviderConfig) -> bool {
    let ProviderConfig::Http(http) = entry else {
        return false;
    };
    config.dependencies.get(&http.dependency).is_some_and(|d| {
        matches!(
            &d.value,
            DependencyConfig::Http(api) if matches!(api.auth, Some(UpstreamAuth::TokenExchange { .. }))
        )
    })
}

/// GET /tools's `data` as JSON text: the service, its version and its tools.
fn tools_data(name: &str, version: &str, tools: &[ToolSchema]) -> Bytes {
    json_text(&ToolsResponse {
        service: name.to_owned(),
        version: version.to_owned(),
        tools: tools.to_vec(),
    })
}

/// `value` as compact JSON text. The contract's types always serialise (no map has a
/// non-string key); `null` stands in should one not.
fn json_text<T: serde::Serialize>(value: &T) -> Bytes {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .unwrap_or_else(|_| Bytes::from_static(b"null"))
}

/// The tools as MCP `tools/list` lists them, each with its qualified name in `_meta`.
fn mcp_tools(tools: &[ToolSchema]) -> Vec<Tool> {
    tools
        .iter()
        .filter_map(|t| {
            let mut tool = json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema});
            if let Some(title) = &t.title {
                tool["title"] = json!(title);
            }
            if let Some(output) = &t.output_schema {
                tool["outputSchema"] = output.clone();
            }
            if let Some(annotations) = &t.annotations {
                tool["annotations"] = annotations.clone();
            }
            if let Some(icons) = &t.icons {
                tool["icons"] = icons.clone();
            }
            if let Some(qualified) = &t.qualified_name {
                tool["_meta"] = json!({ QUALIFIED_NAME_META_KEY: qualified });
            }
            serde_json::from_value::<Tool>(tool).ok()
        })
        .collect()
}
