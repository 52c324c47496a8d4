//! What a 2026-07-28 client learns of a service without a session (issue 33): a
//! `subscriptions/listen` stream is acknowledged with what the service can deliver, then
//! carries the updates of its resources once an upstream sends them (server-everything's
//! `toggle-subscriber-updates`) and the tool list's change on a reload; the Python SDK's
//! `Client.listen` gets the same. `server/discover` advertises what `initialize` does: the
//! capabilities merged over the providers, with and without one that offers resources, and a
//! listen stream of a service without one is acknowledged for the tool list only.
//! Written by hand, so every field on the wire is seen.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::harness::*;

const DOCUMENT: &str = "demo://resource/static/document/architecture.md";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The `_meta` of a 2026-07-28 request.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "listener", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// Sends one stateless 2026-07-28 request (`name`: its `Mcp-Name` header, for a tool call).
async fn stateless(
    gw: &Gateway,
    method: &str,
    name: Option<&str>,
    params: Value,
) -> reqwest::Response {
    let mut params = params;
    params["_meta"] = meta();
    let mut request = reqwest::Client::new()
        .post(gw.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": "request-1", "method": method, "params": params});
    request.json(&body).send().await.unwrap()
}

/// The JSON-RPC answer of a response, JSON or SSE.
async fn answer_of(response: reqwest::Response) -> Value {
    let text = response.text().await.unwrap();
    if let Ok(one) = serde_json::from_str::<Value>(&text) {
        return one;
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| panic!("no answer in: {text}"))
}

/// One `subscriptions/listen` stream, its messages read as they come.
struct Listening {
    messages: mpsc::UnboundedReceiver<Value>,
    reader: tokio::task::JoinHandle<()>,
}

impl Listening {
    /// Opens a stream of `id` for `notifications` (the wire's SubscriptionFilter).
    async fn open(gw: &Gateway, id: &str, notifications: Value) -> Listening {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
                          "params": {"notifications": notifications, "_meta": meta()}});
        let mut response = reqwest::Client::new()
            .post(gw.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let (sender, messages) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut pending = String::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                pending.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = pending.find("\n\n") {
                    let event: String = pending.drain(..end + 2).collect();
                    let data = event.lines().filter_map(|l| l.strip_prefix("data:"));
                    for message in data.filter_map(|d| serde_json::from_str(d.trim()).ok()) {
                        if sender.send(message).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Listening { messages, reader }
    }

    /// The next message of `method` within `within`, the others before it passed over.
    async fn next(&mut self, method: &str, within: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.messages.recv()).await {
                Ok(Some(message)) if message["method"] == method => return message,
                Ok(Some(_)) => {}
                Ok(None) => panic!("the stream ended before {method}"),
                Err(_) => panic!("no {method} within {within:?}"),
            }
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listen_stream_carries_its_resource_updates_and_the_tool_list_changes() {
    let providers = format!("providers:\n{}", everything_provider("everything"));
    let mut gw = Gateway::start("listening", &providers).await;
    let requested = json!({"toolsListChanged": true, "promptsListChanged": true,
        "resourcesListChanged": true, "resourceSubscriptions": [DOCUMENT, "not a uri"]});
    let mut stream = Listening::open(&gw, "listen-1", requested).await;
    let ack = stream
        .next(
            "notifications/subscriptions/acknowledged",
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "promptsListChanged": true,
               "resourcesListChanged": true, "resourceSubscriptions": [DOCUMENT]}),
        "what server-everything can tell, and no malformed URI: {ack}"
    );
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], "listen-1", "{ack}");

    // A stateless call runs on the shared upstream connection, which the stream subscribed:
    // server-everything sends the update at once, then every 5 s.
    let toggled = stateless(
        &gw,
        "tools/call",
        Some("toggle-subscriber-updates"),
        json!({"name": "toggle-subscriber-updates", "arguments": {}}),
    )
    .await;
    let toggled = answer_of(toggled).await;
    assert!(
        toggled["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Started"),
        "{toggled}"
    );
    let updated = stream
        .next("notifications/resources/updated", Duration::from_secs(30))
        .await;
    assert_eq!(updated["params"]["uri"], DOCUMENT, "{updated}");
    assert_eq!(
        updated["params"]["_meta"][SUBSCRIPTION_ID], "listen-1",
        "{updated}"
    );

    // A reload that adds a provider changes the tool list.
    let port = gw.port;
    let reloaded = format!(
        "providers:\n{}{}",
        everything_provider("everything"),
        time_provider("time")
    );
    std::fs::write(&gw.config, service_yaml("listening", port, &reloaded)).unwrap();
    gw.signal(libc::SIGHUP);
    // server-everything changes its own list after its handshake too: the change told is the
    // reload's once the list it announces has the new provider's tool.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let within = deadline.saturating_duration_since(tokio::time::Instant::now());
        let changed = stream
            .next("notifications/tools/list_changed", within)
            .await;
        assert_eq!(
            changed["params"]["_meta"][SUBSCRIPTION_ID], "listen-1",
            "{changed}"
        );
        let listed = answer_of(stateless(&gw, "tools/list", None, json!({})).await).await;
        let tools = listed["result"]["tools"].as_array().unwrap();
        if tools.iter().any(|t| t["name"] == "get_current_time") {
            break;
        }
    }
    drop(stream);
    gw.signal(libc::SIGTERM);
    assert_eq!(
        gw.wait_exit(Duration::from_secs(30)).await.code(),
        Some(0),
        "{}",
        gw.logs()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_listens_through_the_gateway() {
    let providers = format!("providers:\n{}", everything_provider("everything"));
    let gw = Gateway::start("listening-sdk", &providers).await;
    let seen = run_python(vec![
        fixture("mcp_listen_client.py"),
        gw.url("/mcp"),
        DOCUMENT.into(),
    ])
    .await;
    assert_eq!(seen["protocol_version"], "2026-07-28", "{seen}");
    assert_eq!(
        seen["honored"],
        json!({"toolsListChanged": true, "resourceSubscriptions": [DOCUMENT]}),
        "{seen}"
    );
    assert_eq!(seen["updated"], DOCUMENT, "{seen}");
}

/// The `capabilities` of a handshake-era `initialize`'s answer.
async fn initialize_capabilities(gw: &Gateway) -> Value {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "discoverer", "version": "1"}}});
    let answer =
        answer_of(McpSession::send(&reqwest::Client::new(), &gw.url("/mcp"), None, init).await)
            .await;
    answer["result"]["capabilities"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn discover_advertises_what_initialize_does_merged_over_the_providers() {
    let with_resources = format!("providers:\n{}", everything_provider("everything"));
    // A built-in search provider has tools only (an MCP server written with the Python SDK's
    // MCPServer, such as mcp-server-time, offers empty resource and prompt lists).
    let (docs, index) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(docs.path().join("notes.md"), "# Notes\n\nNothing here.\n").unwrap();
    let tools_only = format!(
        "providers:\n  - {{ name: docs, kind: search, roots: [{{ path: \"{}\", kind: docs }}], index_dir: \"{}\", watch: false }}\n",
        docs.path().display(),
        index.path().display()
    );
    for (label, providers) in [
        ("with resources", with_resources),
        ("tools only", tools_only),
    ] {
        let gw = Gateway::start("discovered", &providers).await;
        let discovered = answer_of(stateless(&gw, "server/discover", None, json!({})).await).await;
        let result = &discovered["result"];
        assert_eq!(
            result["supportedVersions"],
            json!([
                "2024-11-05",
                "2025-03-26",
                "2025-06-18",
                "2025-11-25",
                "2026-07-28"
            ]),
            "{label}: {discovered}"
        );
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "discovered",
            "{label}: {discovered}"
        );
        let capabilities = &result["capabilities"];
        assert_eq!(
            *capabilities,
            initialize_capabilities(&gw).await,
            "{label}: discover and initialize advertise the same"
        );
        assert_eq!(
            capabilities["tools"]["listChanged"], true,
            "{label}: {capabilities}"
        );
        assert!(
            capabilities["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
            "{label}: {capabilities}"
        );
        let offered = |what: &str| capabilities.get(what).is_some();
        if label == "with resources" {
            assert_eq!(
                capabilities["resources"],
                json!({"subscribe": true, "listChanged": true}),
                "{capabilities}"
            );
            assert_eq!(
                capabilities["prompts"]["listChanged"], true,
                "{capabilities}"
            );
            assert!(
                offered("completions") && offered("logging"),
                "{capabilities}"
            );
        } else {
            for what in ["resources", "prompts", "completions", "logging"] {
                assert!(
                    !offered(what),
                    "{label}: {what} is not served: {capabilities}"
                );
            }
            // A listen stream gets what can be told: the tool list's changes only.
            let mut stream = Listening::open(
                &gw,
                "listen-2",
                json!({"toolsListChanged": true, "promptsListChanged": true,
                       "resourcesListChanged": true, "resourceSubscriptions": [DOCUMENT]}),
            )
            .await;
            let ack = stream
                .next(
                    "notifications/subscriptions/acknowledged",
                    Duration::from_secs(10),
                )
                .await;
            assert_eq!(
                ack["params"]["notifications"],
                json!({"toolsListChanged": true}),
                "{ack}"
            );
        }
    }
}
