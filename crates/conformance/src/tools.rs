//! Property tests per tool: inputs valid for its schema must never be refused as invalid
//! (`tool-valid-inputs`; a body without `arguments` included, when the schema allows `{}`),
//! inputs that break it must always be (`tool-invalid-inputs`), successful results must match
//! the tool's output schema (`tool-output`); and the `unicode` round trip through tools that
//! echo their input. Failures are shrunk by proptest to a minimal input before they are
//! reported.
//!
//! A valid call that answers EXECUTION_ERROR or TIMEOUT did not run the tool: it is neither a
//! pass nor a failure, and a tool none of whose valid calls ran is reported *not exercised*.
//! So is one answered CAPABILITY_REQUIRED (the tool needs what a REST caller cannot give), or
//! refused before it ran for another reason than its input (RATE_LIMITED, SERVICE_UNAVAILABLE).

use std::cell::RefCell;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde_json::{Value, json};

use crate::client::{Exchange, Request};
use crate::schema_gen;
use crate::tester::{Tester, excerpt};

/// Codes a valid input must never get.
const REFUSALS_OF_VALID: [&str; 3] = ["INVALID_ARGUMENTS", "INVALID_REQUEST", "INTERNAL_ERROR"];
/// Codes that say the tool did not run (its backend is down, it timed out, it needs what a
/// REST caller cannot give).
const NOT_RUN: [&str; 3] = ["EXECUTION_ERROR", "TIMEOUT", "CAPABILITY_REQUIRED"];

/// What one case showed.
enum Verdict {
    Pass,
    Fail(String),
    /// The tool did not run; the message says why.
    NotRun(String),
}

/// The string sent to find echoing tools: an ASCII prefix to recognise, then non-ASCII text.
const MARKER_PREFIX: &str = "conformance-unicode:";
const MARKER: &str = "conformance-unicode: héllo wörld ✓ 日本語 Ελληνικά 🎉";

pub fn run(t: &mut Tester, tools: &[Value]) {
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default().to_owned();
        if !t.options.only_tools.is_empty() && !t.options.only_tools.contains(&name) {
            continue;
        }
        let skipped = if t.options.skip_tools.contains(&name) {
            Some("--skip-tool")
        } else if t.options.no_call {
            Some("--no-call")
        } else if tool["annotations"]["destructiveHint"] == true && !t.options.allow_destructive {
            Some("marked destructive (use --allow-destructive)")
        } else if tool["annotations"]["openWorldHint"] == true && !t.options.allow_open_world {
            Some("it may reach outside this machine (openWorldHint; use --allow-open-world)")
        } else {
            None
        };
        if let Some(why) = skipped {
            t.progress(&format!("tool '{name}': not called: {why}"));
            t.report.tool_skipped(&name, why);
            continue;
        }
        let schema = tool["input_schema"].clone();
        let output = match tool.get("output_schema").filter(|s| s.is_object()) {
            None => None,
            Some(schema) => match contract::ArgumentValidator::compile(schema) {
                Ok(v) => Some(v),
                Err(e) => {
                    t.report.fail(
                        "tool-output",
                        format!("tool '{name}': its output_schema does not compile: {e}"),
                        None,
                    );
                    None
                }
            },
        };
        examples(t, &name, output.as_ref());
        valid_inputs(t, &name, &schema, output.as_ref());
        without_arguments(t, &name, &schema);
        invalid_inputs(t, &name, &schema);
        unicode(t, &name, &schema);
    }
    if t.options.no_call {
        for check in ["tool-valid-inputs", "tool-invalid-inputs", "unicode"] {
            t.report.skip(check, "--no-call");
        }
    }
}

/// A runner seeded from the run's seed and the tool's name, so each tool gets its own
/// reproducible sequence.
fn runner(t: &Tester, tool: &str, salt: &str) -> TestRunner {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&t.options.seed.to_le_bytes());
    for (i, b) in tool.bytes().chain(salt.bytes()).enumerate() {
        seed[8 + i % 24] ^= b;
    }
    let config = Config {
        cases: t.options.cases,
        failure_persistence: None,
        max_shrink_iters: 256,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed))
}

fn call(t: &mut Tester, tool: &str, arguments: &Value) -> Option<Exchange> {
    t.exchange(Request::post_json(
        "/call-tool",
        &json!({"tool": tool, "arguments": arguments}),
    ))
}

