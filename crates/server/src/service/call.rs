//! One tool call: look the tool up, validate its arguments against the compiled schema, run it
//! on its provider within the call timeout, and say why when it fails.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use contract::{ErrorCode, ValidationIssue};
use serde_json::Value;

use super::Service;
use super::registry::RegisteredTool;
use crate::config::OutputValidation;
use crate::provider::{CallContext, JsonObject, ProgressSink};
use crate::telemetry::TraceContext;

/// Why a call failed, ready to be answered.
#[derive(Debug)]
pub struct CallFailure {
    pub code: ErrorCode,
    pub message: String,
    pub validation_errors: Option<Vec<ValidationIssue>>,
}

impl CallFailure {
    pub(super) fn new(code: ErrorCode, message: String) -> Self {
        CallFailure {
            code,
            message,
            validation_errors: None,
        }
    }
}

/// Counts a call as active for as long as it lives.
struct ActiveCall<'a>(&'a AtomicU64);

impl<'a> ActiveCall<'a> {
    fn start(count: &'a AtomicU64) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        ActiveCall(count)
    }
}

impl Drop for ActiveCall<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Service {
    /// Validates and runs one tool call within the configured timeout.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: JsonObject,
        request_id: &str,
        trace: &TraceContext,
        progress: Option<ProgressSink>,
    ) -> Result<Value, CallFailure> {
        let toolset = self.toolset();
        let Some(entry) = toolset.registry.get(tool) else {
            let reasons: Vec<String> = toolset
                .providers
                .iter()
                .filter_map(|p| p.missing_tools_reason())
                .collect();
            let message = if reasons.is_empty() {
                format!("Tool '{tool}' not found")
            } else {
                format!("Tool '{tool}' not found ({})", reasons.join("; "))
            };
            return Err(CallFailure::new(ErrorCode::ToolNotFound, message));
        };
        let arguments = Value::Object(arguments);
        if let Some(validator) = &entry.validator
            && let Err(issues) = validator.check(&arguments)
        {
            return Err(CallFailure {
                code: ErrorCode::InvalidArguments,
                message: format!(
                    "Arguments do not match the input schema of tool '{tool}': {} problem(s), see meta.validation_errors",
                    issues.len()
                ),
                validation_errors: Some(issues),
            });
        }
        let Value::Object(arguments) = arguments else {
            unreachable!("built from an object above")
        };
        let timeout = self.settings().config.limits.call_timeout;
        let cx = CallContext {
            request_id: request_id.to_owned(),
            trace: trace.clone(),
            timeout,
            progress,
        };
        let _active = ActiveCall::start(&self.active_calls);
        // The provider enforces the timeout itself (cancelling upstream); this outer bound
        // only guards against a provider that does not.
        let outcome = tokio::time::timeout(
            timeout + Duration::from_secs(1),
            entry.provider.call(tool, arguments, &cx),
        )
        .await;
        match outcome {
            Ok(Ok(data)) => checked_output(tool, entry, data),
            Ok(Err(e)) => Err(CallFailure::new(e.code(), e.to_string())),
            Err(_) => Err(CallFailure::new(
                ErrorCode::Timeout,
                format!(
                    "Tool '{tool}' did not answer within {} ms",
                    timeout.as_millis()
                ),
            )),
        }
    }
}

/// The result as the tool's output schema allows it: a violation is EXECUTION_ERROR naming
/// each JSON pointer and rule (strict), or a log line (warn).
fn checked_output(tool: &str, entry: &RegisteredTool, data: Value) -> Result<Value, CallFailure> {
    let Some((validator, policy)) = &entry.output else {
        return Ok(data);
    };
    let Err(issues) = validator.check(&data) else {
        return Ok(data);
    };
    let problems: Vec<String> = issues
        .iter()
        .map(|i| format!("at '{}': {}", i.path, i.message))
        .collect();
    let message = format!(
        "Tool '{tool}' answered a result that does not match its output schema: {}",
        problems.join("; ")
    );
    match policy {
        OutputValidation::Warn => {
            tracing::warn!(
                tool,
                provider = entry.provider.name(),
                "{message}; answered anyway (validate_output: warn)"
            );
            Ok(data)
        }
        _ => Err(CallFailure::new(ErrorCode::ExecutionError, message)),
    }
}
