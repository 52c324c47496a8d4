//! Reading a service's GET /tools, with retries: 4 attempts, 250 ms, 500 ms and 1 s apart. An
//! answer that breaks the contract's envelope (`contract::envelope::check`) is not a service's
//! tool list, whatever its data says.

use std::time::Duration;

use contract::ToolsResponse;
use reqwest::StatusCode;
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
    read(url, status, &body)
}

/// The tool list in an answer of GET /tools: a successful envelope that meets the contract's
/// rules, with a tool list as its data.
fn read(url: &str, status: StatusCode, body: &Value) -> Result<ToolsResponse, String> {
    if !status.is_success() || body["success"] != true {
        return Err(format!(
            "GET {url}/tools answered {status}: {} {}",
            body["code"].as_str().unwrap_or(""),
            body["error"].as_str().unwrap_or("")
        ));
    }
    contract::envelope::check(body, status.as_u16())
        .map_err(|v| format!("GET {url}/tools answered a body that breaks the envelope: {v}"))?;
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(timestamp: &str) -> Value {
        json!({"success": true, "data": {"service": "s", "version": "1", "tools": []},
               "request_id": "7d0c3f0e-1c2b-4a5e-9f00-0123456789ab", "timestamp": timestamp})
    }

    #[test]
    fn a_tool_list_is_read_from_a_well_formed_envelope_only() {
        let tools = read(
            "http://x",
            StatusCode::OK,
            &answer("2026-11-22T10:00:00.000Z"),
        )
        .unwrap();
        assert_eq!(tools.service, "s");
        let broken = read("http://x", StatusCode::OK, &answer("2026-11-22T10:00:00Z")).unwrap_err();
        assert!(
            broken.contains("breaks the envelope: timestamp '2026-11-22T10:00:00Z'"),
            "{broken}"
        );
        let failed = json!({"success": false, "error": "down", "code": "SERVICE_UNAVAILABLE"});
        assert_eq!(
            read("http://x", StatusCode::SERVICE_UNAVAILABLE, &failed).unwrap_err(),
            "GET http://x/tools answered 503 Service Unavailable: SERVICE_UNAVAILABLE down"
        );
    }
}