fn valid_inputs(
    t: &mut Tester,
    tool: &str,
    schema: &Value,
    output: Option<&contract::ArgumentValidator>,
) {
    t.progress(&format!("tool '{tool}': {} valid inputs", t.options.cases));
    let strategy = schema_gen::valid(schema, schema).prop_map(|v| (v, String::new()));
    // Output mismatches are their own check; kept here while proptest runs the cases.
    let mismatches: RefCell<Vec<(String, Exchange)>> = RefCell::new(Vec::new());
    let checked_outputs = RefCell::new(0u64);
    property(
        t,
        tool,
        "tool-valid-inputs",
        strategy,
        |arguments, _, ex| {
            let verdict = judge_valid(tool, arguments, ex);
            if let (Verdict::Pass, Some(output)) = (&verdict, output) {
                *checked_outputs.borrow_mut() += 1;
                if let Some(message) = output_mismatch(tool, arguments, output, ex) {
                    mismatches.borrow_mut().push((message, ex.clone()));
                }
            }
            verdict
        },
    );
    let mismatches = mismatches.into_inner();
    for _ in 0..checked_outputs.into_inner() - mismatches.len() as u64 {
        t.report.pass("tool-output");
    }
    for (message, ex) in mismatches {
        let curl = t.curl(&ex);
        t.report.fail("tool-output", message, Some(curl));
    }
}

/// What is wrong with a successful answer's `data` by the tool's output schema, if anything.
fn output_mismatch(
    tool: &str,
    arguments: &Value,
    output: &contract::ArgumentValidator,
    ex: &Exchange,
) -> Option<String> {
    let issues = output.check(&ex.json()["data"]).err()?;
    let at: Vec<String> = issues
        .iter()
        .map(|i| format!("'{}': {}", i.path, i.message))
        .collect();
    Some(format!(
        "tool '{tool}': the result of {arguments} does not match its output_schema: {}",
        excerpt(&at.join("; "))
    ))
}

/// The verdict on a valid input's answer: refused is a failure, not run is neither.
fn judge_valid(tool: &str, arguments: &Value, ex: &Exchange) -> Verdict {
    let code = ex.code().unwrap_or_default();
    let error = excerpt(ex.json()["error"].as_str().unwrap_or_default());
    if REFUSALS_OF_VALID.contains(&code) {
        Verdict::Fail(format!(
            "tool '{tool}': valid arguments {arguments} answered {} {code}: {error}",
            ex.status
        ))
    } else if NOT_RUN.contains(&code) {
        Verdict::NotRun(format!("{code}: {error}"))
    } else if ex.json()["success"] != json!(true) {
        // Refused before it ran for a reason that is not the input's (RATE_LIMITED,
        // SERVICE_UNAVAILABLE, FORBIDDEN by a key's scope): it proves nothing about the tool,
        // and there is no `data` to check against the output schema.
        Verdict::NotRun(format!("{} {code}: {error}", ex.status))
    } else {
        Verdict::Pass
    }
}

/// The known-good arguments given for this tool (`--example`): each must be accepted, and
/// one that runs exercises the tool (its result checked against the output schema).
fn examples(t: &mut Tester, tool: &str, output: Option<&contract::ArgumentValidator>) {
    let given: Vec<Value> = t
        .options
        .examples
        .iter()
        .filter(|(name, _)| name == tool)
        .map(|(_, arguments)| arguments.clone())
        .collect();
    for arguments in given {
        let Some(ex) = call(t, tool, &arguments) else {
            continue;
        };
        match judge_valid(tool, &arguments, &ex) {
            Verdict::Pass => {
                t.report.pass("tool-valid-inputs");
                t.report.tool_succeeded(tool);
                if let Some(output) = output {
                    match output_mismatch(tool, &arguments, output, &ex) {
                        None => t.report.pass("tool-output"),
                        Some(message) => {
                            let curl = t.curl(&ex);
                            t.report.fail("tool-output", message, Some(curl));
                        }
                    }
                }
            }
            Verdict::NotRun(why) => t.report.tool_not_run(tool, &why),
            Verdict::Fail(message) => {
                let curl = t.curl(&ex);
                t.report.fail("tool-valid-inputs", message, Some(curl));
            }
        }
    }
}

/// A body the document allows — `{"tool": name}` with no `arguments` — is accepted when the
/// tool's schema accepts `{}` (positive data acceptance of the request body itself).
fn without_arguments(t: &mut Tester, tool: &str, schema: &Value) {
    let Ok(validator) = contract::ArgumentValidator::compile(schema) else {
        return;
    };
    if validator.check(&json!({})).is_err() {
        return;
    }
    let Some(ex) = t.exchange(Request::post_json("/call-tool", &json!({"tool": tool}))) else {
        return;
    };
    match judge_valid(tool, &json!("(no arguments)"), &ex) {
        Verdict::Pass => {
            t.report.pass("tool-valid-inputs");
            t.report.tool_succeeded(tool);
        }
        Verdict::NotRun(why) => t.report.tool_not_run(tool, &why),
        Verdict::Fail(message) => {
            let curl = t.curl(&ex);
            t.report.fail("tool-valid-inputs", message, Some(curl));
        }
    }
}

