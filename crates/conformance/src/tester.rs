//! The tester: sends every request through one place, where each answer is held to the
//! response schema of its operation and status (check `response-schema`) and to the envelope
//! rules of `contract::envelope` (check `envelope`), and where generated request ids are
//! collected for the uniqueness check.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use contract::{REQUEST_ID_HEADER, envelope};
use serde_json::Value;

use crate::client::{Client, Exchange, Request};
use crate::report::{Failure, Report};
use crate::spec::{Expectation, Spec, violations};

/// What to test and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub url: String,
    pub spec: Option<PathBuf>,
    pub cases: u32,
    pub seed: u64,
    pub only_tools: Vec<String>,
    pub skip_tools: Vec<String>,
    /// Known-good arguments per tool, called before the generated ones: a schema says which
    /// inputs are well-formed, not which ones a tool can run with (a real timezone, an id that
    /// exists), so these are how a tool with such inputs gets exercised.
    pub examples: Vec<(String, serde_json::Value)>,
    pub allow_destructive: bool,
    /// Also call tools annotated `openWorldHint: true` (they may reach outside this machine).
    pub allow_open_world: bool,
    pub no_call: bool,
    pub mcp: bool,
    /// The body limit to exceed; read from the service's `/openapi.json` (`x-limits`) when absent.
    pub max_body_bytes: Option<u64>,
    pub timeout: Duration,
    pub progress: bool,
}

impl Options {
    pub fn new(url: &str) -> Options {
        Options {
            url: url.to_owned(),
            spec: None,
            cases: 256,
            seed: 0,
            only_tools: Vec::new(),
            skip_tools: Vec::new(),
            examples: Vec::new(),
            allow_destructive: false,
            allow_open_world: false,
            no_call: false,
            mcp: false,
            max_body_bytes: None,
            timeout: Duration::from_secs(60),
            progress: false,
        }
    }
}

pub struct Tester {
    pub client: Client,
    pub spec: Spec,
    pub report: Report,
    pub options: Options,
    /// Generated request id → the request that got it first.
    generated: HashMap<String, String>,
}

impl Tester {
    pub fn new(options: Options) -> Result<Tester, String> {
        let client = Client::new(&options.url, options.timeout)?;
        let spec = Spec::load(options.spec.as_deref())?;
        let report = Report::new(&client.base, options.seed);
        Ok(Tester {
            client,
            spec,
            report,
            options,
            generated: HashMap::new(),
        })
    }

    pub fn progress(&self, message: &str) {
        if self.options.progress {
            eprintln!("conformance: {message}");
        }
    }

    /// Sends a request and judges the answer as an envelope. `None` when nothing came back
    /// (recorded as a failure).
    pub fn exchange(&mut self, request: Request) -> Option<Exchange> {
        let curl = request.curl(&self.client.base);
        match self.client.send(request) {
            Ok(exchange) => {
                self.observe(&exchange);
                Some(exchange)
            }
            Err(e) => {
                self.report
                    .fail("envelope", format!("no answer: {e}"), Some(curl));
                None
            }
        }
    }

    /// Sends a request whose answer is not an envelope (the OpenAPI document).
    pub fn fetch(&mut self, request: Request) -> Option<Exchange> {
        let curl = request.curl(&self.client.base);
        match self.client.send(request) {
            Ok(exchange) => Some(exchange),
            Err(e) => {
                self.report
                    .fail("openapi-tools", format!("no answer: {e}"), Some(curl));
                None
            }
        }
    }

    pub fn curl(&self, exchange: &Exchange) -> String {
        exchange.request.curl(&self.client.base)
    }

    fn observe(&mut self, exchange: &Exchange) {
        let curl = self.curl(exchange);
        let outcome = self.schema_check(exchange).map_err(|message| Failure {
            message,
            curl: Some(curl.clone()),
        });
        self.report.record("response-schema", outcome);
        let outcome = self.envelope_check(exchange).map_err(|message| Failure {
            message,
            curl: Some(curl),
        });
        self.report.record("envelope", outcome);
    }

