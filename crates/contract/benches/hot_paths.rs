//! Criterion benchmarks of the two pieces of work on every request's path that the contract
//! owns: serialising the envelope (a GET /tools answer of 15 real tools, a small tool result,
//! an error) and checking arguments against a tool's input schema (valid and invalid).
//! `cargo bench -p contract`; numbers and machine in docs/performance.md.

use contract::{ArgumentValidator, Envelope, ErrorCode, Meta};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;

const REQUEST_ID: &str = "7d0c3f0e-1c2b-4a5e-9f00-0123456789ab";
const TIMESTAMP: &str = "2026-11-22T10:00:00.000Z";

fn meta() -> Option<Meta> {
    Some(Meta {
        execution_time_ms: Some(3),
        tool: Some("echo".into()),
        ..Meta::default()
    })
}

fn envelope(c: &mut Criterion) {
    // GET /tools of the demo service (server-everything + mcp-server-time), as served.
    let tools: Value = serde_json::from_str(include_str!("everything_tools.json")).unwrap();
    let result = json!({"content": [{"type": "text", "text": "Echo: héllo ✓"}]});
    let mut group = c.benchmark_group("envelope");
    group.bench_function("tools_list_15_tools", |b| {
        b.iter(|| {
            let e = Envelope::ok(tools.clone(), REQUEST_ID.into(), TIMESTAMP.into(), meta());
            serde_json::to_vec(black_box(&e)).unwrap()
        })
    });
    // As GET /tools serves it: the data built once per tool list and shared, not copied.
    let shared = std::sync::Arc::new(tools.clone());
    group.bench_function("tools_list_15_tools_shared", |b| {
        b.iter(|| {
            let e = Envelope::ok(shared.clone(), REQUEST_ID.into(), TIMESTAMP.into(), meta());
            serde_json::to_vec(black_box(&e)).unwrap()
        })
    });
    group.bench_function("tool_result", |b| {
        b.iter(|| {
            let e = Envelope::ok(result.clone(), REQUEST_ID.into(), TIMESTAMP.into(), meta());
            serde_json::to_vec(black_box(&e)).unwrap()
        })
    });
    group.bench_function("error", |b| {
        b.iter(|| {
            let e = Envelope::err(
                ErrorCode::ToolNotFound,
                "Tool 'nope' not found".into(),
                REQUEST_ID.into(),
                TIMESTAMP.into(),
                meta(),
            );
            serde_json::to_vec(black_box(&e)).unwrap()
        })
    });
    group.finish();
}

fn validation(c: &mut Criterion) {
    // code-graph-rag's find_callers-like schema: strings, a bounded integer, an enum, a default.
    let schema = json!({
        "type": "object",
        "properties": {
            "function_name": {"type": "string", "minLength": 1},
            "max_depth": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
            "direction": {"type": "string", "enum": ["callers", "callees", "both"]},
            "include_external": {"type": "boolean"}
        },
        "required": ["function_name"],
        "additionalProperties": false
    });
    let validator = ArgumentValidator::compile(&schema).unwrap();
    let valid = json!({"function_name": "parse", "max_depth": 3, "direction": "callers"});
    let invalid = json!({"function_name": "", "max_depth": 11, "direction": "up", "x": 1});
    let mut group = c.benchmark_group("validation");
    group.bench_function("valid_arguments", |b| {
        b.iter(|| validator.check(black_box(&valid)).is_ok())
    });
    group.bench_function("invalid_arguments_4_issues", |b| {
        b.iter(|| validator.check(black_box(&invalid)).unwrap_err().len())
    });
    group.bench_function("compile_schema", |b| {
        b.iter(|| ArgumentValidator::compile(black_box(&schema)).is_ok())
    });
    group.finish();
}

criterion_group!(benches, envelope, validation);
criterion_main!(benches);
