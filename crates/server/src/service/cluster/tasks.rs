//! Task records in Redis, `mcp-http-gateway:{service}:task:{id}`: the replica running a task
//! writes its record (JSON, made by `service::tasks::record`) when it starts and when it ends,
//! so any replica can answer `GET /tasks/{id}` and `tasks/get` for it. A working task's cancel
//! is sent on to the replica running it, at the address in its record, as session requests
//! are ([`super::forward`]): that replica alone can stop the call.
//!
//! Redis only stores and returns the record's text here; what it says is the service's.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use contract::TaskInfo;

use super::Cluster;
use super::forward::{FORWARDED, ForwardError, PASSED_ON, owner_url, unreachable};
use super::writes::Write;

/// On a cancel forwarded by a replica (with [`FORWARDED`]), the client it is for: the owner of
/// the task sees the forwarding replica's address, not the client's, so it is told.
pub static TASK_CLIENT: HeaderName = HeaderName::from_static("x-mcp-gateway-task-client");

/// How long a replica waits for the record of a task it does not hold: the owner writes it
/// off the request path, so a read that a balancer sends elsewhere right after the 202 can
/// come before it.
const RECORD_WAIT: Duration = Duration::from_millis(500);

/// How often the record is asked for while it is awaited.
const RECORD_POLL: Duration = Duration::from_millis(20);

impl Cluster {
    /// A task of this replica started or ended: (re)write its record with `ttl` to live.
    /// Never waits.
    pub fn task_changed(&self, id: &str, record: String, ttl: Duration) {
        self.writes.push(Write::Task {
            id: id.to_owned(),
            record,
            ttl_secs: ttl.as_secs(),
        });
    }

    /// The record of task `id` (its JSON), polled for up to [`RECORD_WAIT`] while Redis has
    /// none; `None` at once when Redis fails (it is down: waiting would not help).
    pub async fn task_record(&self, id: &str) -> Option<String> {
        let key = self.key("task", id);
        let deadline = tokio::time::Instant::now() + RECORD_WAIT;
        loop {
            let key = key.clone();
            let read = self
                .run(|mut c| async move {
                    redis::cmd("GET")
                        .arg(key)
                        .query_async::<Option<String>>(&mut c)
                        .await
                })
                .await;
            match read {
                Ok(Some(record)) => return Some(record),
                Ok(None) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(RECORD_POLL).await;
                }
                _ => return None,
            }
        }
    }

    /// The client a task request forwarded by a replica of this service is for; `None` for
    /// any other request (no secret, a wrong one, or no client named).
    pub fn forwarded_task_client(&self, headers: &HeaderMap) -> Option<String> {
        if !self.forwarded_by_replica(headers) {
            return None;
        }
        let name = headers.get(&TASK_CLIENT)?;
        std::str::from_utf8(name.as_bytes()).ok().map(str::to_owned)
    }

    /// Sends the cancel of task `id`, for `client`, on to replica `owner` at `address`
    /// (`DELETE /tasks/{id}` there, with the client's API key, Host and request id): the task
    /// as the owner answers it, or `None` when the owner has no such task.
    pub async fn forward_task_cancel(
        &self,
        owner: &str,
        address: &str,
        id: &str,
        client: &str,
        headers: &HeaderMap,
    ) -> Result<Option<TaskInfo>, ForwardError> {
        let marked = self.marked().await?;
        let mut url = owner_url(address, "/tasks")?;
        url.path_segments_mut()
            .map_err(|()| ForwardError::Address(address.to_owned()))?
            .push(id);
        let mut passed = HeaderMap::new();
        for name in PASSED_ON.iter().filter(|n| **n != header::CONTENT_TYPE) {
            if let Some(value) = headers.get(name) {
                passed.insert(name.clone(), value.clone());
            }
        }
        passed.insert(FORWARDED.clone(), marked);
        let unreachable = |why: String| unreachable(owner, address, why);
        let named = HeaderValue::from_bytes(client.as_bytes())
            .map_err(|e| unreachable(format!("the client's name is no header value: {e}")))?;
        passed.insert(TASK_CLIENT.clone(), named);
        let answer = self
            .http()
            .delete(url)
            .headers(passed)
            .send()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let status = answer.status();
        let body = answer
            .bytes()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        task_answered(owner, status, &body)
    }
}

