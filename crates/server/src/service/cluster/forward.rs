//! Requests for a session another replica holds, sent on to it: legacy SSE messages
//! (`POST /messages`: the session id is in the query, known only once the stream has started,
//! so no balancer can route them), and every request of a Streamable HTTP session
//! (`/mcp` with `Mcp-Session-Id`) that a balancer without affinity (plain round robin, a
//! Kubernetes Service) sent to the wrong replica. A replica that gets one for a session whose
//! Redis record names another replica sends it on to the address in that record and passes
//! the answer back, streamed. The forwarded request carries a secret the replicas share in
//! Redis: the owner neither counts it in the rate limit (the replica it reached first did)
//! nor forwards it again. The cancel of another replica's task goes the same way
//! ([`super::tasks`]).

use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use subtle::ConstantTimeEq;

use super::Cluster;
use super::sessions::SessionRecord;

/// Marks a request as forwarded by a replica; its value is the shared secret.
pub static FORWARDED: HeaderName = HeaderName::from_static("x-mcp-gateway-forwarded");

/// How long the owner may take to take a message (it answers 202 at once).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(10);

/// The headers of the client's request that go with it: what the owner's checks read again
/// (its API key, the Host it was sent to, the body's type) and its request id, so both
/// replicas' log lines carry the same one.
pub(super) const PASSED_ON: [HeaderName; 5] = [
    header::CONTENT_TYPE,
    header::AUTHORIZATION,
    header::HOST,
    HeaderName::from_static("x-api-key"),
    HeaderName::from_static("x-request-id"),
];

/// The owner's answer, passed back as it is.
pub struct Forwarded {
    pub status: StatusCode,
    pub content_type: Option<HeaderValue>,
    pub body: Bytes,
}

/// Why a message could not be forwarded.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("this replica has not read the replicas' shared secret from redis yet")]
    NoSecret,
    #[error("the address '{0}' in the record is not host:port")]
    Address(String),
    #[error("replica '{owner}' at {address} did not take it: {why}")]
    Unreachable {
        owner: String,
        address: String,
        why: String,
    },
    #[error("replica '{owner}' answered {status}")]
    Answered { owner: String, status: StatusCode },
}

/// What [`Cluster`] keeps for forwarding.
#[derive(Default)]
pub(super) struct Forwarding {
    secret: OnceLock<String>,
    http: OnceLock<reqwest::Client>,
    streaming: OnceLock<reqwest::Client>,
}

/// `path` on the replica at `address`, which must be `host:port` and nothing more.
pub(super) fn owner_url(address: &str, path: &str) -> Result<url::Url, ForwardError> {
    let url = url::Url::parse(&format!("http://{address}{path}"))
        .map_err(|_| ForwardError::Address(address.to_owned()))?;
    if url.path() != path || url.port().is_none() {
        return Err(ForwardError::Address(address.to_owned()));
    }
    Ok(url)
}

/// Replica `owner` at `address` could not be reached, or its answer not read, for `why`.
pub(super) fn unreachable(owner: &str, address: &str, why: String) -> ForwardError {
    ForwardError::Unreachable {
        owner: owner.to_owned(),
        address: address.to_owned(),
        why,
    }
}

/// Headers that belong to one connection (RFC 9110, 7.6.1), not to the request.
fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

impl Cluster {
    /// Reads the replicas' shared secret, made by the first replica that asks; does nothing
    /// once read. Called by the background loop while Redis answers, and by the first request
    /// sent on before that.
    pub(super) async fn read_forward_secret(&self) {
        if self.forwarding.secret.get().is_some() {
            return;
        }
        let key = self.key("replicas", "forward-secret");
        let fresh = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let read = self
            .run(|mut c| async move {
                redis::cmd("SET")
                    .arg(&key)
                    .arg(fresh)
                    .arg("NX")
                    .query_async::<Option<String>>(&mut c)
                    .await?;
                redis::cmd("GET")
                    .arg(&key)
                    .query_async::<Option<String>>(&mut c)
                    .await
            })
            .await;
        if let Ok(Some(secret)) = read {
            let _ = self.forwarding.secret.set(secret);
        }
    }

    /// As if the secret had been read from Redis.
    #[cfg(test)]
    pub(crate) fn set_forward_secret(&self, secret: &str) {
        self.forwarding.secret.set(secret.to_owned()).unwrap();
    }

    /// Whether `headers` mark a request forwarded by a replica of this service.
    pub fn forwarded_by_replica(&self, headers: &HeaderMap) -> bool {
        match (self.forwarding.secret.get(), headers.get(&FORWARDED)) {
            (Some(secret), Some(value)) => secret.as_bytes().ct_eq(value.as_bytes()).into(),
            _ => false,
        }
    }

