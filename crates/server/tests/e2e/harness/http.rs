//! Talking to the gateway over HTTP: one answer as status, headers and JSON body held to the
//! envelope; GET, POST and /call-tool in one line each; a keep-alive connection driven by hand;
//! waiting for a dependency's state in /health.

use std::time::Duration;

use contract::envelope;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use testkit::eventually;

use super::process::Gateway;

/// One HTTP answer: status, headers, JSON body.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Answer {
    pub async fn from(response: reqwest::Response) -> Answer {
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
        Answer {
            status,
            headers,
            body,
        }
    }

    /// A /health answer's report: `data`, or `meta.health` when it answered 503.
    pub fn report(&self) -> &Value {
        if self.body["data"].is_object() {
            &self.body["data"]
        } else {
            &self.body["meta"]["health"]
        }
    }

    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }

    /// The contract's envelope rules ([`contract::envelope::check`]), the request id echoed
    /// in `X-Request-Id`, and a JSON content type: what every answer must meet.
    pub fn assert_envelope(&self) {
        if let Err(violations) = envelope::check(&self.body, self.status.as_u16()) {
            panic!("not the envelope ({violations}): {}", self.body);
        }
        let header = self
            .headers
            .get(contract::REQUEST_ID_HEADER)
            .map(|v| v.to_str().expect("X-Request-Id is text"));
        if let Err(violation) = envelope::check_request_id_header(&self.body, header) {
            panic!("{violation}: {}", self.body);
        }
        assert_eq!(self.headers["content-type"], "application/json");
    }
}

/// The body of `GET path` as text (the metrics, a page), whatever its status.
pub async fn get_text(gateway: &Gateway, path: &str) -> String {
    reqwest::get(gateway.url(path))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

pub async fn get(gateway: &Gateway, path: &str) -> Answer {
    Answer::from(
        reqwest::Client::new()
            .get(gateway.url(path))
            .send()
            .await
            .unwrap(),
    )
    .await
}

pub async fn post_json(gateway: &Gateway, path: &str, body: &Value) -> Answer {
    Answer::from(
        reqwest::Client::new()
            .post(gateway.url(path))
            .json(body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

pub async fn call(gateway: &Gateway, tool: &str, arguments: Value) -> Answer {
    post_json(
        gateway,
        "/call-tool",
        &json!({"tool": tool, "arguments": arguments}),
    )
    .await
}

/// Polls GET /health until dependency `name` reports `state`; that /health answer.
pub async fn until_dependency(gw: &Gateway, name: &str, state: &str, within: Duration) -> Answer {
    eventually(within, &format!("{name} reported {state}"), || async {
        let health = get(gw, "/health").await;
        (health.report()["dependencies"][name]["status"] == state).then_some(health)
    })
    .await
}

/// One HTTP/1.1 keep-alive connection, driven by hand so a test can tell it stayed open.
pub struct RawConnection {
    stream: tokio::io::BufReader<tokio::net::TcpStream>,
}

impl RawConnection {
    pub async fn open(gateway: &Gateway) -> RawConnection {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", gateway.port))
            .await
            .unwrap();
        RawConnection {
            stream: tokio::io::BufReader::new(stream),
        }
    }

    /// Sends a GET and reads the whole answer; panics if the server closed the connection.
    pub async fn get(&mut self, path: &str) -> (u16, Value) {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n");
        self.stream
            .get_mut()
            .write_all(request.as_bytes())
            .await
            .unwrap();
        let mut status_line = String::new();
        let n = self.stream.read_line(&mut status_line).await.unwrap();
        assert!(n > 0, "the server closed the keep-alive connection");
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).await.unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).await.unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }
}
