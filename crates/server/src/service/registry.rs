//! The tools of a service: which provider runs each, and each one's compiled validator.
//!
//! Built whenever a provider's tool list changes or the configuration is reloaded, never per
//! request; handlers only look up.

use std::collections::HashMap;
use std::sync::Arc;

use contract::ToolSchema;

use crate::config::OutputValidation;
use crate::provider::Provider;
use contract::ArgumentValidator;

/// One tool: who runs it and how to check its arguments.
pub struct RegisteredTool {
    pub schema: ToolSchema,
    pub provider: Arc<dyn Provider>,
    /// `None` when the upstream's schema does not compile; the upstream then validates alone.
    pub validator: Option<ArgumentValidator>,
    /// The compiled output schema and what to do on a violation; `None` when the tool
    /// declares none, it does not compile, or the provider does not check.
    pub output: Option<(ArgumentValidator, OutputValidation)>,
}

/// Two providers offering the same tool name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool '{tool}' is offered by both provider '{first}' and provider '{second}'")]
pub struct Conflict {
    pub tool: String,
    pub first: String,
    pub second: String,
}

#[derive(Default)]
pub struct ToolRegistry {
    /// Sorted by name: the order GET /tools lists them in.
    tools: Vec<ToolSchema>,
    by_name: HashMap<String, RegisteredTool>,
}

impl ToolRegistry {
    /// Collects the tools of every provider. On a name offered twice the first provider (in
    /// config order) keeps it and the clash is returned for the caller to judge.
    pub fn build(providers: &[Arc<dyn Provider>], service: &str) -> (ToolRegistry, Vec<Conflict>) {
        let mut by_name: HashMap<String, RegisteredTool> = HashMap::new();
        let mut conflicts = Vec::new();
        for provider in providers {
            for schema in provider.tools() {
                if let Some(existing) = by_name.get(&schema.name) {
                    conflicts.push(Conflict {
                        tool: schema.name.clone(),
                        first: existing.provider.name().to_owned(),
                        second: provider.name().to_owned(),
                    });
                    continue;
                }
                let validator = match ArgumentValidator::compile(&schema.input_schema) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        tracing::warn!(service, provider = provider.name(), tool = %schema.name, "input schema does not compile, arguments go unchecked: {e}");
                        None
                    }
                };
                let policy = provider.validate_output();
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
                        provider: provider.clone(),
                        validator,
                        output,
                    },
                );
            }
        }
        let mut tools: Vec<ToolSchema> = by_name.values().map(|t| t.schema.clone()).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        (ToolRegistry { tools, by_name }, conflicts)
    }

    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.by_name.get(name)
    }

    pub fn tools(&self) -> &[ToolSchema] {
        &self.tools
    }
}
