//! The per-service OpenAPI document at /openapi.json (the contract plus one typed operation per
//! tool, with the service's limits) and Swagger UI at /docs.

use serde_json::Value;

use crate::harness::*;

#[tokio::test]
async fn openapi_document_and_swagger_ui() {
    let gw = Gateway::start(
        "docs",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let response = reqwest::get(gw.url("/openapi.json")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("x-request-id"));
    let doc: Value = response.json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "docs (mcp-http-gateway)");
    assert_eq!(doc["x-limits"]["max_body_bytes"], 1_048_576);
    assert_eq!(doc["x-limits"]["call_timeout_ms"], 30_000);
    assert_eq!(doc["x-limits"]["max_json_depth"], 64);
    assert_eq!(doc["x-limits"]["max_string_bytes"], 262_144);
    assert_eq!(doc["x-limits"]["max_json_members"], 10_000);
    assert_eq!(doc["x-limits"]["max_header_bytes"], 32_768);
    assert_eq!(doc["x-limits"]["max_headers"], 100);
    let tools = get(&gw, "/tools").await;
    for tool in tools.body["data"]["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let op = &doc["paths"][format!("/tools/{name}")]["post"];
        // The input schema is hoisted into the components under the tool's name.
        let schema = &op["requestBody"]["content"]["application/json"]["schema"];
        let target = schema["$ref"].as_str().unwrap();
        assert_eq!(target, format!("#/components/schemas/tool__{name}__Input"));
        let hoisted = doc.pointer(target.strip_prefix('#').unwrap()).unwrap();
        assert_eq!(
            hoisted["properties"], tool["input_schema"]["properties"],
            "{name}"
        );
    }
    for path in ["/tools", "/call-tool", "/health"] {
        assert!(doc["paths"][path].is_object(), "{path}");
    }
    // Each tool has its own path instead of the contract's template.
    assert!(doc["paths"].get("/tools/{name}").is_none());
    let html = reqwest::get(gw.url("/docs/")).await.unwrap();
    assert_eq!(html.status(), 200);
    assert!(
        html.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = html.text().await.unwrap();
    assert!(page.contains("swagger"), "Swagger UI page");
    let config = reqwest::get(gw.url("/docs/swagger-initializer.js"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(config.contains("/openapi.json"), "{config}");
    // /docs redirects to /docs/
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let redirect = client.get(gw.url("/docs")).send().await.unwrap();
    assert!(redirect.status().is_redirection());
}
