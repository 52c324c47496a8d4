//! The per-service document of a service bridging the typed MCP fixture (nested pydantic
//! models with `$defs`, a recursive model, enums, output schemas), server-everything (`$schema`
//! in its input schemas) and mcp-server-time, judged by tools that are not ours: an OpenAPI 3.1
//! validator, Swagger UI in headless Chromium, and two client generators (Python checked with
//! mypy --strict, TypeScript with tsc --strict) whose clients then call the tools for real.
//! The tools are installed pinned by scripts/install-test-tools.sh.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::harness::*;

/// A tool that scripts/install-test-tools.sh puts in `.deps/`.
fn test_tool(relative: &str) -> PathBuf {
    let path = repo().join(".deps").join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-tools.sh first",
        path.display()
    );
    path
}

/// Runs `command`, which must succeed; its stdout.
fn run(command: &mut Command) -> String {
    let output = output_of(command);
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn output_of(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"))
}

fn generated_clients(file: &str) -> PathBuf {
    PathBuf::from(fixture("generated_clients")).join(file)
}

/// The gateway with the three servers, every tool listed.
async fn typed_gateway() -> Gateway {
    let typed = format!(
        "  - {{ name: typed, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
        venv_python(),
        fixture("typed_server.py")
    );
    let gw = Gateway::start(
        "typed",
        &format!(
            "providers:\n{typed}{}{}",
            everything_provider("everything"),
            time_provider("time")
        ),
    )
    .await;
    let tools = get(&gw, "/tools").await;
    let names: Vec<&str> = tools.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for wanted in [
        "register_person",
        "summarize_tree",
        "echo",
        "get_current_time",
    ] {
        assert!(names.contains(&wanted), "{wanted} not in {names:?}");
    }
    gw
}

/// The document as served, also written to `dir/openapi.json` for the outside tools.
async fn served_document(gw: &Gateway, dir: &Path) -> (Value, PathBuf) {
    let answer = reqwest::get(gw.url("/openapi.json")).await.unwrap();
    assert_eq!(answer.status(), 200);
    let text = answer.text().await.unwrap();
    let path = dir.join("openapi.json");
    std::fs::write(&path, &text).unwrap();
    (serde_json::from_str(&text).unwrap(), path)
}

/// Every `$ref` of the document with whether it resolves within it.
fn refs(node: &Value, doc: &Value, out: &mut Vec<(String, bool)>) {
    match node {
        Value::Object(object) => {
            if let Some(Value::String(target)) = object.get("$ref") {
                let resolves = target
                    .strip_prefix('#')
                    .is_some_and(|p| doc.pointer(p).is_some());
                out.push((target.clone(), resolves));
            }
            object.values().for_each(|v| refs(v, doc, out));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, doc, out)),
        _ => {}
    }
}

#[tokio::test]
async fn the_document_is_valid_openapi_with_every_ref_resolved() {
    let gw = typed_gateway().await;
    let dir = tempfile::tempdir().unwrap();
    let (doc, path) = served_document(&gw, dir.path()).await;

    // /tools keeps each schema as the upstream wrote it; only the document is rewritten.
    let tools = get(&gw, "/tools").await;
    let listed = |name: &str| {
        tools.body["data"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["input_schema"]
            .clone()
    };
    assert_eq!(
        listed("register_person")["properties"]["person"]["$ref"],
        "#/$defs/Person"
    );
    assert!(listed("echo").get("$schema").is_some());

    let mut all = Vec::new();
    refs(&doc, &doc, &mut all);
    let broken: Vec<&String> = all.iter().filter(|(_, ok)| !ok).map(|(t, _)| t).collect();
    assert!(all.len() > 100, "{} refs", all.len());
    assert!(broken.is_empty(), "unresolved: {broken:?}");
    assert!(
        all.iter()
            .any(|(t, _)| t == "#/components/schemas/tool__summarize_tree__TreeNode"),
        "the recursive model is referenced by name"
    );
    assert_eq!(
        doc["servers"][0]["url"],
        format!("http://127.0.0.1:{}", gw.port)
    );
    assert!(doc["components"].get("securitySchemes").is_none());
    assert!(!serde_json::to_string(&doc).unwrap().contains("\"$schema\""));

    // The validator is a judge: the same document with the `$ref` a tool schema had
    // upstream (before it was hoisted) fails. Both judged at once: each run is seconds of
    // Python on a document of this size.
    let validator = test_tool("openapi-venv/bin/openapi-spec-validator");
    let mut broken_doc = doc.clone();
    broken_doc["components"]["schemas"]["tool__register_person__Person"]["properties"]["address"]
        ["$ref"] = "#/$defs/Address".into();
    let broken_path = dir.path().join("broken.json");
    std::fs::write(&broken_path, broken_doc.to_string()).unwrap();
    let judge_broken = {
        let validator = validator.clone();
        std::thread::spawn(move || output_of(Command::new(&validator).arg(&broken_path)))
    };
    let said = run(Command::new(&validator).arg(&path));
    assert!(said.contains("OK"), "{said}");
    assert!(!judge_broken.join().unwrap().status.success());
}

/// Swagger UI, headless, opened on one tool's operation: every tool is listed, that operation
/// is open with its example, and nothing failed to resolve. (A test of its own: Chromium's run
/// beside the validator's made one test of 25 s in the suite's run.)
#[tokio::test]
async fn swagger_ui_renders_every_tool_and_opens_a_linked_operation() {
    let gw = typed_gateway().await;
    let dir = tempfile::tempdir().unwrap();
    let (doc, _) = served_document(&gw, dir.path()).await;
    let dom = run(Command::new("timeout")
        .args([
            "120",
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
        ])
        .args(["--virtual-time-budget=20000", "--dump-dom"])
        .arg(gw.url("/docs/#/tool/call_register_person")));
    for tool in doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|p| p.starts_with("/tools/"))
    {
        assert!(
            dom.contains(&format!("data-path=\"{tool}\"")),
            "{tool} not rendered"
        );
    }
    assert!(dom.contains("is-open"), "the linked operation is not open");
    assert!(dom.contains("Registers a person with their address"));
    assert!(dom.contains("postcode"), "the request example is not shown");
    assert!(
        !dom.contains("Resolver error"),
        "Swagger UI could not resolve a $ref"
    );
}

