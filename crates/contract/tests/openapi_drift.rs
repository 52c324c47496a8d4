//! The committed `openapi/openapi.yaml` must be exactly what the code emits.

#[test]
fn committed_document_matches_the_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi/openapi.yaml");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    let emitted = contract::openapi::document_yaml();
    if committed != emitted {
        let line = committed
            .lines()
            .zip(emitted.lines())
            .position(|(a, b)| a != b)
            .map(|i| i + 1)
            .unwrap_or_else(|| committed.lines().count().min(emitted.lines().count()) + 1);
        panic!(
            "openapi/openapi.yaml differs from the document the code emits (first difference at line {line}).\n\
             Regenerate it with:\n\n    {}\n\n(or, with the binary installed: mcp-http-gateway openapi > openapi/openapi.yaml)\n",
            contract::openapi::REGENERATE_COMMAND
        );
    }
}

#[test]
fn committed_document_is_openapi_3_1() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi/openapi.yaml");
    let text = std::fs::read_to_string(path).expect("openapi/openapi.yaml exists");
    let doc: serde_json::Value = serde_saphyr::from_str(&text).expect("valid YAML");
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/tools",
        "/call-tool",
        "/tools/{name}",
        "/health",
        "/metrics",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} documented");
    }
}