    fn schema_check(&self, ex: &Exchange) -> Result<(), String> {
        let request = &ex.request;
        let Some(body) = &ex.json else {
            return Err(format!(
                "{} {} → {}: the body is not JSON: {}",
                request.method,
                request.path,
                ex.status,
                excerpt(&ex.body)
            ));
        };
        match self.spec.expect(&request.method, &request.path, ex.status) {
            Expectation::Undocumented {
                operation,
                documented,
            } => Err(format!(
                "{operation} answered {}, a status the spec does not document (documented: {})",
                ex.status,
                documented.join(", ")
            )),
            Expectation::Schema(validator) => {
                let problems = violations(validator, body);
                if problems.is_empty() {
                    Ok(())
                } else {
                    Err(format!(
                        "{} {} → {}: body does not match the spec's schema:\n{}",
                        request.method,
                        request.path,
                        ex.status,
                        problems.join("\n")
                    ))
                }
            }
        }
    }

    /// The contract's envelope rules ([`contract::envelope::check`]) and the header echo of the
    /// request id, then what only a tester of a live service can judge: a generated request id
    /// is never given twice, the timestamp is about now, and calls say how long they took.
    fn envelope_check(&mut self, ex: &Exchange) -> Result<(), String> {
        let what = format!("{} {} → {}", ex.request.method, ex.request.path, ex.status);
        let body = ex.json.as_ref().unwrap_or(&Value::Null);
        envelope::check(body, ex.status).map_err(|v| format!("{what}: {v}"))?;
        envelope::check_request_id_header(body, ex.header(REQUEST_ID_HEADER))
            .map_err(|v| format!("{what}: {v}"))?;
        // The envelope check passed: `request_id` and `timestamp` are strings.
        let id = body["request_id"].as_str().unwrap_or_default();
        let client_id = ex
            .request
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(REQUEST_ID_HEADER))
            .map(|(_, v)| v.as_str());
        let body_id = ex
            .request
            .body
            .as_deref()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
            .and_then(|v| v["request_id"].as_str().map(str::to_owned));
        if client_id.is_none() && body_id.is_none() {
            let request = format!("{} {}", ex.request.method, ex.request.path);
            if let Some(first) = self.generated.insert(id.to_owned(), request.clone()) {
                self.report.fail(
                    "request-id",
                    format!("generated request id {id} given twice: to {first} and to {request}"),
                    Some(self.curl(ex)),
                );
            } else {
                self.report.pass("request-id");
            }
        }
        let timestamp = body["timestamp"].as_str().unwrap_or_default();
        check_clock(timestamp).map_err(|e| format!("{what}: {e}"))?;
        let path = ex.request.path.as_str();
        if path == "/call-tool" || path.starts_with("/tools/") {
            let ms = &body["meta"]["execution_time_ms"];
            if !(ms.is_u64()) {
                return Err(format!(
                    "{what}: meta.execution_time_ms must be an integer ≥ 0, got {ms}"
                ));
            }
        }
        Ok(())
    }
}

pub fn excerpt(text: &str) -> String {
    let cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// Within a minute of this machine's clock: a service whose clock is off misdates its logs.
/// (The shape of the timestamp is the envelope's rule, checked before.)
fn check_clock(ts: &str) -> Result<(), String> {
    let Ok(parsed) = chrono::DateTime::parse_from_rfc3339(ts) else {
        return Err(format!("timestamp '{ts}' is not RFC 3339"));
    };
    let skew = (chrono::Utc::now() - parsed.with_timezone(&chrono::Utc))
        .num_seconds()
        .abs();
    if skew > 60 {
        return Err(format!("timestamp '{ts}' is {skew} s away from now"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_about_now() {
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        assert!(check_clock(&now).is_ok());
        assert!(
            check_clock("2001-01-01T12:00:00.000Z")
                .unwrap_err()
                .contains("away from now")
        );
    }
}