#[tokio::test]
async fn generated_clients_type_check_and_call_tools() {
    let gw = typed_gateway().await;
    let dir = tempfile::tempdir().unwrap();
    let (_, path) = served_document(&gw, dir.path()).await;
    let base = gw.url("");
    // The two languages at once: each is seconds of a generator and a type checker.
    std::thread::scope(|s| {
        let python = s.spawn(|| python_client_type_checks_and_calls(dir.path(), &path, &base));
        typescript_client_type_checks_and_calls(dir.path(), &path, &base);
        python.join().unwrap();
    });
}

/// Python: openapi-python-client, then mypy --strict over the client and a program that calls
/// register_person with nested models and reads the typed registration.
fn python_client_type_checks_and_calls(dir: &Path, path: &Path, base: &str) {
    let python = dir.join("python");
    std::fs::create_dir(&python).unwrap();
    let config = python.join("generator.yaml");
    std::fs::write(&config, "post_hooks: []\n").unwrap();
    run(
        Command::new(test_tool("openapi-venv/bin/openapi-python-client"))
            .args(["generate", "--meta", "none", "--config"])
            .arg(&config)
            .arg("--path")
            .arg(path)
            .arg("--output-path")
            .arg(python.join("typed_client")),
    );
    for file in ["call_typed.py", "wrong_call.py"] {
        std::fs::copy(generated_clients(file), python.join(file)).unwrap();
    }
    let mypy = test_tool("openapi-venv/bin/mypy");
    run(Command::new(&mypy).current_dir(&python).args([
        "--strict",
        "call_typed.py",
        "typed_client",
    ]));
    let refused = output_of(
        Command::new(&mypy)
            .current_dir(&python)
            .args(["--strict", "wrong_call.py"]),
    );
    assert!(!refused.status.success(), "mypy accepted a wrong call");
    assert!(String::from_utf8_lossy(&refused.stdout).contains("\"age\""));
    let said = run(Command::new(test_tool("openapi-venv/bin/python"))
        .current_dir(&python)
        .arg("call_typed.py")
        .arg(base));
    assert_eq!(said, "reg-ada Paris 3 high\n2 2 root,leaf\n");
}

/// TypeScript: openapi-typescript, then tsc --strict over a program that calls register_person
/// and /call-tool (typed by the discriminator) and reads echo's content blocks; then node runs
/// it against the gateway.
fn typescript_client_type_checks_and_calls(dir: &Path, path: &Path, base: &str) {
    let ts = dir.join("ts");
    std::fs::create_dir(&ts).unwrap();
    let bin = test_tool("openapi-ts/node_modules/.bin");
    run(Command::new(bin.join("openapi-typescript"))
        .arg(path)
        .arg("-o")
        .arg(ts.join("api.d.ts")));
    for file in ["call_typed.ts", "wrong_call.ts", "tsconfig.json"] {
        std::fs::copy(generated_clients(file), ts.join(file)).unwrap();
    }
    run(Command::new(bin.join("tsc"))
        .current_dir(&ts)
        .args(["-p", "."]));
    let refused = output_of(Command::new(bin.join("tsc")).current_dir(&ts).args([
        "--strict",
        "--noEmit",
        "wrong_call.ts",
    ]));
    assert!(!refused.status.success(), "tsc accepted a wrong call");
    let errors = String::from_utf8_lossy(&refused.stdout);
    assert_eq!(errors.matches("error TS2322").count(), 2, "{errors}");
    let said = run(Command::new("node")
        .current_dir(&ts)
        .arg("out/call_typed.js")
        .arg(base));
    assert_eq!(
        said,
        // The result's keys in the order the upstream wrote them.
        "reg-ada Paris 3 high\n{\"nodes\":2,\"depth\":2,\"labels\":[\"root\",\"leaf\"]}\nEcho: héllo\n"
    );
}