    /// Sends a legacy SSE message for session `id` on to `owner`, the replica holding it.
    pub async fn forward_message(
        &self,
        owner: &SessionRecord,
        id: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Forwarded, ForwardError> {
        let marked = self.marked().await?;
        let mut url = owner_url(&owner.address, "/messages")?;
        url.query_pairs_mut().append_pair("sessionId", id);
        let mut passed = HeaderMap::new();
        for name in &PASSED_ON {
            if let Some(value) = headers.get(name) {
                passed.insert(name.clone(), value.clone());
            }
        }
        passed.insert(FORWARDED.clone(), marked);
        let unreachable = |why: String| unreachable(&owner.owner, &owner.address, why);
        let answer = self
            .http()
            .post(url)
            .headers(passed)
            .body(body)
            .send()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let status = answer.status();
        let content_type = answer.headers().get(header::CONTENT_TYPE).cloned();
        let body = answer
            .bytes()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        Ok(Forwarded {
            status,
            content_type,
            body,
        })
    }

    /// Sends a Streamable HTTP request of session `owner` holds on to it (`/mcp`, the client's
    /// method, headers and body), and its answer back as it comes: an SSE stream stays a
    /// stream. Only the hop-by-hop headers stay behind.
    pub async fn forward_session_request(
        &self,
        owner: &SessionRecord,
        request: axum::extract::Request,
    ) -> Result<axum::response::Response, ForwardError> {
        let marked = self.marked().await?;
        let url = owner_url(&owner.address, "/mcp")?;
        let (parts, body) = request.into_parts();
        let mut passed = HeaderMap::new();
        for (name, value) in &parts.headers {
            if !is_hop_by_hop(name) {
                passed.append(name.clone(), value.clone());
            }
        }
        passed.insert(FORWARDED.clone(), marked);
        let unreachable = |why: String| unreachable(&owner.owner, &owner.address, why);
        let answer = self
            .streaming_http()
            .request(parts.method, url)
            .headers(passed)
            .body(reqwest::Body::wrap_stream(body.into_data_stream()))
            .send()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let status = answer.status();
        let mut headers = HeaderMap::new();
        for (name, value) in answer.headers() {
            if !is_hop_by_hop(name) && name != header::CONTENT_LENGTH {
                headers.append(name.clone(), value.clone());
            }
        }
        let mut response =
            axum::response::Response::new(axum::body::Body::from_stream(answer.bytes_stream()));
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }

    /// The value of [`FORWARDED`]: the replicas' shared secret, read now if the background
    /// loop has not read it yet (a request can come right after the replica is ready, before
    /// the loop's first read succeeded).
    pub(super) async fn marked(&self) -> Result<HeaderValue, ForwardError> {
        self.read_forward_secret().await;
        let secret = self.forwarding.secret.get().ok_or(ForwardError::NoSecret)?;
        HeaderValue::from_str(secret).map_err(|_| ForwardError::NoSecret)
    }

    /// The client forwarded session requests go out on: as [`Self::http`], with no bound on
    /// the whole exchange (an SSE stream lives as long as its session), only on connecting.
    fn streaming_http(&self) -> &reqwest::Client {
        self.forwarding.streaming.get_or_init(|| {
            reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(FORWARD_TIMEOUT)
                .build()
                .expect("a plain HTTP client builds")
        })
    }

    /// The client forwarded messages go out on: straight to the replica (no proxy from the
    /// environment), no redirects.
    pub(super) fn http(&self) -> &reqwest::Client {
        self.forwarding.http.get_or_init(|| {
            reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(FORWARD_TIMEOUT)
                .build()
                .expect("a plain HTTP client builds")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClusterSection;

    fn cluster() -> std::sync::Arc<Cluster> {
        let config: ClusterSection = serde_saphyr::from_str("redis_url: redis://h\n").unwrap();
        Cluster::new("s", &config, "127.0.0.1", 8000)
    }

    fn marked(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(FORWARDED.clone(), HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn only_connection_headers_stay_behind() {
        for name in [
            "connection",
            "keep-alive",
            "transfer-encoding",
            "upgrade",
            "te",
        ] {
            assert!(is_hop_by_hop(&HeaderName::from_static(name)), "{name}");
        }
        for name in [
            "mcp-session-id",
            "authorization",
            "x-api-key",
            "accept",
            "host",
        ] {
            assert!(!is_hop_by_hop(&HeaderName::from_static(name)), "{name}");
        }
    }

    #[test]
    fn only_the_shared_secret_marks_a_request_forwarded() {
        let cluster = cluster();
        // Before the secret is read nothing is taken as forwarded, whatever it says.
        assert!(!cluster.forwarded_by_replica(&marked("")));
        cluster.forwarding.secret.set("s3cret".into()).unwrap();
        assert!(cluster.forwarded_by_replica(&marked("s3cret")));
        for wrong in ["", "s3cre", "s3cret0", "S3cret"] {
            assert!(!cluster.forwarded_by_replica(&marked(wrong)), "{wrong}");
        }
        assert!(!cluster.forwarded_by_replica(&HeaderMap::new()));
    }

    #[tokio::test]
    async fn nothing_is_sent_without_the_secret_or_to_an_address_that_is_not_host_port() {
        let cluster = cluster();
        let record = |address: &str| SessionRecord {
            owner: "r1".into(),
            address: address.into(),
            state: "initialized".into(),
            created: "2026-11-26T00:00:00Z".into(),
        };
        let sent = cluster
            .forward_message(&record("127.0.0.1:1"), "a", &HeaderMap::new(), Bytes::new())
            .await;
        assert!(matches!(sent, Err(ForwardError::NoSecret)));
        cluster.forwarding.secret.set("s".into()).unwrap();
        for bad in ["127.0.0.1", "h:1/x", "h:1?y", "a b:1"] {
            let sent = cluster
                .forward_message(&record(bad), "a", &HeaderMap::new(), Bytes::new())
                .await;
            assert!(matches!(sent, Err(ForwardError::Address(_))), "{bad}");
        }
    }
}
