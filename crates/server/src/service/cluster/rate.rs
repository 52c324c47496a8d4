//! The rate limit shared by every replica: GCRA (the generic cell rate algorithm) in one Lua
//! script, so taking a request is one atomic round trip whichever replica asks. Time is Redis's
//! own (`TIME` inside the script), never a replica's clock, so replicas whose clocks disagree
//! still count one allowance. The numbers answered are the local limiter's
//! ([`crate::service::rate_limit`]): a whole minute's allowance at once, one more every
//! 60/limit seconds, and the same remaining / reset / retry-after.

use redis::Script;

use super::{Cluster, ClusterError};
use crate::service::rate_limit::Decision;

/// KEYS[1]: the client's key. ARGV[1]: requests per minute.
/// The key holds the theoretical arrival time (TAT, microseconds of Redis's clock): when the
/// allowance would be whole again if no more requests came. A request is allowed while the
/// TAT it would make lies at most one minute ahead. Answers
/// `{allowed, remaining, reset_seconds, retry_after_seconds}`.
const GCRA: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local window = 60000000
local interval = window / limit
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + interval
if new_tat - now > window then
  return {0, 0, math.ceil((tat - now) / 1000000), math.ceil((new_tat - window - now) / 1000000)}
end
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
return {1, math.floor((window - (new_tat - now)) / interval + 1e-6), math.ceil((new_tat - now) / 1000000), 0}
"#;

/// The script, hashed once: `invoke_async` sends EVALSHA and falls back to EVAL (loading it)
/// when Redis answers NOSCRIPT (a restarted or flushed Redis).
fn script() -> &'static Script {
    static SCRIPT: std::sync::OnceLock<Script> = std::sync::OnceLock::new();
    SCRIPT.get_or_init(|| Script::new(GCRA))
}

impl Cluster {
    /// Takes one request of `client`'s allowance (of `tool`'s, when given) of `per_minute`,
    /// counted across every replica. Keys: `mcp-http-gateway:{service}:rl:{client}` and
    /// `…:rl:{client}:tool:{tool}`.
    pub async fn take(
        &self,
        client: &str,
        tool: Option<&str>,
        per_minute: u64,
    ) -> Result<Decision, ClusterError> {
        let key = match tool {
            Some(tool) => self.key("rl", &format!("{client}:tool:{tool}")),
            None => self.key("rl", client),
        };
        let limit = per_minute.max(1);
        let answer: Vec<i64> = self
            .run(|mut c| async move {
                script()
                    .key(key)
                    .arg(limit)
                    .invoke_async::<Vec<i64>>(&mut c)
                    .await
            })
            .await?;
        let [allowed, remaining, reset, retry] = answer[..] else {
            return Err(ClusterError::Answer(format!("{answer:?}")));
        };
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(Decision {
            allowed: allowed == 1,
            limit: per_minute,
            remaining: count(remaining),
            reset_seconds: count(reset),
            retry_after: if allowed == 1 { 0 } else { count(retry).max(1) },
        })
    }
}
