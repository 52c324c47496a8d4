//! Builds the OpenAPI 3.1 document of the contract from the types of this crate.
//!
//! `openapi/openapi.yaml` is this document serialized; a test holds the two equal. The
//! responses of each operation are derived from the list of codes it can answer and from
//! [`ErrorCode::http_status`], so the document cannot disagree with the server on a status.
//!
//! The document is one value whose paths, responses and components name each other; its parts
//! are built in one file each:
//!
//! ```text
//! mod.rs         the document: info, paths and components put together, YAML and JSON
//! operations.rs  the table of operations, with the error codes each can answer
//! paths.rs       each operation: tag, parameters, security and request body
//! responses.rs   each operation's answers: one per status, with headers and examples
//! examples.rs    the example answers, success and error, byte-stable
//! request_id.rs  the request-id rule: pattern, header, and the constraint on body fields
//! components.rs  the schemas of the contract's types and the envelope variants
//! ```

mod components;
mod examples;
mod operations;
mod paths;
mod request_id;
mod responses;

use serde_json::Value;
use utoipa::openapi::path::PathItem;
use utoipa::openapi::{InfoBuilder, OpenApi, OpenApiBuilder, PathsBuilder};

use crate::{CONTRACT_VERSION, ErrorCode};

use components::components;
use operations::OPERATIONS;
use paths::operation;

pub use request_id::REQUEST_ID_PATTERN;
pub use responses::{METRICS_MEDIA_TYPE, STATUS_PAGE_CSP, STATUS_PAGE_MEDIA_TYPE};

/// The shell command that rewrites the committed document from the code.
pub const REGENERATE_COMMAND: &str =
    "cargo run -q -p mcp-http-gateway -- openapi > openapi/openapi.yaml";

/// The contract as an OpenAPI 3.1 document.
pub fn document() -> OpenApi {
    let mut paths = PathsBuilder::new();
    for op in OPERATIONS {
        paths = paths.path(op.path, PathItem::new(op.method.clone(), operation(op)));
    }
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("mcp-http-gateway service contract")
                .version(CONTRACT_VERSION)
                .description(Some(info_description()))
                .build(),
        )
        .paths(paths.build())
        .components(Some(components()))
        .build()
}

/// The document as YAML, exactly as committed in `openapi/openapi.yaml`.
pub fn document_yaml() -> String {
    serde_saphyr::to_string(&document()).expect("the OpenAPI document serializes to YAML")
}

/// The document as a JSON value, for callers that extend it (the per-service document).
pub fn document_json() -> Value {
    serde_json::to_value(document()).expect("the OpenAPI document serializes to JSON")
}

fn info_description() -> String {
    let mut text = String::from(
        "Every mcp-http-gateway service answers this contract. Every response body of every \
         endpoint is the envelope `{success, data?, error?, code?, request_id, timestamp, meta?}`; \
         every response carries `X-Request-Id`. (The exceptions are the successes of GET /metrics, \
         which is the Prometheus text format, and of GET /status, the status page in HTML.) An \
         unknown route answers 404 NOT_FOUND and a known route with the wrong method 405 \
         METHOD_NOT_ALLOWED, both as the envelope.\n\n\
         | code | HTTP status | meaning |\n|---|---|---|\n",
    );
    for code in ErrorCode::ALL {
        text.push_str(&format!(
            "| {} | {} | {} |\n",
            code.as_str(),
            code.http_status(),
            code.meaning()
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_example_uses_its_status() {
        let doc = document_json();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (_method, op) in item.as_object().unwrap() {
                for (status, response) in op["responses"].as_object().unwrap() {
                    let Some(examples) =
                        response["content"]["application/json"]["examples"].as_object()
                    else {
                        continue;
                    };
                    for (name, example) in examples {
                        let code: ErrorCode =
                            serde_json::from_value(example["value"]["code"].clone()).unwrap();
                        assert_eq!(code.as_str(), name, "{path} {status}");
                        assert_eq!(code.http_status().to_string(), *status, "{path} {name}");
                    }
                }
            }
        }
    }

    #[test]
    fn call_tool_documents_the_required_statuses() {
        let doc = document_json();
        let responses = doc["paths"]["/call-tool"]["post"]["responses"]
            .as_object()
            .unwrap();
        for status in [
            "200", "400", "401", "404", "405", "413", "429", "500", "503", "504",
        ] {
            assert!(responses.contains_key(status), "missing {status}");
        }
    }

    #[test]
    fn yaml_round_trips_to_the_same_document() {
        let yaml = document_yaml();
        let back: Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(back, document_json());
    }
}
