//! What the run found: per check, how many cases ran, passed and failed, and each failure
//! with the request that caused it. Rendered as a table for people, JUnit XML for CI and
//! JSON for scripts.

use std::fmt::Write as _;

use serde::Serialize;

use crate::tester::excerpt;

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
        "methods",
        "every route answers an undeclared method with 405 METHOD_NOT_ALLOWED and Allow, before judging the content",
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
        "openapi-refs",
        "every $ref in GET /openapi.json resolves within the document",
    ),
    (
        "tool-output",
        "successful results match the tool's output_schema",
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
        "resources-prompts",
        "resources are read, prompts rendered and their args_schema enforced, unknown ones 404 RESOURCE_NOT_FOUND / PROMPT_NOT_FOUND (when the service offers any)",
    ),
    (
        "tasks",
        "a call with Prefer: respond-async answers 202 with Location /tasks/{id}, the task is read until it ends with the call's result, unknown tasks are 404 NOT_FOUND (when the document has /tasks/{id})",
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

/// Whether a tool's behaviour was seen at all: a tool whose every valid call failed to run
/// (EXECUTION_ERROR, TIMEOUT: a backend down) proves nothing, and is never counted as passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// At least one valid call answered 200.
    Exercised,
    /// Called, but no call answered 200.
    NotExercised,
    /// Not called (options, annotations).
    Skipped,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolRecord {
    pub name: String,
    pub status: ToolStatus,
    /// Valid calls answered 200.
    pub succeeded: u64,
    /// Valid calls that did not run (EXECUTION_ERROR, TIMEOUT).
    pub not_run: u64,
    /// Why it was skipped, or the last reason it did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub url: String,
    pub seed: u64,
    pub checks: Vec<CheckResult>,
    /// Every tool the service lists, and whether it was exercised.
    pub tools: Vec<ToolRecord>,
}

/// Failures kept per check; more are counted, not listed.
const FAILURES_KEPT: usize = 20;

impl Report {
    pub fn new(url: &str, seed: u64) -> Report {
        Report::with_checks(url, seed, CHECKS)
    }

    /// A report of another list of checks (`conformance --grpc` has its own).
    pub fn with_checks(url: &str, seed: u64, checks: &[(&str, &str)]) -> Report {
        let checks = checks
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
            tools: Vec::new(),
        }
    }

    fn tool(&mut self, name: &str) -> &mut ToolRecord {
        if let Some(i) = self.tools.iter().position(|t| t.name == name) {
            return &mut self.tools[i];
        }
        self.tools.push(ToolRecord {
            name: name.to_owned(),
            status: ToolStatus::Skipped,
            succeeded: 0,
            not_run: 0,
            note: None,
        });
        self.tools.last_mut().expect("just pushed")
    }

    /// Whether a valid call of `tool` answered 200.
    pub fn exercised(&self, tool: &str) -> bool {
        self.tools
            .iter()
            .any(|t| t.name == tool && t.status == ToolStatus::Exercised)
    }

    /// A valid call of `tool` answered 200.
    pub fn tool_succeeded(&mut self, tool: &str) {
        let t = self.tool(tool);
        t.succeeded += 1;
        t.status = ToolStatus::Exercised;
    }

    /// A valid call of `tool` did not run (EXECUTION_ERROR, TIMEOUT): `why` is its message.
    pub fn tool_not_run(&mut self, tool: &str, why: &str) {
        let t = self.tool(tool);
        t.not_run += 1;
        if t.status != ToolStatus::Exercised {
            t.status = ToolStatus::NotExercised;
            t.note = Some(why.to_owned());
        }
    }

    /// `tool` was not called, for `why`.
    pub fn tool_skipped(&mut self, tool: &str, why: &str) {
        let t = self.tool(tool);
        t.note = Some(why.to_owned());
    }

    /// The tools that were called but never ran.
    pub fn not_exercised(&self) -> Vec<&str> {
        self.tools
            .iter()
            .filter(|t| t.status == ToolStatus::NotExercised)
            .map(|t| t.name.as_str())
            .collect()
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

    /// What the run did not test, each a sentence: a listed tool that no valid call ran (unless
    /// named in `allowed`), a check that ran no case and says no reason why, or a run with no
    /// case at all. A run that passes with gaps proved less than it seems to.
    pub fn gaps(&self, allowed: &[String]) -> Vec<String> {
        let mut gaps: Vec<String> = self
            .not_exercised()
            .into_iter()
            .filter(|tool| !allowed.iter().any(|a| a == tool))
            .map(|tool| format!("tool '{tool}' was never exercised: no valid call of it ran (--allow-not-exercised {tool} accepts that)"))
            .collect();
        gaps.extend(
            self.checks
                .iter()
                .filter(|c| c.cases == 0 && c.skipped.is_none())
                .map(|c| format!("check '{}' ran no case", c.name)),
        );
        if self.checks.iter().all(|c| c.cases == 0) {
            gaps.push("no check ran a single case".to_owned());
        }
        gaps
    }

    /// The summary table and every failure, for a terminal.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // The gRPC checks generate nothing at random: no seed to replay.
        if self.url.starts_with("grpc://") {
            let _ = writeln!(out, "\nConformance of {}\n", self.url);
        } else {
            let _ = writeln!(out, "\nConformance of {} (seed {})\n", self.url, self.seed);
        }
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
        if !self.tools.is_empty() {
            let _ = writeln!(
                out,
                "\n{:<32} {:>9} {:>8}  status",
                "tool", "succeeded", "not run"
            );
            let _ = writeln!(out, "{}", "-".repeat(64));
            for t in &self.tools {
                let status = match (t.status, &t.note) {
                    (ToolStatus::Exercised, _) => "exercised".to_owned(),
                    (ToolStatus::NotExercised, Some(why)) => {
                        format!("NOT EXERCISED: {}", excerpt(why))
                    }
                    (ToolStatus::NotExercised, None) => "NOT EXERCISED".to_owned(),
                    (ToolStatus::Skipped, Some(why)) => format!("skipped: {why}"),
                    (ToolStatus::Skipped, None) => "skipped".to_owned(),
                };
                let _ = writeln!(
                    out,
                    "{:<32} {:>9} {:>8}  {status}",
                    t.name, t.succeeded, t.not_run
                );
            }
        }
        let total: u64 = self.checks.iter().map(|c| c.cases).sum();
        let failed: u64 = self.checks.iter().map(|c| c.failed).sum();
        let _ = writeln!(out, "\n{} passed, {} failed", total - failed, failed);
        let idle = self.not_exercised();
        if !idle.is_empty() {
            let _ = writeln!(
                out,
                "{} tool(s) not exercised (no valid call ran; not counted as passed): {}",
                idle.len(),
                idle.join(", ")
            );
        }
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
        xml.push_str("</testsuite>\n");
        if !self.tools.is_empty() {
            let skipped = self
                .tools
                .iter()
                .filter(|t| t.status != ToolStatus::Exercised)
                .count();
            let _ = writeln!(
                xml,
                "<testsuite name=\"tools {}\" tests=\"{}\" failures=\"0\" skipped=\"{skipped}\">",
                escape(&self.url),
                self.tools.len()
            );
            for t in &self.tools {
                let _ = write!(
                    xml,
                    "  <testcase classname=\"conformance.tools\" name=\"{}\">",
                    escape(&t.name)
                );
                match t.status {
                    ToolStatus::Exercised => {}
                    ToolStatus::NotExercised => {
                        let _ = write!(
                            xml,
                            "<skipped message=\"not exercised: no valid call ran ({} did not): {}\"/>",
                            t.not_run,
                            escape(t.note.as_deref().unwrap_or_default())
                        );
                    }
                    ToolStatus::Skipped => {
                        let _ = write!(
                            xml,
                            "<skipped message=\"not called: {}\"/>",
                            escape(t.note.as_deref().unwrap_or_default())
                        );
                    }
                }
                let _ = writeln!(
                    xml,
                    "<system-out>{} succeeded, {} not run</system-out></testcase>",
                    t.succeeded, t.not_run
                );
            }
            xml.push_str("</testsuite>\n");
        }
        xml.push_str("</testsuites>\n");
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

    #[test]
    fn a_check_with_no_case_and_no_reason_is_a_gap() {
        let mut r = Report::with_checks("http://h", 1, &[("a", "A"), ("b", "B"), ("c", "C")]);
        let gaps = r.gaps(&[]);
        assert!(
            gaps.contains(&"no check ran a single case".to_owned()),
            "{gaps:?}"
        );
        assert!(
            gaps.contains(&"check 'a' ran no case".to_owned()),
            "{gaps:?}"
        );
        r.pass("a");
        r.skip("b", "the service offers no resources");
        assert_eq!(r.gaps(&[]), ["check 'c' ran no case"]);
        r.fail("c", "wrong".into(), None);
        assert!(r.gaps(&[]).is_empty());
    }

    #[test]
    fn a_tool_that_never_ran_is_not_exercised_in_every_form() {
        let mut r = Report::new("http://h", 7);
        r.tool_not_run("query_callers", "Dependency connection failed: memgraph");
        r.tool_not_run("query_callers", "Dependency connection failed: memgraph");
        r.tool_succeeded("echo");
        r.tool_not_run("echo", "a bad day");
        r.tool_skipped("sleep", "--skip-tool");
        assert_eq!(r.not_exercised(), ["query_callers"]);
        let gaps = r.gaps(&[]);
        assert!(
            gaps.iter()
                .any(|g| g.contains("'query_callers' was never exercised")),
            "{gaps:?}"
        );
        assert!(
            !r.gaps(&["query_callers".to_owned()])
                .iter()
                .any(|g| g.contains("query_callers"))
        );
        assert!(r.ok(), "not exercised is not a failure, nor a pass");
        let text = r.render();
        assert!(
            text.contains("NOT EXERCISED: Dependency connection failed"),
            "{text}"
        );
        assert!(text.contains("1 tool(s) not exercised"), "{text}");
        let xml = r.junit();
        assert!(
            xml.contains("name=\"query_callers\"><skipped message=\"not exercised"),
            "{xml}"
        );
        assert!(
            xml.contains("name=\"echo\"><system-out>1 succeeded"),
            "{xml}"
        );
        assert!(
            xml.contains("name=\"sleep\"><skipped message=\"not called: --skip-tool"),
            "{xml}"
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["tools"][0]["status"], "not_exercised");
        assert_eq!(json["tools"][1]["status"], "exercised");
        assert_eq!(json["tools"][2]["status"], "skipped");
    }
}
