//! The answers of each operation: the success (the envelope, or the Prometheus text of GET
//! /metrics) and one failure per HTTP status its error codes map to, each with its headers
//! (`X-Request-Id`, `Retry-After`, the `RateLimit` pair) and its examples.

use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, HeaderBuilder, Ref, ResponseBuilder, ResponsesBuilder};

use super::examples::{METRICS_EXAMPLE, error_example, success_example};
use super::operations::Operation;
use super::request_id::request_id_header;
use crate::ErrorCode;

/// The media type of GET /metrics: the Prometheus text exposition format.
pub const METRICS_MEDIA_TYPE: &str = "text/plain; version=0.0.4";

/// The media type of GET /status: the page.
pub const STATUS_PAGE_MEDIA_TYPE: &str = "text/html; charset=utf-8";

/// The Content-Security-Policy of GET /status: the page's own scripts, styles and images only,
/// and requests to its own origin only.
pub const STATUS_PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Whether the per-client rate limit counts the operation's requests (all but /health and
/// /metrics), so its answers carry the `RateLimit` headers.
fn rate_limited(op: &Operation) -> bool {
    op.path != "/health" && op.path != "/metrics"
}

/// The `RateLimit` and `RateLimit-Policy` headers (draft-ietf-httpapi-ratelimit-headers), on
/// the answers of counted requests: not on 401 (refused before the client is known) nor 405
/// (judged before anything else).
fn with_rate_limit_headers(
    response: ResponseBuilder,
    op: &Operation,
    status: u16,
) -> ResponseBuilder {
    if !rate_limited(op) || status == 401 || status == 405 {
        return response;
    }
    let text = || ObjectBuilder::new().schema_type(Type::String);
    response
        .header(
            "RateLimit",
            HeaderBuilder::new()
                .schema(text())
                .description(Some(
                    "What is left of this client's allowance: `\"per-client\";r=<requests left>;t=<seconds until the whole allowance is back>`.",
                ))
                .build(),
        )
        .header(
            "RateLimit-Policy",
            HeaderBuilder::new()
                .schema(text())
                .description(Some(
                    "The allowance: `\"per-client\";q=<security.rate_limit>;w=60`, requests per minute per client (the API key's name, else the peer address).",
                ))
                .build(),
        )
}

pub(super) fn responses(op: &Operation) -> utoipa::openapi::Responses {
    let success = if op.id == "getStatusPage" {
        let page = ResponseBuilder::new()
            .description("Success: the page (HTML; its scripts and styles are `/status/assets/*`).")
            .header("X-Request-Id", request_id_header())
            .header(
                "Content-Security-Policy",
                HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::String))
                    .description(Some(format!("Always `{STATUS_PAGE_CSP}`.")))
                    .build(),
            )
            .header(
                "Cache-Control",
                HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::String))
                    .description(Some("`no-cache`: the page changes with the binary."))
                    .build(),
            );
        with_rate_limit_headers(page, op, 200).content(
            STATUS_PAGE_MEDIA_TYPE,
            ContentBuilder::new()
                .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                .build(),
        )
    } else if op.id == "getMetrics" {
        ResponseBuilder::new()
            .description("Success: every series of the service, in the Prometheus text format.")
            .header("X-Request-Id", request_id_header())
            .content(
                METRICS_MEDIA_TYPE,
                ContentBuilder::new()
                    .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                    .example(Some(Value::String(METRICS_EXAMPLE.into())))
                    .build(),
            )
    } else {
        let mut envelope = ResponseBuilder::new()
            .description("Success: the envelope with `data`.")
            .header("X-Request-Id", request_id_header());
        if op.id == "getStatusData" {
            envelope = envelope.header(
                "Cache-Control",
                HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::String))
                    .description(Some("`no-store`: a report is of its moment."))
                    .build(),
            );
        }
        with_rate_limit_headers(envelope, op, 200).content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(op.success)))
                .example(Some(success_example(op)))
                .build(),
        )
    };
    let mut builder = ResponsesBuilder::new().response("200", success);
    if super::operations::is_call(op) {
        builder = builder.response("202", accepted(op));
    }
    let mut by_status: BTreeMap<u16, Vec<ErrorCode>> = BTreeMap::new();
    for code in op.errors {
        by_status.entry(code.http_status()).or_default().push(*code);
    }
    for (status, codes) in by_status {
        let names: Vec<&str> = codes.iter().map(|c| c.as_str()).collect();
        let mut response = ResponseBuilder::new()
            .description(format!(
                "Failure: the envelope with `code` {}.",
                names.join(" or ")
            ))
            .header("X-Request-Id", request_id_header());
        if codes.iter().any(|c| c.has_retry_after()) {
            response = response.header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(0)),
                    )
                    .description(Some("Seconds to wait before retrying (429 and 503 only)."))
                    .build(),
            );
        }
        response = with_rate_limit_headers(response, op, status);
        let examples = codes.iter().map(|code| {
            (
                code.as_str(),
                ExampleBuilder::new()
                    .summary(code.meaning())
                    .value(Some(error_example(op, *code)))
                    .build(),
            )
        });
        response = response.content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorEnvelope")))
                .examples_from_iter(examples)
                .build(),
        );
        builder = builder.response(status.to_string(), response);
    }
    builder.build()
}

/// The 202 of a call run as a task (`Prefer: respond-async`): the task, where to read it.
fn accepted(op: &Operation) -> ResponseBuilder {
    let text = || ObjectBuilder::new().schema_type(Type::String);
    let response = ResponseBuilder::new()
        .description("Accepted (`Prefer: respond-async`): the call runs as a task; `data` is the task, `Location` where to read it.")
        .header("X-Request-Id", request_id_header())
        .header(
            "Location",
            HeaderBuilder::new()
                .schema(text())
                .description(Some("`/tasks/{id}`: the task, for `GET` and `DELETE`."))
                .build(),
        )
        .header(
            "Preference-Applied",
            HeaderBuilder::new()
                .schema(text())
                .description(Some("`respond-async` (RFC 7240)."))
                .build(),
        )
        .header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)))
                .description(Some("Seconds to wait before reading the task."))
                .build(),
        );
    with_rate_limit_headers(response, op, 202).content(
        "application/json",
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("TaskEnvelope")))
            .example(Some(super::examples::task_example(
                crate::TaskStatus::Working,
            )))
            .build(),
    )
}