fn invalid_inputs(t: &mut Tester, tool: &str, schema: &Value) {
    let Some(strategy) = schema_gen::invalid(schema, schema) else {
        t.progress(&format!("tool '{tool}': its schema has no rule to break"));
        return;
    };
    t.progress(&format!(
        "tool '{tool}': {} invalid inputs",
        t.options.cases
    ));
    property(
        t,
        tool,
        "tool-invalid-inputs",
        strategy,
        |arguments, why, ex| {
            let code = ex.code().unwrap_or("(none)");
            if ex.status == 400 && code == "INVALID_ARGUMENTS" {
                Verdict::Pass
            } else {
                Verdict::Fail(format!(
                    "tool '{tool}': invalid arguments {arguments} ({why}) answered {} {code}, not 400 INVALID_ARGUMENTS",
                    ex.status
                ))
            }
        },
    );
}

/// Calls the tool with each generated (arguments, note); `judge` gives each answer's
/// verdict. The smallest failing input proptest shrinks to is reported; answers of a tool that
/// did not run count for its exercise record, not as passes.
fn property<S, J>(t: &mut Tester, tool: &str, check: &str, strategy: S, judge: J)
where
    S: Strategy<Value = (Value, String)>,
    J: Fn(&Value, &str, &Exchange) -> Verdict,
{
    let mut runner = runner(t, tool, check);
    let passed = RefCell::new(0u64);
    let not_run: RefCell<Vec<String>> = RefCell::new(Vec::new());
    let last_failure: RefCell<Option<(String, String)>> = RefCell::new(None);
    let tester = RefCell::new(&mut *t);
    let result = runner.run(&strategy, |(arguments, note)| {
        let mut t = tester.borrow_mut();
        let Some(ex) = call(&mut t, tool, &arguments) else {
            return Err(TestCaseError::fail("no answer"));
        };
        match judge(&arguments, &note, &ex) {
            Verdict::Fail(message) => {
                *last_failure.borrow_mut() = Some((message.clone(), t.curl(&ex)));
                return Err(TestCaseError::fail(message));
            }
            Verdict::NotRun(why) => not_run.borrow_mut().push(why),
            Verdict::Pass => *passed.borrow_mut() += 1,
        }
        Ok(())
    });
    let t = tester.into_inner();
    if check == "tool-valid-inputs" {
        for why in not_run.into_inner() {
            t.report.tool_not_run(tool, &why);
        }
        for _ in 0..*passed.borrow() {
            t.report.tool_succeeded(tool);
        }
    }
    finish(
        t,
        check,
        tool,
        result,
        passed.into_inner(),
        last_failure.into_inner(),
    );
}

/// Records the passes, and the shrunk failure with the request that showed it.
fn finish<V: std::fmt::Debug>(
    t: &mut Tester,
    check: &str,
    tool: &str,
    result: Result<(), TestError<V>>,
    passed: u64,
    last_failure: Option<(String, String)>,
) {
    // Shrinking re-runs inputs; `last_failure` is the smallest one that still failed.
    for _ in 0..passed {
        t.report.pass(check);
    }
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, _)) => {
            let (message, curl) =
                last_failure.unwrap_or_else(|| (reason.to_string(), String::new()));
            t.report.fail(
                check,
                format!("{message} (shrunk to a minimal input)"),
                Some(curl).filter(|c| !c.is_empty()),
            );
        }
        Err(TestError::Abort(reason)) => {
            t.report.fail(
                check,
                format!("tool '{tool}': could not generate inputs from its schema: {reason}"),
                None,
            );
        }
    }
}

/// Calls the tool with every free-form string argument set to a non-ASCII marker; when the
/// answer shows the marker's ASCII prefix, the tool echoes, and the whole marker must be there.
fn unicode(t: &mut Tester, tool: &str, schema: &Value) {
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let free_strings: Vec<String> = properties
        .iter()
        .filter(|(_, p)| {
            p["type"] == "string"
                && p.get("enum").is_none()
                && p.get("pattern").is_none()
                && p.get("format").is_none()
                && p["maxLength"]
                    .as_u64()
                    .is_none_or(|m| m as usize >= MARKER.chars().count())
        })
        .map(|(n, _)| n.clone())
        .collect();
    if free_strings.is_empty() {
        return;
    }
    let runner = &mut runner(t, tool, "unicode");
    let Ok(tree) = schema_gen::valid(schema, schema).new_tree(runner) else {
        return;
    };
    let mut arguments = tree.current();
    for name in &free_strings {
        arguments[name] = json!(MARKER);
    }
    let Some(ex) = call(t, tool, &arguments) else {
        return;
    };
    let answer = ex.json().to_string();
    if !answer.contains(MARKER_PREFIX) {
        return;
    }
    if answer.contains(MARKER) {
        t.report.pass("unicode");
    } else {
        let curl = t.curl(&ex);
        t.report.fail(
            "unicode",
            format!("tool '{tool}' echoed '{MARKER}' as: {}", excerpt(&answer)),
            Some(curl),
        );
    }
}
