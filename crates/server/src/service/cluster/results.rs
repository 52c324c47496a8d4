//! Read-only tool results shared by every replica (`resilience.cache` rules with a `cluster`):
//! `mcp-http-gateway:{service}:result:{sha256 of the call}` = the result as JSON, kept for the
//! rule's `ttl_ms`. Written without waiting, with the other writes; read once by a replica that
//! has no result of its own, under the cluster's timeout. Redis down: each replica keeps its own.

use std::time::Duration;

use super::Cluster;
use super::writes::Write;

impl Cluster {
    /// The result another replica shared for the call `digest`, if Redis answers with one.
    pub async fn shared_result(&self, digest: &str) -> Option<String> {
        let key = self.key("result", digest);
        self.run(|mut c| async move {
            redis::cmd("GET")
                .arg(key)
                .query_async::<Option<String>>(&mut c)
                .await
        })
        .await
        .ok()
        .flatten()
    }

    /// Shares the result of the call `digest` for `ttl`. Never waits.
    pub fn share_result(&self, digest: &str, text: String, ttl: Duration) {
        self.writes.push(Write::Result {
            digest: digest.to_owned(),
            text,
            ttl_ms: ttl.as_millis() as u64,
        });
    }
}
