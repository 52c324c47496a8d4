//! Talking to the gateway's own MCP server by hand, message by message: a Streamable HTTP
//! session at /mcp (JSON or SSE answers), and a legacy SSE session at /sse.

use std::time::Duration;

use serde_json::Value;

use super::process::Gateway;

/// A Streamable HTTP session driven by hand, JSON-RPC message by message.
#[derive(Clone)]
pub struct McpSession {
    pub client: reqwest::Client,
    pub url: String,
    pub id: String,
}

impl McpSession {
    /// A session after the whole handshake (`initialize`, then `notifications/initialized`).
    pub async fn open(gw: &Gateway) -> McpSession {
        let session = McpSession::initialize(gw, "t").await;
        session
            .post(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        session
    }

    /// A session after `initialize` only: the handshake is not finished.
    pub async fn initialize(gw: &Gateway, client_name: &str) -> McpSession {
        McpSession::initialize_on(
            reqwest::Client::new(),
            &gw.url("/mcp"),
            client_name,
            serde_json::json!({}),
        )
        .await
    }

    /// A session at `url` after `initialize` only, sent by `client` (its headers, its
    /// connections) for a client called `client_name` that offers `capabilities`.
    pub async fn initialize_on(
        client: reqwest::Client,
        url: &str,
        client_name: &str,
        capabilities: Value,
    ) -> McpSession {
        let init = McpSession::send(&client, url, None, serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": client_name, "version": "0.9"}}}))
        .await;
        assert_eq!(init.status(), 200, "initialize");
        let id = init.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let _ = init.text().await;
        McpSession {
            client,
            url: url.to_owned(),
            id,
        }
    }

    /// The same after the whole handshake.
    pub async fn open_on(
        client: reqwest::Client,
        url: &str,
        client_name: &str,
        capabilities: Value,
    ) -> McpSession {
        let session = McpSession::initialize_on(client, url, client_name, capabilities).await;
        session
            .post(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        session
    }

    /// Posts one JSON-RPC message to `url`, in `session` when given.
    pub async fn send(
        client: &reqwest::Client,
        url: &str,
        session: Option<&str>,
        body: Value,
    ) -> reqwest::Response {
        let mut request = client
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(s) = session {
            request = request.header("mcp-session-id", s);
        }
        request.send().await.unwrap()
    }

    pub async fn post(&self, body: Value) -> reqwest::Response {
        McpSession::send(&self.client, &self.url, Some(&self.id), body).await
    }

    /// Posts a request and returns its JSON-RPC answer (from JSON or the SSE stream).
    pub async fn ask(&self, body: Value) -> Value {
        let text = self.post(body).await.text().await.unwrap();
        jsonrpc_answer(&text)
    }
}

/// Every JSON-RPC message of an answer's body: the one JSON body, or each event of an SSE
/// stream, in order.
pub fn jsonrpc_messages(text: &str) -> Vec<Value> {
    if let Ok(message) = serde_json::from_str::<Value>(text) {
        return vec![message];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .collect()
}

/// The answer (result or error) among an answer body's JSON-RPC messages.
pub fn jsonrpc_answer(text: &str) -> Value {
    jsonrpc_messages(text)
        .into_iter()
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in: {text}"))
}

/// Opens a legacy SSE session: the stream and the message URL its `endpoint` event names.
pub async fn open_sse(gw: &Gateway) -> (reqwest::Response, String) {
    open_sse_at(&gw.url("/sse"), None).await
}

/// Opens a legacy SSE session at `url` (a gateway's or a balancer's `/sse`), with API key
/// `key` when given: the stream and the message URL its `endpoint` event names.
pub async fn open_sse_at(url: &str, key: Option<&str>) -> (reqwest::Response, String) {
    let mut request = reqwest::Client::new().get(url);
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    let mut stream = request.send().await.unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let mut seen = String::new();
    while !seen.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        seen.starts_with("event: endpoint\ndata: /messages?sessionId="),
        "{seen}"
    );
    let endpoint = seen
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap()
        .to_owned();
    (stream, endpoint)
}
