//! Tasks across replicas (issue 33): a task started on one replica is read on another until it
//! ends, with the body its own replica gives (its record in Redis names the owner and the
//! client), a working task is cancelled through another replica (the cancel sent on to its
//! owner), and an MCP client of the tasks extension reads and cancels on one replica the tasks
//! another runs.

use std::time::Duration;

use serde_json::{Value, json};

use super::{KEY, Redis, redis_command, replicas, tools};
use crate::harness::*;

/// server-everything's operation that answers after `duration` seconds.
const SLOW: &str = "trigger-long-running-operation";

fn slow(seconds: u64) -> Value {
    json!({"duration": seconds, "steps": 1})
}

/// Alice's REST request to `gw`: its status and body.
async fn rest(request: reqwest::RequestBuilder) -> (u16, Value) {
    let answer = request.header("x-api-key", KEY).send().await.unwrap();
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap_or(Value::Null))
}

/// Starts `tool` as a task on `gw` (`Prefer: respond-async`); its id.
async fn start(client: &reqwest::Client, gw: &Gateway, tool: &str, arguments: Value) -> String {
    let (status, body) = rest(
        client
            .post(gw.url("/call-tool"))
            .header("prefer", "respond-async")
            .json(&json!({"tool": tool, "arguments": arguments})),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    body["data"]["task_id"].as_str().unwrap().to_owned()
}

async fn read(client: &reqwest::Client, gw: &Gateway, id: &str) -> (u16, Value) {
    rest(client.get(gw.url(&format!("/tasks/{id}")))).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_is_read_and_cancelled_through_another_replica() {
    let (redis_bin, _) = tools();
    let redis = Redis::start(&redis_bin).await;
    let gws = replicas(2, testkit::BULK_RATE_LIMIT, Some(&redis)).await;
    let (a, b) = (&gws[0], &gws[1]);
    let client = reqwest::Client::new();

    // Started on r0, read on r1 (which waits for the record when it comes first) until it ends.
    let id = start(&client, a, SLOW, slow(3)).await;
    let (status, first) = read(&client, b, &id).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["data"]["task_id"], id.as_str());
    assert_eq!(first["meta"]["tool"], SLOW, "{first}");
    let on_b = eventually(
        Duration::from_secs(30),
        "the task ended, read on r1",
        || {
            let client = client.clone();
            let id = id.clone();
            async move {
                let (status, body) = read(&client, b, &id).await;
                assert_eq!(status, 200, "{body}");
                (body["data"]["status"] != "working").then_some(body)
            }
        },
    )
    .await;
    assert_eq!(on_b["data"]["status"], "completed", "{on_b}");
    assert!(
        on_b["data"]["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Long running operation completed")),
        "{on_b}"
    );
    let (status, on_a) = read(&client, a, &id).await;
    assert_eq!(status, 200, "{on_a}");
    assert_eq!(on_b["data"], on_a["data"], "r1 answers as the owner does");
    assert_eq!(on_b["meta"]["tool"], on_a["meta"]["tool"]);
    let record = redis_command(redis.port, &format!("GET mcp-http-gateway:shop:task:{id}"))
        .unwrap_or_default();
    assert!(
        record.contains("\"owner\":\"r0\"") && record.contains("\"client\":\"alice\""),
        "the record names its replica and client: {record}"
    );

    // A working task of r0 cancelled through r1: the cancel is sent on to r0, which stops it.
    let id = start(&client, a, SLOW, slow(60)).await;
    let (status, cancelled) = rest(client.delete(b.url(&format!("/tasks/{id}")))).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["data"]["status"], "cancelled", "{cancelled}");
    let (_, on_a) = read(&client, a, &id).await;
    assert_eq!(on_a["data"]["status"], "cancelled", "{on_a}");
    eventually(Duration::from_secs(5), "r1 reads it cancelled", || {
        let client = client.clone();
        let id = id.clone();
        async move {
            let (_, body) = read(&client, b, &id).await;
            (body["data"]["status"] == "cancelled").then_some(())
        }
    })
    .await;
    // Cancelling it again through r1 answers it as it ended (from its record, no hop).
    let (status, again) = rest(client.delete(b.url(&format!("/tasks/{id}")))).await;
    assert_eq!(
        (status, &again["data"]["status"]),
        (200, &json!("cancelled"))
    );

    // An id no replica knows is 404 on each.
    for gw in [a, b] {
        let (status, body) = read(&client, gw, "no-such-task").await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["code"], "NOT_FOUND", "{body}");
    }
}

/// A client of the MCP tasks extension (SEP-2663) with a session on each replica: a task that
/// r0 runs is read with `tasks/get` on r1 until it completes, with the result r0 gives, and
/// another is cancelled with `tasks/cancel` on r1.
#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_task_is_read_and_cancelled_on_another_replica() {
    let (redis_bin, _) = tools();
    let redis = Redis::start(&redis_bin).await;
    let gws = replicas(2, testkit::BULK_RATE_LIMIT, Some(&redis)).await;
    let mut keyed = reqwest::header::HeaderMap::new();
    keyed.insert("x-api-key", KEY.parse().unwrap());
    let client = reqwest::Client::builder()
        .default_headers(keyed)
        .build()
        .unwrap();
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let on_a = McpSession::open_on(client.clone(), &gws[0].url("/mcp"), "t", tasks.clone()).await;
    let on_b = McpSession::open_on(client, &gws[1].url("/mcp"), "t", tasks).await;
    let call = |id: u64, seconds: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": SLOW, "arguments": slow(seconds)}})
    };
    let get = |id: u64, task: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get",
               "params": {"taskId": task}})
    };

    let created = on_a.ask(call(2, 3)).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let done = eventually(
        Duration::from_secs(30),
        "the task completed, read on r1",
        || {
            let on_b = on_b.clone();
            let get = get(3, &task);
            async move {
                let got = on_b.ask(get).await;
                assert!(got.get("error").is_none(), "{got}");
                (got["result"]["status"] != "working").then_some(got)
            }
        },
    )
    .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let owners = on_a.ask(get(4, &task)).await;
    assert_eq!(
        done["result"], owners["result"],
        "r1 answers as the owner does"
    );

    let other = on_a.ask(call(5, 60)).await;
    let other = other["result"]["taskId"].as_str().unwrap().to_owned();
    let cancelled = on_b
        .ask(json!({"jsonrpc": "2.0", "id": 6, "method": "tasks/cancel",
                    "params": {"taskId": other}}))
        .await;
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let read = on_a.ask(get(7, &other)).await;
    assert_eq!(read["result"]["status"], "cancelled", "{read}");
    let unknown = on_b.ask(get(8, "no-such-task")).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}
