//! `mcp-wrappers generate` against a live gateway serving two services — the demo bridging
//! server-everything and mcp-server-time, and code-graph-rag's Cypher tools on ArcadeDB with
//! the fixture graph — plus a registered service that is down. The generated bash scripts,
//! Python client and CLI are run for real; every script passes shellcheck and the Python
//! mypy --strict; `--check` notices a schema changed by a reload.
//!
//! Needs the gateway binary built (`cargo test --workspace` builds it) and the tools
//! `scripts/test.sh` installs (MCP servers, ArcadeDB, shellcheck, mypy).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::installed::{everything_js, time_bin};
use testkit::{BoltDb, Killed, free_port, poll, repo, shipped_config, workspace_bin};

/// A shipped service configuration, on `port`, into the folder the gateway serves.
fn shipped(file: &str, port: u16, dir: &Path) {
    std::fs::write(dir.join(file), shipped_config(file, port)).unwrap();
}

fn generate(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-wrappers"))
        .arg("generate")
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap(), stderr)
}

fn run(program: &Path, args: &[&str]) -> Output {
    Command::new(program).args(args).output().unwrap()
}

fn stdout_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn generated_wrappers_work_against_a_live_gateway() {
    let work = tempfile::tempdir().unwrap();
    let bolt = BoltDb::start();
    let config = work.path().join("config");
    std::fs::create_dir(&config).unwrap();
    let (demo_port, graph_port) = (free_port(), free_port());
    shipped("everything.yaml", demo_port, &config);
    shipped("code-graph-rag.yaml", graph_port, &config);
    let gateway = Killed(
        Command::new(workspace_bin("mcp-http-gateway"))
            .args(["serve", "--config-dir"])
            .arg(&config)
            .env("MCP_EVERYTHING_JS", everything_js())
            .env("MCP_SERVER_TIME", time_bin())
            .env("CODE_GRAPH_BOLT_URI", bolt.uri())
            .env("CODE_GRAPH_BOLT_USER", "root")
            .env("CODE_GRAPH_BOLT_PASSWORD", "code-graph-rag")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let client = reqwest::blocking::Client::new();
    for port in [demo_port, graph_port] {
        poll(
            Duration::from_secs(60),
            "the services to be healthy",
            || {
                let health: Value = client
                    .get(format!("http://127.0.0.1:{port}/health"))
                    .send()
                    .ok()?
                    .json()
                    .ok()?;
                (health["data"]["status"] == "healthy").then_some(())
            },
        );
    }
    let registry = work.path().join("services.yaml");
    std::fs::write(
        &registry,
        format!(
            "services:\n  - {{ name: everything, url: \"http://127.0.0.1:{demo_port}\" }}\n  - {{ name: code-graph-rag, url: \"http://127.0.0.1:{graph_port}\" }}\n  - {{ name: down, url: \"http://127.0.0.1:{}\" }}\n  - {{ name: off, url: \"http://127.0.0.1:1\", enabled: false }}\n",
            free_port()
        ),
    )
    .unwrap();
    let out = work.path().join("wrappers");
    let (registry_arg, out_arg) = (registry.to_str().unwrap(), out.to_str().unwrap());

    // A service that is down: the others are generated, the exit code says partial.
    let (code, stderr) = generate(&["--registry", registry_arg, "--out", out_arg]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("warning: down ("), "{stderr}");
    assert!(
        !stderr.contains("off"),
        "a disabled service is not generated: {stderr}"
    );
    assert!(!out.join("down").exists());
    let demo = out.join("everything");
    let graph = out.join("code-graph-rag");
    let tools: Value = client
        .get(format!("http://127.0.0.1:{demo_port}/tools"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        files_in(&demo.join("scripts")).len(),
        tools["data"]["tools"].as_array().unwrap().len()
    );
    assert_eq!(
        files_in(&demo.join("commands")).len(),
        tools["data"]["tools"].as_array().unwrap().len()
    );
    assert!(demo.join("skills/everything/SKILL.md").is_file());

    // Both live services, timed (reported, not asserted: see docs/wrappers.md).
    let live = ["--service", "everything", "--service", "code-graph-rag"];
    let started = Instant::now();
    let (code, stderr) =
        generate(&[&["--registry", registry_arg, "--out", out_arg], &live[..]].concat());
    eprintln!(
        "generated 2 services in {} ms",
        started.elapsed().as_millis()
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("0 added, 0 changed, 0 removed"), "{stderr}");

    // A bash script, for real: arguments with quotes, newlines, $(…) and unicode arrive intact.
    let message = "héllo \"quoted\" 'single' $(rm -rf /) `x`\nline ✓";
    let echoed = stdout_json(&run(&demo.join("scripts/echo.sh"), &[message]));
    assert_eq!(echoed["content"][0]["text"], format!("Echo: {message}"));
    let projects = stdout_json(&run(&graph.join("scripts/list_projects.sh"), &[]));
    let names: Vec<&str> = projects["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["qualified_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["shop", "toolkit"]);
    let symbols = stdout_json(&run(&graph.join("scripts/find_symbol.sh"), &["save"]));
    assert_eq!(
        symbols["symbols"][0]["qualified_name"],
        "shop.app.repo.OrderRepo.save"
    );
    // Failures: a usage error, and the service's INVALID_ARGUMENTS with its code on stderr.
    let usage = run(&demo.join("scripts/get_sum.sh"), &["two", "40"]);
    assert_eq!(usage.status.code(), Some(2));
    let invalid = run(
        &demo.join("scripts/get_sum.sh"),
        &["--json", r#"{"a": "x", "b": 1}"#],
    );
    assert_eq!(invalid.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&invalid.stderr).contains("INVALID_ARGUMENTS"));
    let help = run(&demo.join("scripts/get_sum.sh"), &["--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: get_sum.sh"));

    // The Python client, for real.
    let python = Command::new("python3")
        .arg("-c")
        .arg(
            "import json, sys\n\
             sys.path.insert(0, sys.argv[1])\n\
             from code_graph_rag_client import CodeGraphRagClient, InvalidArgumentsError\n\
             c = CodeGraphRagClient()\n\
             rows = c.query_callers('shop.app.infra.util.log', max_depth=1).data['callers']\n\
             try:\n    c.query_callers('x', max_depth=99)\n    bad = None\n\
             except InvalidArgumentsError as e:\n    bad = [e.code, len(e.request_id)]\n\
             print(json.dumps({'first': rows[0]['qualified_name'], 'bad': bad}))",
        )
        .arg(graph.join("python"))
        .output()
        .unwrap();
    let seen = stdout_json(&python);
    assert_eq!(seen["first"], "shop.app.infra.db.connect");
    assert_eq!(seen["bad"], serde_json::json!(["INVALID_ARGUMENTS", 36]));

    // Its resource and prompt methods, against server-everything behind the gateway.
    let python = Command::new("python3")
        .arg("-c")
        .arg(
            "import json, sys\n\
             sys.path.insert(0, sys.argv[1])\n\
             from everything_client import EverythingClient, InvalidArgumentsError, PromptNotFoundError, ResourceNotFoundError\n\
             c = EverythingClient()\n\
             first = c.list_resources().data['resources'][0]\n\
             read = c.read_resource(first['uri'], provider=first['provider']).data\n\
             templates = [t['uri_template'] for t in c.list_resource_templates().data['resource_templates']]\n\
             dynamic = c.read_resource('demo://resource/dynamic/text/7').data['contents'][0]['text']\n\
             prompts = [p['name'] for p in c.list_prompts().data['prompts']]\n\
             text = c.get_prompt('args-prompt', {'city': 'Paris'}).data['messages'][0]['content']['text']\n\
             errors = []\n\
             for f in (lambda: c.get_prompt('args-prompt'), lambda: c.get_prompt('no/such prompt'), lambda: c.read_resource('nothing://x?y=1&z')):\n    \
                 try:\n        f()\n        errors.append(None)\n    \
                 except (InvalidArgumentsError, PromptNotFoundError, ResourceNotFoundError) as e:\n        errors.append([type(e).__name__, e.http_status])\n\
             print(json.dumps({'read_uri': read['uri'], 'templates': templates, 'dynamic': dynamic, 'prompts': prompts, 'text': text, 'errors': errors}))",
        )
        .arg(demo.join("python"))
        .output()
        .unwrap();
    let seen = stdout_json(&python);
    assert!(seen["read_uri"].is_string(), "{seen}");
    assert!(
        seen["templates"]
            .as_array()
            .unwrap()
            .contains(&json!("demo://resource/dynamic/text/{resourceId}")),
        "{seen}"
    );
    assert!(seen["dynamic"].as_str().unwrap().contains('7'), "{seen}");
    assert!(
        seen["prompts"]
            .as_array()
            .unwrap()
            .contains(&json!("simple-prompt")),
        "{seen}"
    );
    assert!(seen["text"].as_str().unwrap().contains("Paris"), "{seen}");
    assert_eq!(
        seen["errors"],
        json!([
            ["InvalidArgumentsError", 400],
            ["PromptNotFoundError", 404],
            ["ResourceNotFoundError", 404]
        ])
    );

    // The CLI, for real.
    let sum = stdout_json(&run(&demo.join("cli/everything"), &["get-sum", "2", "40"]));
    assert!(
        sum["content"][0]["text"].as_str().unwrap().contains("42"),
        "{sum}"
    );

    // shellcheck every script; mypy --strict the Python module and CLI of both services.
    let scripts: Vec<PathBuf> = [&demo, &graph]
        .iter()
        .flat_map(|s| files_in(&s.join("scripts")))
        .collect();
    let shellcheck = Command::new("shellcheck").args(&scripts).output().unwrap();
    assert!(
        shellcheck.status.success(),
        "{}",
        String::from_utf8_lossy(&shellcheck.stdout)
    );
    let mypy = repo().join(".deps/wrappers-venv/bin/mypy");
    assert!(
        mypy.exists(),
        "mypy is installed by scripts/install-test-tools.sh"
    );
    for service in [&demo, &graph] {
        for file in files_in(&service.join("python"))
            .into_iter()
            .chain(files_in(&service.join("cli")))
        {
            let checked = Command::new(&mypy)
                .args(["--strict", "--no-incremental", "--cache-dir", "/dev/null"])
                .arg(&file)
                .env("MYPYPATH", service.join("python"))
                .output()
                .unwrap();
            assert!(
                checked.status.success(),
                "mypy --strict {}:\n{}",
                file.display(),
                String::from_utf8_lossy(&checked.stdout)
            );
        }
    }

    // --check: nothing to do now; after a reload changes a schema, the drift is found.
    let check = |expect: i32| {
        let (code, stderr) = generate(
            &[
                &["--registry", registry_arg, "--out", out_arg, "--check"],
                &live[..],
            ]
            .concat(),
        );
        assert_eq!(code, expect, "{stderr}");
        stderr
    };
    check(0);
    let graph_config = config.join("code-graph-rag.yaml");
    let text = std::fs::read_to_string(&graph_config).unwrap();
    let changed = text.replacen("The projects in the graph", "Every project in the graph", 1);
    assert_ne!(text, changed);
    std::fs::write(&graph_config, changed).unwrap();
    let reload = Command::new("kill")
        .args(["-HUP", &gateway.0.id().to_string()])
        .status()
        .unwrap();
    assert!(reload.success());
    poll(Duration::from_secs(20), "the reload", || {
        let tools: Value = client
            .get(format!("http://127.0.0.1:{graph_port}/tools"))
            .send()
            .ok()?
            .json()
            .ok()?;
        tools.to_string().contains("Every project").then_some(())
    });
    let drift = check(1);
    assert!(
        drift.contains("changed: ") && drift.contains("list_projects.sh"),
        "{drift}"
    );
    // Regenerating brings the files up to date.
    let (code, stderr) =
        generate(&[&["--registry", registry_arg, "--out", out_arg], &live[..]].concat());
    assert_eq!(code, 0, "{stderr}");
    check(0);
    drop(gateway);
}
