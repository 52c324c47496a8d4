//! Request ids: echoed from the header or the body, generated (UUID v4, unique) when absent,
//! rejected when not a UUID v4.

use std::collections::HashSet;

use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn request_ids_are_echoed_generated_and_checked() {
    let gw = Gateway::start(
        "ids",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let client = reqwest::Client::new();
    let mine = "0b4f7a52-3c1e-4d6a-8f2b-9e8d7c6b5a41";

    // From the header, on every route.
    for path in ["/tools", "/health", "/nope"] {
        let a = Answer::from(
            client
                .get(gw.url(path))
                .header("x-request-id", mine)
                .send()
                .await
                .unwrap(),
        )
        .await;
        a.assert_envelope();
        assert_eq!(a.body["request_id"], mine, "{path}");
    }
    // From the body, which wins over the header.
    let body_id = "7d0c1a9e-5b2f-4c3d-9e8f-1a2b3c4d5e6f";
    let a = Answer::from(
        client
            .post(gw.url("/call-tool"))
            .header("x-request-id", mine)
            .json(&json!({"tool": "echo", "arguments": {"message": "x"}, "request_id": body_id}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    a.assert_envelope();
    assert_eq!(a.body["request_id"], body_id);
    // Generated: UUID v4, unique.
    let mut seen = HashSet::new();
    for _ in 0..50 {
        let a = get(&gw, "/tools").await;
        let id = a.body["request_id"].as_str().unwrap().to_owned();
        let uuid = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(uuid.get_version_num(), 4);
        assert!(seen.insert(id), "request ids repeat");
    }
    // Rejected: not a UUID v4, in the header and in the body.
    for bad in ["abc", "3f2b8c1e-7a4d-1e2b-9c1a-5d6e7f8a9b0c"] {
        let a = Answer::from(
            client
                .get(gw.url("/tools"))
                .header("x-request-id", bad)
                .send()
                .await
                .unwrap(),
        )
        .await;
        a.assert_envelope();
        assert_eq!((a.status.as_u16(), a.code()), (400, "INVALID_REQUEST"));
        assert_ne!(a.body["request_id"], bad);
        let a = post_json(
            &gw,
            "/call-tool",
            &json!({"tool": "echo", "arguments": {"message": "x"}, "request_id": bad}),
        )
        .await;
        a.assert_envelope();
        assert_eq!((a.status.as_u16(), a.code()), (400, "INVALID_REQUEST"));
    }
}
