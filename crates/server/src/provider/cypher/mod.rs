//! The `cypher` provider: tools declared in YAML as Cypher queries, run against a `bolt`
//! dependency. Arguments travel as Bolt parameters; the only text written into a query is an
//! integer the tool's schema bounds with `minimum` and `maximum` (`{{ max_depth }}`), because
//! Bolt servers refuse parameters as path-length bounds.

mod template;
pub mod values;

use std::sync::Arc;

use contract::{DependencyStatus, ToolSchema};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use self::template::QueryTemplate;
use super::{CallContext, JsonObject, Provider, ProviderError, ToolError, ToolOutput};
use crate::config::CypherProviderConfig;
use crate::dependency::bolt::{BoltDependency, BoltError};
use crate::telemetry::SpanKind;

struct CypherTool {
    schema: ToolSchema,
    query: QueryTemplate,
    result_key: String,
}

pub struct CypherProvider {
    name: String,
    database: Arc<BoltDependency>,
    tools: Vec<CypherTool>,
    setup_hint: Option<String>,
}

/// The shape every cypher tool answers, `{<result_key>: [rows], count}`: its output schema
/// when the tool declares none, so clients and the document know it.
fn rows_schema(result_key: &str) -> Value {
    json!({
        "type": "object",
        "required": [result_key, "count"],
        "properties": {
            result_key: {"type": "array", "items": {"type": "object"}},
            "count": {"type": "integer", "minimum": 0}
        }
    })
}

impl CypherProvider {
    pub fn new(
        config: &CypherProviderConfig,
        database: Arc<BoltDependency>,
    ) -> Result<Self, ProviderError> {
        let name = config.common.name.as_str().to_owned();
        let mut tools = Vec::new();
        for declared in &config.tools {
            let tool = declared.name.clone();
            let error = |e: template::TemplateError| ProviderError::Config {
                provider: name.clone(),
                message: format!("tool '{tool}': {e}"),
            };
            let query =
                QueryTemplate::parse(&declared.query, &declared.input_schema).map_err(error)?;
            let result_key = declared.result_key.clone().unwrap_or_else(|| "rows".into());
            tools.push(CypherTool {
                schema: ToolSchema {
                    qualified_name: None,
                    title: None,
                    output_schema: Some(
                        declared
                            .output_schema
                            .clone()
                            .unwrap_or_else(|| rows_schema(&result_key)),
                    ),
                    name: tool.clone(),
                    description: declared.description.clone(),
                    input_schema: declared.input_schema.clone(),
                    untyped_result: contract::UntypedResult::AnyJson,
                    annotations: Some(
                        json!({"readOnlyHint": !query.writes(), "openWorldHint": false}),
                    ),
                    icons: None,
                    score: None,
                },
                query,
                result_key,
            });
        }
        Ok(CypherProvider {
            name,
            database,
            tools,
            setup_hint: config.common.setup_hint.clone(),
        })
    }

    fn unavailable(&self, why: &str) -> ToolError {
        let message = format!(
            "Dependency connection failed: {}: {why}",
            self.database.name
        );
        ToolError::Unavailable(super::with_hint(&message, self.setup_hint.as_deref()))
    }
}

impl Provider for CypherProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn start(&self) -> BoxFuture<'_, ()> {
        // Tools are declared, so they are known without the database; connect lazily.
        futures::future::ready(()).boxed()
    }

    fn tools(&self) -> Vec<ToolSchema> {
        self.tools.iter().map(|t| t.schema.clone()).collect()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: JsonObject,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move {
            let Some(tool) = self.tools.iter().find(|t| t.schema.name == tool) else {
                return Err(ToolError::NotFound(tool.to_owned()));
            };
            let args = with_defaults(&tool.schema.input_schema, args);
            let text = tool
                .query
                .render(&args)
                .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
            let mut query = neo4rs::query(&text);
            for (key, value) in &args {
                let bolt = neo4rs::BoltType::try_from(value.clone())
                    .map_err(|e| ToolError::InvalidArguments(format!("argument '{key}': {e}")))?;
                query = query.param(key, bolt);
            }
            // Bolt has no field for a trace context, so the query is tied to its trace in the
            // log (and in a client span when spans are exported).
            tracing::debug!(
                request_id = %cx.request_id,
                trace_id = %cx.trace.trace_id(),
                tool = %tool.schema.name,
                database = %self.database.name,
                "cypher query"
            );
            let mut span = cx
                .trace
                .child(format!("cypher {}", tool.schema.name), SpanKind::Client);
            if span.is_recording() {
                span.set("db.query.text", text.clone());
                span.set("mcp_http_gateway.dependency", self.database.name.clone());
            }
            let rows = self
                .database
                .rows(query, cx.timeout)
                .await
                .inspect_err(|e| span.fail("cypher_error", format!("{e:?}")))
                .map_err(|e| match e {
                    BoltError::Connection(why) => self.unavailable(&why),
                    BoltError::Query(why) => ToolError::Execution(format!(
                        "Query of tool '{}' failed: {why}",
                        tool.schema.name
                    )),
                    BoltError::Timeout => ToolError::Timeout {
                        tool: tool.schema.name.clone(),
                        ms: cx.timeout.as_millis() as u64,
                    },
                })?;
            let rows: Vec<Value> = rows.into_iter().map(values::row_to_json).collect();
            let count = rows.len();
            Ok(json!({ tool.result_key.as_str(): rows, "count": count }))
        }
        .map(|r| r.map(ToolOutput::Data))
        .boxed()
    }

    fn health(&self) -> BoxFuture<'_, Vec<(String, DependencyStatus)>> {
        async move {
            let status = self.database.check().await;
            vec![(
                self.database.name.clone(),
                super::with_setup_hint(status, self.setup_hint.as_deref()),
            )]
        }
        .boxed()
    }

    fn dependency_name(&self) -> &str {
        &self.database.name
    }
}

/// Every property of the schema becomes a parameter: the argument, else its `default`, else
/// null — so a query may use `$optional` whether or not the caller gave it.
fn with_defaults(schema: &Value, mut args: JsonObject) -> JsonObject {
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            args.entry(name.clone())
                .or_insert_with(|| property.get("default").cloned().unwrap_or(Value::Null));
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_absent_properties() {
        let schema = json!({"type": "object", "properties": {"a": {"default": 3}, "b": {}, "c": {"default": "x"}}});
        let mut given = serde_json::Map::new();
        given.insert("c".into(), json!("given"));
        let args = with_defaults(&schema, given);
        assert_eq!(
            Value::Object(args),
            json!({"a": 3, "b": null, "c": "given"})
        );
    }
}
