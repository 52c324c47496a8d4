//! What the run found: per check, how many cases ran, passed and failed, and each failure
//! with the request that caused it. Rendered as a table for people, JUnit XML for CI and
//! JSON for scripts.

use std::fmt::Write as _;

use serde::Serialize;

/// The checks, in the order the report lists them, with what each verifies.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "response-schema",
        "every response body matches the spec's schema for its operation and status",
    ),
    (
        "envelope",
        "success ⇔ data, error+code on failure, request_id v4 = X-Request-Id, timestamp, execution_time_ms",
    ),
    (
        "status-codes",
        "each provokable code answers with its status (404, 400, 405, 413)",
    ),
    (
        "tool-valid-inputs",
        "inputs valid for a tool's schema never answer INVALID_ARGUMENTS, INVALID_REQUEST or INTERNAL_ERROR",
    ),
    (
        "tool-invalid-inputs",
        "inputs that break a tool's schema always answer 400 INVALID_ARGUMENTS",
    ),
    (
        "request-id",
        "a client's request id is echoed; generated ones are unique",
    ),
    (
        "tools-list",
        "GET /tools is stable and every input_schema is a JSON Schema of type object",
    ),
    (
        "openapi-tools",
        "GET /openapi.json has one operation per tool with its input schema",
    ),
    (
        "health",
        "GET /health matches its schema, its status matches the HTTP status, uptime never decreases",
    ),
    (
        "unicode",
        "non-ASCII strings survive a round trip through tools that echo their input",
    ),
    (
        "mcp",
        "tools/list at /mcp equals GET /tools and tools/call agrees with POST /call-tool",
    ),
];

#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub message: String,
    /// The request that shows it, as a curl command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curl: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub description: String,
    pub cases: u64,
    pub passed: u64,
    pub failed: u64,
    /// Why the check did not run, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub failures: Vec<Failure>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub url: String,
    pub seed: u64,
    pub checks: Vec<CheckResult>,
}

/// Failures kept per check; more are counted, not listed.
const FAILURES_KEPT: usize = 20;

impl Report {
    pub fn new(url: &str, seed: u64) -> Report {
        let checks = CHECKS
            .iter()
            .map(|(name, description)| CheckResult {
                name: (*name).to_owned(),
                description: (*description).to_owned(),
                cases: 0,
                passed: 0,
                failed: 0,
                skipped: None,
                failures: Vec::new(),
            })
            .collect();
        Report {
            url: url.to_owned(),
            seed,
            checks,
        }
    }

    fn check(&mut self, name: &str) -> &mut CheckResult {
        self.checks
            .iter_mut()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("unknown check {name}"))
    }

    pub fn pass(&mut self, check: &str) {
        let c = self.check(check);
        c.cases += 1;
        c.passed += 1;
    }

    pub fn fail(&mut self, check: &str, message: String, curl: Option<String>) {
        let c = self.check(check);
        c.cases += 1;
        c.failed += 1;
        if c.failures.len() < FAILURES_KEPT {
            c.failures.push(Failure { message, curl });
        }
    }

    /// Records one case from a result.
    pub fn record(&mut self, check: &str, outcome: Result<(), Failure>) {
        match outcome {
            Ok(()) => self.pass(check),
            Err(f) => self.fail(check, f.message, f.curl),
        }
    }

    pub fn skip(&mut self, check: &str, why: &str) {
        let c = self.check(check);
        if c.cases == 0 {
            c.skipped = Some(why.to_owned());
        }
    }

    pub fn ok(&self) -> bool {
        self.checks.iter().all(|c| c.failed == 0)
    }

    /// The summary table and every failure, for a terminal.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "\nConformance of {} (seed {})\n", self.url, self.seed);
        let _ = writeln!(
            out,
            "{:<22} {:>7} {:>7} {:>7}  result",
            "check", "cases", "passed", "failed"
        );
        let _ = writeln!(out, "{}", "-".repeat(60));
        for c in &self.checks {
            let result = match (&c.skipped, c.failed) {
                (Some(why), 0) if c.cases == 0 => format!("skipped: {why}"),
                (_, 0) => "ok".to_owned(),
                _ => "FAILED".to_owned(),
            };
            let _ = writeln!(
                out,
                "{:<22} {:>7} {:>7} {:>7}  {result}",
                c.name, c.cases, c.passed, c.failed
            );
        }
        for c in self.checks.iter().filter(|c| c.failed > 0) {
            let _ = writeln!(
                out,
                "\n{} — {} failure(s): {}",
                c.name, c.failed, c.description
            );
            for f in &c.failures {
                let _ = writeln!(out, "  ✗ {}", f.message.replace('\n', "\n    "));
                if let Some(curl) = &f.curl {
                    let _ = writeln!(out, "    reproduce: {curl}");
                }
            }
            if c.failed as usize > c.failures.len() {
                let _ = writeln!(out, "  … and {} more", c.failed as usize - c.failures.len());
            }
        }
        let total: u64 = self.checks.iter().map(|c| c.cases).sum();
        let failed: u64 = self.checks.iter().map(|c| c.failed).sum();
        let _ = writeln!(out, "\n{} passed, {} failed", total - failed, failed);
        out
    }

    /// JUnit XML: one test suite, one test case per check.
    pub fn junit(&self) -> String {
        let tests = self.checks.len();
        let failures = self.checks.iter().filter(|c| c.failed > 0).count();
        let skipped = self
            .checks
            .iter()
            .filter(|c| c.cases == 0 && c.skipped.is_some())
            .count();
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            xml,
            "<testsuites><testsuite name=\"conformance {}\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\">",
            escape(&self.url)
        );
        for c in &self.checks {
            let _ = write!(
                xml,
                "  <testcase classname=\"conformance\" name=\"{}\">",
                escape(&c.name)
            );
            if c.failed > 0 {
                let details: Vec<String> = c
                    .failures
                    .iter()
                    .map(|f| match &f.curl {
                        Some(curl) => format!("{}\n  reproduce: {curl}", f.message),
                        None => f.message.clone(),
                    })
                    .collect();
                let _ = write!(
                    xml,
                    "<failure message=\"{} of {} cases failed\">{}</failure>",
                    c.failed,
                    c.cases,
                    escape(&details.join("\n"))
                );
            } else if c.cases == 0 && c.skipped.is_some() {
                let _ = write!(
                    xml,
                    "<skipped message=\"{}\"/>",
                    escape(c.skipped.as_deref().unwrap_or_default())
                );
            }
            let _ = writeln!(
                xml,
                "<system-out>{} cases, {} passed</system-out></testcase>",
                c.cases, c.passed
            );
        }
        xml.push_str("</testsuite></testsuites>\n");
        xml
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_fail_the_report_and_show_in_every_form() {
        let mut r = Report::new("http://h", 7);
        r.pass("envelope");
        assert!(r.ok());
        r.fail(
            "status-codes",
            "DELETE /tools answered 404, expected 405".into(),
            Some("curl -X DELETE 'http://h/tools'".into()),
        );
        assert!(!r.ok());
        let text = r.render();
        assert!(
            text.contains("status-codes")
                && text.contains("FAILED")
                && text.contains("reproduce: curl -X DELETE")
        );
        assert!(text.contains("1 passed, 1 failed"));
        let xml = r.junit();
        assert!(xml.contains("<failure message=\"1 of 1 cases failed\">"));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["checks"][2]["failed"], 1);
    }
}
