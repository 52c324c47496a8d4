//! GET /health: a provider that cannot start degrades the service, says why and the other
//! providers' tools still work; concurrent requests share one dependency check, which
//! refreshes.

use std::time::Duration;

use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn a_provider_that_cannot_start_degrades_the_service_and_fails_fast() {
    let extra = format!(
        "providers:\n{}  - {{ name: ghost, kind: mcp, command: /nonexistent/mcp-server }}\n",
        everything_provider("everything")
    );
    let gw = Gateway::start("degraded", &extra).await;
    let health = get(&gw, "/health").await;
    health.assert_envelope();
    assert_eq!(health.status, 200);
    assert_eq!(health.body["data"]["status"], "degraded");
    assert_eq!(
        health.body["data"]["dependencies"]["everything"]["status"],
        "connected"
    );
    let ghost = &health.body["data"]["dependencies"]["ghost"];
    assert_eq!(ghost["status"], "unavailable");
    assert!(
        ghost["error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/mcp-server"),
        "{ghost}"
    );
    // Tools of the live provider still work.
    assert_eq!(call(&gw, "echo", json!({"message": "x"})).await.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_health_requests_share_one_check_and_it_refreshes() {
    let gw = Gateway::start(
        "shared-checks",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let last_ok = |answer: Answer| {
        answer.body["data"]["dependencies"]["everything"]["last_ok"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // Twenty at once: one ping answers them all (at most two checks if they straddle a second).
    let answers =
        futures::future::join_all((0..20).map(|_| async { last_ok(get(&gw, "/health").await) }))
            .await;
    let distinct: std::collections::BTreeSet<&String> = answers.iter().collect();
    assert!(distinct.len() <= 2, "{distinct:?}");
    // Checks are shared for a second, then made again.
    let first = answers[0].clone();
    eventually(Duration::from_secs(10), "a newer check", || async {
        (last_ok(get(&gw, "/health").await) > first).then_some(())
    })
    .await;
}
