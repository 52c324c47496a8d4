//! Property tests per tool: inputs valid for its schema must never be refused as invalid
//! (`tool-valid-inputs`), inputs that break it must always be (`tool-invalid-inputs`); and the
//! `unicode` round trip through tools that echo their input. Failures are shrunk by proptest to
//! a minimal input before they are reported.

use std::cell::RefCell;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde_json::{Value, json};

use crate::client::{Exchange, Request};
use crate::schema_gen;
use crate::tester::{Tester, excerpt};

/// Codes a valid input must never get.
const REFUSALS_OF_VALID: [&str; 3] = ["INVALID_ARGUMENTS", "INVALID_REQUEST", "INTERNAL_ERROR"];

/// The string sent to find echoing tools: an ASCII prefix to recognise, then non-ASCII text.
const MARKER_PREFIX: &str = "conformance-unicode:";
const MARKER: &str = "conformance-unicode: héllo wörld ✓ 日本語 Ελληνικά 🎉";

pub fn run(t: &mut Tester, tools: &[Value]) {
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default().to_owned();
        if !t.options.only_tools.is_empty() && !t.options.only_tools.contains(&name) {
            continue;
        }
        if t.options.skip_tools.contains(&name) {
            t.progress(&format!("tool '{name}': skipped (--skip-tool)"));
            continue;
        }
        if t.options.no_call {
            continue;
        }
        if tool["annotations"]["destructiveHint"] == true && !t.options.allow_destructive {
            t.progress(&format!(
                "tool '{name}': not called, it is marked destructive (use --allow-destructive)"
            ));
            continue;
        }
        if tool["annotations"]["openWorldHint"] == true && !t.options.allow_open_world {
            t.progress(&format!("tool '{name}': not called, it may reach outside this machine (openWorldHint; use --allow-open-world)"));
            continue;
        }
        let schema = tool["input_schema"].clone();
        valid_inputs(t, &name, &schema);
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

fn valid_inputs(t: &mut Tester, tool: &str, schema: &Value) {
    t.progress(&format!("tool '{tool}': {} valid inputs", t.options.cases));
    let strategy = schema_gen::valid(schema, schema).prop_map(|v| (v, String::new()));
    property(
        t,
        tool,
        "tool-valid-inputs",
        strategy,
        |arguments, _, ex| {
            let code = ex.code().unwrap_or_default();
            REFUSALS_OF_VALID.contains(&code).then(|| {
                let error = excerpt(ex.json()["error"].as_str().unwrap_or_default());
                format!(
                    "tool '{tool}': valid arguments {arguments} answered {} {code}: {error}",
                    ex.status
                )
            })
        },
    );
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
            (ex.status != 400 || code != "INVALID_ARGUMENTS").then(|| {
            format!("tool '{tool}': invalid arguments {arguments} ({why}) answered {} {code}, not 400 INVALID_ARGUMENTS", ex.status)
        })
        },
    );
}

/// Calls the tool with each generated (arguments, note); `judge` says what is wrong with an
/// answer, if anything. The smallest failing input proptest shrinks to is reported.
fn property<S, J>(t: &mut Tester, tool: &str, check: &str, strategy: S, judge: J)
where
    S: Strategy<Value = (Value, String)>,
    J: Fn(&Value, &str, &Exchange) -> Option<String>,
{
    let mut runner = runner(t, tool, check);
    let passed = RefCell::new(0u64);
    let last_failure: RefCell<Option<(String, String)>> = RefCell::new(None);
    let tester = RefCell::new(&mut *t);
    let result = runner.run(&strategy, |(arguments, note)| {
        let mut t = tester.borrow_mut();
        let Some(ex) = call(&mut t, tool, &arguments) else {
            return Err(TestCaseError::fail("no answer"));
        };
        if let Some(message) = judge(&arguments, &note, &ex) {
            *last_failure.borrow_mut() = Some((message.clone(), t.curl(&ex)));
            return Err(TestCaseError::fail(message));
        }
        *passed.borrow_mut() += 1;
        Ok(())
    });
    let t = tester.into_inner();
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
