//! The `cluster` section: what replicas of one service share through Redis (rate limits, usage
//! counters, MCP session records), and what a replica does when Redis does not answer. Absent,
//! every piece of state lives in the one process, as it always did.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use super::types::{as_millis, millis};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// `redis://[user:password@]host[:port][/db]`; `${VAR}` is expanded when the service
    /// starts, so a password can live in the environment. Never logged with its password.
    #[serde(deserialize_with = "redis_url")]
    pub redis_url: String,
    /// This replica's name in /health, logs and MCP session records; default `host:port` of
    /// this machine's hostname and the service's port.
    #[serde(default, deserialize_with = "replica_id")]
    pub replica_id: Option<String>,
    /// `host:port` where the other replicas reach this one (a legacy SSE message for one of
    /// its sessions is forwarded there); default `service.host:service.port`, which will not
    /// do when that host is `0.0.0.0` or the replicas run on several machines.
    #[serde(
        default,
        deserialize_with = "advertise",
        skip_serializing_if = "Option::is_none"
    )]
    pub advertise: Option<String>,
    /// What the rate limit does while Redis does not answer: `open` lets requests through
    /// (the default: a Redis outage must not take every service down; it shows in /health and
    /// metrics), `closed` refuses them with 429.
    #[serde(default)]
    pub rate_limit_on_redis_error: OnRedisError,
    /// How long connecting to Redis or one command may take before it counts as an error.
    #[serde(
        default = "default_timeout",
        rename = "timeout_ms",
        deserialize_with = "millis::<_, 1>",
        serialize_with = "as_millis"
    )]
    pub timeout: Duration,
}

/// The rate limit's answer while Redis is unreachable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnRedisError {
    /// Allow the request (the limit is not enforced until Redis is back).
    #[default]
    Open,
    /// Refuse the request with 429 and `Retry-After: 1`.
    Closed,
}

impl OnRedisError {
    pub fn as_str(self) -> &'static str {
        match self {
            OnRedisError::Open => "open",
            OnRedisError::Closed => "closed",
        }
    }
}

fn default_timeout() -> Duration {
    Duration::from_millis(200)
}

/// A `redis://` URL with a host, or one holding `${VAR}` (checked once expanded, at start).
fn redis_url<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let text = String::deserialize(deserializer)?;
    check_redis_url(&text).map_err(serde::de::Error::custom)?;
    Ok(text)
}

/// Why `text` is not a Redis URL this gateway connects to.
pub fn check_redis_url(text: &str) -> Result<(), RedisUrlError> {
    if text.contains("${") {
        return Ok(());
    }
    match url::Url::parse(text) {
        Ok(url) if url.scheme() == "redis" && url.has_host() => Ok(()),
        Ok(url) if url.scheme() == "rediss" => Err(RedisUrlError::Tls(redact(text))),
        _ => Err(RedisUrlError::NotRedis(redact(text))),
    }
}

/// A `redis_url` this gateway does not connect to, shown without its password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedisUrlError {
    #[error("rediss:// (TLS) is not supported; use redis:// on a private network, got '{0}'")]
    Tls(String),
    #[error("must be a redis:// URL with a host (redis://127.0.0.1:6379/0), got '{0}'")]
    NotRedis(String),
}

fn replica_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let text = String::deserialize(deserializer)?;
    let fine = !text.is_empty()
        && text.len() <= 64
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
    if fine {
        Ok(Some(text))
    } else {
        Err(serde::de::Error::custom(format!(
            "must be 1 to 64 characters of letters, digits, '-', '_', '.', ':', got '{text}'"
        )))
    }
}

fn advertise<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let text = String::deserialize(deserializer)?;
    super::check_grpc_address(&text).map_err(serde::de::Error::custom)?;
    Ok(Some(text))
}

/// `url` with its password (and user) replaced by `***`, for logs and /health.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() || !parsed.username().is_empty() => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            let text = parsed.to_string();
            text.replacen("://", "://***@", 1)
        }
        Ok(_) => url.to_owned(),
        // Not a URL (`${REDIS_URL}`): without an `@` it names no credentials.
        Err(_) if !url.contains('@') => url.to_owned(),
        // Else say nothing of it beyond its scheme, in case it holds a secret.
        Err(_) => url.split("://").next().unwrap_or("").to_owned() + "://…",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<ClusterSection, serde_saphyr::Error> {
        serde_saphyr::from_str(yaml)
    }

    /// The words /health and the metrics show are the ones the config is written with.
    #[test]
    fn a_choice_is_named_as_in_the_config() {
        for choice in [OnRedisError::Open, OnRedisError::Closed] {
            assert_eq!(
                serde_json::to_value(choice).unwrap(),
                serde_json::Value::from(choice.as_str())
            );
        }
        assert_eq!(OnRedisError::Closed.as_str(), "closed");
    }

    #[test]
    fn defaults_fail_open_with_a_short_timeout() {
        let c = parse("redis_url: redis://127.0.0.1:6379/0\n").unwrap();
        assert_eq!(c.rate_limit_on_redis_error, OnRedisError::Open);
        assert_eq!(c.timeout, Duration::from_millis(200));
        assert_eq!(c.replica_id, None);
        assert_eq!(c.advertise, None);
    }

    #[test]
    fn every_field_is_read_and_checked() {
        let c = parse("redis_url: \"${REDIS_URL}\"\nreplica_id: a-1\nrate_limit_on_redis_error: closed\ntimeout_ms: 50\nadvertise: 10.0.0.5:8002\n").unwrap();
        assert_eq!(c.advertise.as_deref(), Some("10.0.0.5:8002"));
        assert_eq!(c.rate_limit_on_redis_error, OnRedisError::Closed);
        assert_eq!(c.replica_id.as_deref(), Some("a-1"));
        assert_eq!(c.timeout, Duration::from_millis(50));
        for (yaml, said) in [
            ("redis_url: http://h:1\n", "must be a redis:// URL"),
            ("redis_url: rediss://h:1\n", "TLS"),
            ("redis_url: redis://h\nreplica_id: 'a b'\n", "1 to 64"),
            (
                "redis_url: redis://h\nrate_limit_on_redis_error: maybe\n",
                "open",
            ),
            ("redis_url: redis://h\ntimeout_ms: 0\n", "at least 1"),
            (
                "redis_url: redis://h\nadvertise: 10.0.0.5\n",
                "must be host:port",
            ),
            ("redis_url: redis://h\nurl: x\n", "unknown field"),
        ] {
            let error = parse(yaml).unwrap_err().to_string();
            assert!(error.contains(said), "{yaml}: {error}");
        }
    }

    #[test]
    fn a_password_never_shows() {
        assert_eq!(redact("redis://:s3cret@h:6379/0"), "redis://***@h:6379/0");
        assert_eq!(redact("redis://u:s3cret@h/1"), "redis://***@h/1");
        assert_eq!(redact("redis://h:6379/0"), "redis://h:6379/0");
        // Not a URL: shown only when it can hold no credentials.
        assert_eq!(redact("${REDIS_URL}"), "${REDIS_URL}");
        assert!(url::Url::parse("redis://u:s3cret@h:port/0").is_err());
        assert_eq!(redact("redis://u:s3cret@h:port/0"), "redis://…");
        let refused = check_redis_url("http://u:s3cret@h")
            .unwrap_err()
            .to_string();
        assert!(!refused.contains("s3cret"), "{refused}");
    }
}
