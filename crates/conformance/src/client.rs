//! The HTTP side of the tester: sends one request, keeps what was sent and what came back,
//! and can write the request as a curl command a person can paste.

use std::time::Duration;

use serde_json::Value;

/// A request as the tester built it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

impl Request {
    pub fn get(path: &str) -> Request {
        Request {
            method: "GET".into(),
            path: path.into(),
            headers: Vec::new(),
            body: None,
        }
    }

    /// A POST with a JSON body and `Content-Type: application/json`.
    pub fn post_json(path: &str, body: &Value) -> Request {
        Request::post_raw(path, "application/json", body.to_string().into_bytes())
    }

    pub fn post_raw(path: &str, content_type: &str, body: Vec<u8>) -> Request {
        Request {
            method: "POST".into(),
            path: path.into(),
            headers: vec![("Content-Type".into(), content_type.into())],
            body: Some(body),
        }
    }

    pub fn method(mut self, method: &str) -> Request {
        self.method = method.into();
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// A shell command that sends the same request.
    pub fn curl(&self, base: &str) -> String {
        let mut parts = vec!["curl -sS -i".to_owned()];
        if self.method != "GET" {
            parts.push(format!("-X {}", self.method));
        }
        for (name, value) in &self.headers {
            parts.push(format!("-H {}", shell_quote(&format!("{name}: {value}"))));
        }
        let url = shell_quote(&format!("{base}{}", self.path));
        match &self.body {
            Some(body) if body.len() > 4096 => {
                // Too long to paste: rebuild it from its size.
                let filler = body.iter().filter(|&&b| b == b' ').count();
                return format!(
                    "{{ printf '{{\"tool\":\"x\",\"arguments\":{{\"pad\":\"'; head -c {filler} /dev/zero | tr '\\0' ' '; printf '\"}}}}'; }} | {} --data-binary @- {url}",
                    parts.join(" ")
                );
            }
            Some(body) => parts.push(format!(
                "--data-binary {}",
                shell_quote(&String::from_utf8_lossy(body))
            )),
            None => {}
        }
        parts.push(url);
        parts.join(" ")
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// What came back.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub request: Request,
    pub status: u16,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
}

impl Exchange {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> &Value {
        static NULL: Value = Value::Null;
        self.json.as_ref().unwrap_or(&NULL)
    }

    pub fn code(&self) -> Option<&str> {
        self.json()["code"].as_str()
    }
}

/// Talks to one base URL.
pub struct Client {
    pub base: String,
    http: reqwest::blocking::Client,
}

impl Client {
    pub fn new(base: &str, timeout: Duration) -> Result<Client, String> {
        let http = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Client {
            base: base.trim_end_matches('/').to_owned(),
            http,
        })
    }

    pub fn send(&self, request: Request) -> Result<Exchange, String> {
        let method =
            reqwest::Method::from_bytes(request.method.as_bytes()).map_err(|e| e.to_string())?;
        let mut builder = self
            .http
            .request(method, format!("{}{}", self.base, request.path));
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        if let Some(body) = &request.body {
            builder = builder.body(body.clone());
        }
        let response = builder
            .send()
            .map_err(|e| format!("{} {} failed: {e}", request.method, request.path))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_ascii_lowercase(),
                    v.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let body = response.text().map_err(|e| {
            format!(
                "reading the answer to {} {}: {e}",
                request.method, request.path
            )
        })?;
        let json = serde_json::from_str(&body).ok();
        Ok(Exchange {
            request,
            status,
            headers,
            body,
            json,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn curl_quotes_what_the_shell_would_break() {
        let r = Request::post_json("/call-tool", &json!({"tool": "it's"}));
        assert_eq!(
            r.curl("http://h:1"),
            "curl -sS -i -X POST -H 'Content-Type: application/json' --data-binary '{\"tool\":\"it'\\''s\"}' 'http://h:1/call-tool'"
        );
        assert_eq!(
            Request::get("/tools").curl("http://h"),
            "curl -sS -i 'http://h/tools'"
        );
    }
}
