//! Check `tasks`: a call started with `Prefer: respond-async` answers 202 with
//! `Location: /tasks/{id}` and the task in `data`; the task, read at its location, ends
//! (`completed` with the call's `data` in `result`, or `failed` with its `error`); an unknown
//! task is 404 `NOT_FOUND` to `GET` and `DELETE`. The call is one already seen to run: a tool
//! given with `--example`, else one whose input schema accepts `{}`. A document without
//! `/tasks/{id}` makes the check "skipped".

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::Request;
use crate::tester::Tester;

const CHECK: &str = "tasks";

/// A tool seen to run and arguments it ran with.
fn known_call(t: &Tester, tools: &[Value]) -> Option<(String, Value)> {
    let given = t
        .options
        .examples
        .iter()
        .find(|(name, _)| t.report.exercised(name))
        .cloned();
    given.or_else(|| {
        tools.iter().find_map(|tool| {
            let name = tool["name"].as_str()?;
            let validator = contract::ArgumentValidator::compile(&tool["input_schema"]).ok()?;
            (t.report.exercised(name) && validator.check(&json!({})).is_ok())
                .then(|| (name.to_owned(), json!({})))
        })
    })
}

pub fn run(t: &mut Tester, tools: &[Value]) {
    t.progress("tasks");
    if t.spec.document["paths"].get("/tasks/{id}").is_none() {
        t.report.skip(
            CHECK,
            "the document has no /tasks/{id}: the service offers no tasks",
        );
        return;
    }
    let missing = format!("/tasks/conformance-{}", uuid::Uuid::new_v4().simple());
    for request in [
        Request::get(&missing),
        Request::get(&missing).method("DELETE"),
    ] {
        expect_not_found(t, request);
    }
    let Some((tool, arguments)) = known_call(t, tools) else {
        t.report.skip(
            CHECK,
            "no tool ran with arguments known to be good (give one with --example)",
        );
        return;
    };
    let start = Request::post_json("/call-tool", &json!({"tool": tool, "arguments": arguments}))
        .header("Prefer", "respond-async");
    let Some(ex) = t.exchange(start) else {
        return;
    };
    let task = ex.json()["data"].clone();
    let location = ex.header("location").map(str::to_owned);
    let expected = task["task_id"].as_str().map(|id| format!("/tasks/{id}"));
    if ex.status != 202 || location.is_none() || location != expected {
        let curl = Some(t.curl(&ex));
        t.report.fail(
            CHECK,
            format!(
                "POST /call-tool ({tool}) with Prefer: respond-async answered {} with Location {:?}; expected 202 and Location /tasks/<data.task_id>",
                ex.status, location
            ),
            curl,
        );
        return;
    }
    t.report.pass(CHECK);
    let location = location.expect("checked above");
    let deadline = Instant::now() + t.options.timeout.max(Duration::from_secs(30));
    // A quick tool ends milliseconds after the 202: the first reads come soon after it, each
    // pause twice the last, never longer than the task's own poll interval.
    let mut pause = Duration::from_millis(25);
    let ended = loop {
        let Some(read) = t.exchange(Request::get(&location)) else {
            return;
        };
        let status = read.json()["data"]["status"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if read.status == 200 && status != "working" {
            break read;
        }
        if read.status != 200 || Instant::now() > deadline {
            let curl = Some(t.curl(&read));
            t.report.fail(
                CHECK,
                format!(
                    "GET {location} answered {} with status {status:?}; expected 200 and an end within {:?}",
                    read.status,
                    t.options.timeout.max(Duration::from_secs(30))
                ),
                curl,
            );
            return;
        }
        // The task says how often to ask at most; the deadline bounds the wait.
        let interval = read.json()["data"]["poll_interval_ms"]
            .as_u64()
            .unwrap_or(1000)
            .min(1000);
        std::thread::sleep(pause.min(Duration::from_millis(interval)));
        pause *= 2;
    };
    let data = &ended.json()["data"];
    let consistent = match data["status"].as_str() {
        Some("completed") => data.get("result").is_some() && data.get("error").is_none(),
        Some("failed") => data["error"]["code"].is_string() && data.get("result").is_none(),
        _ => false,
    };
    if consistent {
        t.report.pass(CHECK);
    } else {
        let curl = Some(t.curl(&ended));
        t.report.fail(
            CHECK,
            format!("GET {location} ended as {data}; expected completed with result or failed with error"),
            curl,
        );
    }
}

fn expect_not_found(t: &mut Tester, request: Request) {
    let Some(ex) = t.exchange(request) else {
        return;
    };
    if ex.status == 404 && ex.code() == Some("NOT_FOUND") {
        t.report.pass(CHECK);
    } else {
        let curl = Some(t.curl(&ex));
        t.report.fail(
            CHECK,
            format!(
                "{} {} answered {} {}; expected 404 NOT_FOUND",
                ex.request.method,
                ex.request.path,
                ex.status,
                ex.code().unwrap_or("(none)")
            ),
            curl,
        );
    }
}
