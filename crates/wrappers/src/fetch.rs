//! Reading a service's GET /tools, with retries: 4 attempts, 250 ms, 500 ms and 1 s apart.

use std::time::Duration;

use contract::ToolsResponse;
use serde_json::Value;

const BACKOFF: [Duration; 3] = [
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_millis(1000),
];

fn once(client: &reqwest::blocking::Client, url: &str) -> Result<ToolsResponse, String> {
    let answer = client
        .get(format!("{url}/tools"))
        .send()
        .map_err(|e| format!("GET {url}/tools: {e}"))?;
    let status = answer.status();
    let body: Value = answer
        .json()
        .map_err(|e| format!("GET {url}/tools answered {status} without JSON: {e}"))?;
    if !status.is_success() || body["success"] != true {
        return Err(format!(
            "GET {url}/tools answered {status}: {} {}",
            body["code"].as_str().unwrap_or(""),
            body["error"].as_str().unwrap_or("")
        ));
    }
    serde_json::from_value(body["data"].clone())
        .map_err(|e| format!("GET {url}/tools: not a tool list: {e}"))
}

/// The service's tools, or the last error after every attempt failed.
pub fn tools(url: &str) -> Result<ToolsResponse, String> {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| e.to_string())?;
    let url = url.trim_end_matches('/');
    let mut last = String::new();
    for pause in std::iter::once(Duration::ZERO).chain(BACKOFF) {
        std::thread::sleep(pause);
        match once(&client, url) {
            Ok(tools) => return Ok(tools),
            Err(e) => last = e,
        }
    }
    Err(format!("{last} (after {} attempts)", BACKOFF.len() + 1))
}
