//! The service under test: what it is asked (found before the run from GET /tools), and
//! whether an answer is what that request should give — a request whose status or envelope is
//! wrong is a failed request, whatever its latency.

use serde_json::{Value, json};

use crate::plan::Plan;

/// One kind of request the users send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Tools,
    Health,
    Call,
}

impl Endpoint {
    /// The request's name in goose's metrics and in the summary.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Tools => "GET /tools",
            Endpoint::Health => "GET /health",
            Endpoint::Call => "POST /call-tool",
        }
    }
}

/// What the run sends: the call's body, when the scenario calls a tool.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub call_body: Option<Value>,
    pub tool: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("cannot reach {url}: {source}")]
    Unreachable { url: String, source: reqwest::Error },
    #[error("GET {url}/tools did not answer the contract's envelope: {why}")]
    NotAService { url: String, why: String },
    #[error("tool '{0}' is not listed by GET /tools")]
    UnknownTool(String),
    #[error(
        "no tool of this service can be called without arguments; pass --tool NAME --args JSON"
    )]
    NoDefaultTool,
}

impl Target {
    /// Reads GET /tools and picks the tool to call.
    pub async fn discover(plan: &Plan) -> Result<Target, TargetError> {
        let answer = reqwest::Client::new()
            .get(format!("{}/tools", plan.url))
            .timeout(std::time::Duration::from_secs(10))
            .send()
            .await
            .map_err(|source| TargetError::Unreachable {
                url: plan.url.clone(),
                source,
            })?;
        let status = answer.status().as_u16();
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        check(Endpoint::Tools, status, &body).map_err(|why| TargetError::NotAService {
            url: plan.url.clone(),
            why,
        })?;
        let tools = body["data"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let tool = if !plan.scenario.calls_a_tool() {
            None
        } else if let Some(name) = &plan.tool {
            if !tools.iter().any(|t| t["name"] == name.as_str()) {
                return Err(TargetError::UnknownTool(name.clone()));
            }
            Some(name.clone())
        } else {
            let free = tools.iter().find(|t| {
                t["input_schema"]["required"]
                    .as_array()
                    .is_none_or(|r| r.is_empty())
            });
            Some(
                free.and_then(|t| t["name"].as_str())
                    .ok_or(TargetError::NoDefaultTool)?
                    .to_owned(),
            )
        };
        Ok(Target {
            url: plan.url.clone(),
            call_body: tool
                .as_ref()
                .map(|t| json!({"tool": t, "arguments": plan.args})),
            tool,
        })
    }
}

/// Whether an answer is the one `endpoint` should give: 200, an envelope that meets the
/// contract's rules ([`contract::envelope::check`]) and so a successful one, with `meta` (the
/// gateway always times its answers), carrying the data that endpoint carries.
pub fn check(endpoint: Endpoint, status: u16, body: &Value) -> Result<(), String> {
    if status != 200 {
        let code = body["code"].as_str().unwrap_or("no code");
        let error = body["error"].as_str().unwrap_or("");
        return Err(format!("status {status} ({code}: {error})"));
    }
    // At 200 the envelope check leaves only successes: every error code has another status.
    contract::envelope::check(body, status).map_err(|v| format!("not an envelope: {v}"))?;
    if !body["meta"].is_object() {
        return Err("envelope without meta".into());
    }
    let data = &body["data"];
    let shaped = match endpoint {
        Endpoint::Tools => data["tools"].is_array(),
        Endpoint::Health => data["status"].is_string(),
        Endpoint::Call => !data.is_null(),
    };
    if !shaped {
        return Err(format!("data is not what {} answers", endpoint.name()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(data: Value) -> Value {
        json!({"success": true, "data": data, "request_id": "7d0c3f0e-1c2b-4a5e-9f00-0123456789ab",
               "timestamp": "2026-11-22T10:00:00.000Z", "meta": {"execution_time_ms": 1}})
    }

    #[test]
    fn answers_are_checked_by_status_envelope_and_data() {
        assert!(check(Endpoint::Tools, 200, &ok(json!({"tools": []}))).is_ok());
        assert!(check(Endpoint::Health, 200, &ok(json!({"status": "degraded"}))).is_ok());
        assert!(check(Endpoint::Call, 200, &ok(json!({"content": []}))).is_ok());
        let failed = json!({"success": false, "error": "boom", "code": "EXECUTION_ERROR"});
        assert_eq!(
            check(Endpoint::Call, 500, &failed).unwrap_err(),
            "status 500 (EXECUTION_ERROR: boom)"
        );
        assert!(check(Endpoint::Tools, 200, &ok(json!({"status": "x"}))).is_err());
        let mut no_id = ok(json!({"tools": []}));
        no_id.as_object_mut().unwrap().remove("request_id");
        assert!(check(Endpoint::Tools, 200, &no_id).is_err());
        let mut no_meta = ok(json!({"tools": []}));
        no_meta.as_object_mut().unwrap().remove("meta");
        assert_eq!(
            check(Endpoint::Tools, 200, &no_meta).unwrap_err(),
            "envelope without meta"
        );
        assert!(check(Endpoint::Call, 200, &ok(Value::Null)).is_err());
    }

    #[test]
    fn answers_are_held_to_the_contracts_envelope() {
        let mut bad_ts = ok(json!({"tools": []}));
        bad_ts["timestamp"] = json!("2026-11-22T10:00:00Z");
        assert!(
            check(Endpoint::Tools, 200, &bad_ts)
                .unwrap_err()
                .starts_with("not an envelope: timestamp '2026-11-22T10:00:00Z'")
        );
        let mut error_too = ok(json!({"tools": []}));
        error_too["error"] = json!("what?");
        assert_eq!(
            check(Endpoint::Tools, 200, &error_too).unwrap_err(),
            "not an envelope: success=true but `error` is present"
        );
        let refused = json!({"success": false, "error": "no", "code": "EXECUTION_ERROR",
            "request_id": "7d0c3f0e-1c2b-4a5e-9f00-0123456789ab", "timestamp": "2026-11-22T10:00:00.000Z"});
        assert_eq!(
            check(Endpoint::Call, 200, &refused).unwrap_err(),
            "not an envelope: code EXECUTION_ERROR must answer 500, not 200"
        );
    }
}