/// The task in the owner's answer to a forwarded cancel (the envelope's `data`), `None` for its
/// 404; anything else is the owner failing.
fn task_answered(
    owner: &str,
    status: StatusCode,
    body: &[u8],
) -> Result<Option<TaskInfo>, ForwardError> {
    let failed = || ForwardError::Answered {
        owner: owner.to_owned(),
        status,
    };
    match status {
        StatusCode::NOT_FOUND => Ok(None),
        StatusCode::OK => {
            let mut envelope: serde_json::Value =
                serde_json::from_slice(body).map_err(|_| failed())?;
            serde_json::from_value(envelope["data"].take())
                .map(Some)
                .map_err(|_| failed())
        }
        _ => Err(failed()),
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

    fn headers(pairs: &[(&HeaderName, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert((*name).clone(), HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    /// Only a replica (the shared secret) may say whose task a request is about: a client
    /// naming another client gets nothing.
    #[test]
    fn only_a_replica_names_the_client_of_a_forwarded_cancel() {
        let cluster = cluster();
        cluster.set_forward_secret("s3cret");
        let forwarded = headers(&[(&FORWARDED, "s3cret"), (&TASK_CLIENT, "alice")]);
        assert_eq!(
            cluster.forwarded_task_client(&forwarded).as_deref(),
            Some("alice")
        );
        for other in [
            headers(&[(&FORWARDED, "guess"), (&TASK_CLIENT, "alice")]),
            headers(&[(&TASK_CLIENT, "alice")]),
            headers(&[(&FORWARDED, "s3cret")]),
        ] {
            assert_eq!(cluster.forwarded_task_client(&other), None, "{other:?}");
        }
    }

    #[test]
    fn the_owners_answer_is_its_task_its_404_none_and_anything_else_a_failure() {
        let body = serde_json::json!({"data": {
            "task_id": "t", "tool": "echo", "status": "cancelled",
            "created_at": "c", "updated_at": "u", "poll_interval_ms": 1000},
            "meta": {"request_id": "r"}});
        let body = serde_json::to_vec(&body).unwrap();
        let task = task_answered("r1", StatusCode::OK, &body).unwrap().unwrap();
        assert_eq!(
            (task.task_id.as_str(), task.status),
            ("t", contract::TaskStatus::Cancelled)
        );
        assert!(
            task_answered("r1", StatusCode::NOT_FOUND, b"{}")
                .unwrap()
                .is_none()
        );
        for (status, body) in [
            (StatusCode::UNAUTHORIZED, &b"{}"[..]),
            (StatusCode::OK, b"not json"),
            (StatusCode::OK, b"{\"data\": {\"task_id\": 1}}"),
        ] {
            assert!(
                matches!(
                    task_answered("r1", status, body),
                    Err(ForwardError::Answered { .. })
                ),
                "{status}"
            );
        }
    }

    #[tokio::test]
    async fn no_cancel_is_sent_without_the_secret_or_to_an_address_that_is_not_host_port() {
        let cluster = cluster();
        let sent = cluster
            .forward_task_cancel("r1", "127.0.0.1:1", "t", "alice", &HeaderMap::new())
            .await;
        assert!(matches!(sent, Err(ForwardError::NoSecret)));
        cluster.set_forward_secret("s");
        for bad in ["127.0.0.1", "h:1/x", "h:1?y"] {
            let sent = cluster
                .forward_task_cancel("r1", bad, "t", "alice", &HeaderMap::new())
                .await;
            assert!(matches!(sent, Err(ForwardError::Address(_))), "{bad}");
        }
    }

    /// The cancel reaches the owner as `DELETE /tasks/{id}` with the secret, the client's name,
    /// its API key and request id, and the owner's task comes back.
    #[tokio::test]
    async fn a_cancel_goes_to_the_owner_with_the_secret_the_client_and_its_key() {
        use axum::extract::Path;
        let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
        let record = seen.clone();
        let owner = axum::Router::new().route(
            "/tasks/{id}",
            axum::routing::delete(move |Path(id): Path<String>, headers: HeaderMap| {
                let record = record.clone();
                async move {
                    *record.lock().unwrap() = Some((id.clone(), headers));
                    axum::Json(serde_json::json!({"data": {
                        "task_id": id, "tool": "echo", "status": "cancelled",
                        "created_at": "c", "updated_at": "u", "poll_interval_ms": 1000}}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move { axum::serve(listener, owner).await });
        let cluster = cluster();
        cluster.set_forward_secret("s3cret");
        let client_headers = headers(&[
            (&HeaderName::from_static("x-api-key"), "alice-key"),
            (&HeaderName::from_static("x-request-id"), "req-1"),
            (&header::CONTENT_TYPE, "application/json"),
            (&HeaderName::from_static("mcp-session-id"), "s"),
        ]);
        let task = cluster
            .forward_task_cancel("r1", &address, "0b6c", "alice", &client_headers)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(task.status, contract::TaskStatus::Cancelled);
        let (id, sent) = seen.lock().unwrap().take().unwrap();
        assert_eq!(id, "0b6c");
        assert_eq!(sent[&FORWARDED], "s3cret");
        assert_eq!(sent[&TASK_CLIENT], "alice");
        assert_eq!(sent["x-api-key"], "alice-key");
        assert_eq!(sent["x-request-id"], "req-1");
        assert!(!sent.contains_key("mcp-session-id"));
        assert!(!sent.contains_key(header::CONTENT_TYPE));
        server.abort();
    }
}
