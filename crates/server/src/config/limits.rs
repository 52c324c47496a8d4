//! How much a service takes on: the service's `limits` section (body size and the shape of
//! JSON bodies, header size and count, the header read timeout and open connections, call
//! timeout, admission: concurrent calls and the queue before them) and a provider's `limits`
//! (its own concurrency and timeout, and per-tool rules matched by name or glob).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::types::{
    as_millis, as_optional_millis, bytes, count, millis, optional_count, optional_millis, text,
};

/// The service's `limits` section.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    #[serde(default = "default_max_body", deserialize_with = "bytes::<_, 1>")]
    pub max_body_bytes: usize,
    /// Objects and arrays nested in a JSON body (the body is level 1); deeper: 400.
    #[serde(default = "default_max_json_depth", deserialize_with = "json_depth")]
    pub max_json_depth: usize,
    /// Bytes of one string (value or key) of a JSON body; longer: 400.
    #[serde(
        default = "default_max_string_bytes",
        deserialize_with = "bytes::<_, 1>"
    )]
    pub max_string_bytes: usize,
    /// Members of one object or items of one array of a JSON body; more: 400.
    #[serde(
        default = "default_max_json_members",
        deserialize_with = "bytes::<_, 1>"
    )]
    pub max_json_members: usize,
    /// Bytes of a request's header fields (names and values); more: 431.
    #[serde(
        default = "default_max_header_bytes",
        deserialize_with = "bytes::<_, 1024>"
    )]
    pub max_header_bytes: usize,
    /// Header fields of a request; more: 431.
    #[serde(default = "default_max_headers", deserialize_with = "bytes::<_, 8>")]
    pub max_headers: usize,
    /// How long a connection may take to send a request's headers (and stay idle between
    /// requests) before it is closed.
    #[serde(
        default = "default_header_read_timeout",
        rename = "header_read_timeout_ms",
        deserialize_with = "millis::<_, 100>",
        serialize_with = "as_millis"
    )]
    pub header_read_timeout: Duration,
    /// Connections served at once; more wait to be accepted (read at start).
    #[serde(
        default = "default_max_connections",
        deserialize_with = "bytes::<_, 1>"
    )]
    pub max_connections: usize,
    /// A call's timeout unless its provider or tool sets one.
    #[serde(
        default = "default_call_timeout",
        rename = "call_timeout_ms",
        deserialize_with = "millis::<_, 1>",
        serialize_with = "as_millis"
    )]
    pub call_timeout: Duration,
    #[serde(
        default = "default_grace",
        rename = "shutdown_grace_ms",
        deserialize_with = "millis::<_, 0>",
        serialize_with = "as_millis"
    )]
    pub shutdown_grace: Duration,
    /// Tool calls (REST and MCP together) running at once; more wait in the queue.
    #[serde(
        default = "default_max_concurrent_calls",
        deserialize_with = "count::<_, 1>"
    )]
    pub max_concurrent_calls: u64,
    /// Calls allowed to wait for a slot (of the service, their provider or their tool); one
    /// more is answered 503 at once.
    #[serde(default = "default_queue_depth", deserialize_with = "count::<_, 0>")]
    pub queue_depth: u64,
    /// How long a call may wait in the queue before it is answered 503.
    #[serde(
        default = "default_queue_timeout",
        rename = "queue_timeout_ms",
        deserialize_with = "millis::<_, 1>",
        serialize_with = "as_millis"
    )]
    pub queue_timeout: Duration,
}

fn default_max_body() -> usize {
    1_048_576
}
fn default_max_json_depth() -> usize {
    64
}
fn default_max_string_bytes() -> usize {
    262_144
}
fn default_max_json_members() -> usize {
    10_000
}
fn default_max_header_bytes() -> usize {
    32_768
}
fn default_max_headers() -> usize {
    100
}
fn default_header_read_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_max_connections() -> usize {
    1024
}

/// The most `max_json_depth` may be: serde_json's own recursion limit is 128.
pub const MAX_JSON_DEPTH: usize = 127;

fn json_depth<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    let depth = bytes::<D, 1>(deserializer)?;
    if depth > MAX_JSON_DEPTH {
        return Err(serde::de::Error::custom(format!(
            "max_json_depth may be at most {MAX_JSON_DEPTH}, got {depth}"
        )));
    }
    Ok(depth)
}

fn default_call_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_grace() -> Duration {
    Duration::from_secs(5)
}
fn default_max_concurrent_calls() -> u64 {
    64
}
fn default_queue_depth() -> u64 {
    256
}
fn default_queue_timeout() -> Duration {
    Duration::from_secs(10)
}

impl Default for LimitsSection {
    fn default() -> Self {
        LimitsSection {
            max_body_bytes: default_max_body(),
            max_json_depth: default_max_json_depth(),
            max_string_bytes: default_max_string_bytes(),
            max_json_members: default_max_json_members(),
            max_header_bytes: default_max_header_bytes(),
            max_headers: default_max_headers(),
            header_read_timeout: default_header_read_timeout(),
            max_connections: default_max_connections(),
            call_timeout: default_call_timeout(),
            shutdown_grace: default_grace(),
            max_concurrent_calls: default_max_concurrent_calls(),
            queue_depth: default_queue_depth(),
            queue_timeout: default_queue_timeout(),
        }
    }
}

impl LimitsSection {
    /// The bounds a JSON body is read within.
    pub fn json(&self) -> contract::strict_json::JsonLimits {
        contract::strict_json::JsonLimits {
            max_depth: self.max_json_depth,
            max_string_bytes: self.max_string_bytes,
            max_members: self.max_json_members,
        }
    }
}

/// A provider's `limits`: all its calls together, and rules for some of its tools.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderLimits {
    /// Calls of this provider's tools running at once.
    #[serde(
        default,
        deserialize_with = "optional_count::<_, 1>",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_concurrent: Option<u64>,
    /// The timeout of this provider's calls (default: `limits.call_timeout_ms`).
    #[serde(
        default,
        rename = "timeout_ms",
        deserialize_with = "optional_millis::<_, 1>",
        serialize_with = "as_optional_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// Per-tool rules; the first whose `tool` matches a tool's name applies to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolLimit>,
}

/// The limits of the tools whose names match `tool` (a name, or a glob with `*` and `?`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToolLimit {
    #[serde(deserialize_with = "text")]
    pub tool: String,
    /// Calls of one such tool running at once.
    #[serde(
        default,
        deserialize_with = "optional_count::<_, 1>",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_concurrent: Option<u64>,
    #[serde(
        default,
        rename = "timeout_ms",
        deserialize_with = "optional_millis::<_, 1>",
        serialize_with = "as_optional_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// Calls of one such tool per minute per client, on top of `security.rate_limit`.
    #[serde(
        default,
        deserialize_with = "optional_count::<_, 1>",
        skip_serializing_if = "Option::is_none"
    )]
    pub rate_limit: Option<u64>,
}

/// The limits one tool runs under, resolved from its provider's `limits` and the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedToolLimits {
    pub tool_max_concurrent: Option<u64>,
    pub provider_max_concurrent: Option<u64>,
    pub timeout: Duration,
    pub rate_limit: Option<u64>,
}

/// The defaults of a tool of a `cypher` provider (the RAG tools' resource limits): 5 queries
/// at once, 30 s each; and the most a timeout may be set to.
pub struct CypherToolDefaults {
    pub max_concurrent: u64,
    pub timeout: Duration,
    pub max_timeout: Duration,
}

pub const CYPHER_TOOL_DEFAULTS: CypherToolDefaults = CypherToolDefaults {
    max_concurrent: 5,
    timeout: Duration::from_secs(30),
    max_timeout: Duration::from_secs(60),
};

impl ProviderLimits {
    /// The first rule matching `tool`.
    pub fn rule_for(&self, tool: &str) -> Option<&ToolLimit> {
        self.tools.iter().find(|r| wildcard_match(&r.tool, tool))
    }

    /// The limits of `tool`: its rule, else the provider's, else the defaults (the service's
    /// timeout; for a cypher tool, [`CYPHER_TOOL_DEFAULTS`]).
    pub fn resolve(&self, tool: &str, cypher: bool, call_timeout: Duration) -> ResolvedToolLimits {
        let rule = self.rule_for(tool);
        let default_timeout = if cypher {
            CYPHER_TOOL_DEFAULTS.timeout
        } else {
            call_timeout
        };
        ResolvedToolLimits {
            tool_max_concurrent: rule
                .and_then(|r| r.max_concurrent)
                .or(cypher.then_some(CYPHER_TOOL_DEFAULTS.max_concurrent)),
            provider_max_concurrent: self.max_concurrent,
            timeout: rule
                .and_then(|r| r.timeout)
                .or(self.timeout)
                .unwrap_or(default_timeout),
            rate_limit: rule.and_then(|r| r.rate_limit),
        }
    }

    /// For a cypher provider: no timeout above [`CypherToolDefaults::max_timeout`].
    pub fn check_cypher(&self) -> Result<(), CypherLimitError> {
        let max = CYPHER_TOOL_DEFAULTS.max_timeout;
        let too_long = |t: Option<Duration>| t.is_some_and(|t| t > max);
        let max_ms = max.as_millis();
        if too_long(self.timeout) {
            return Err(CypherLimitError::Timeout { max_ms });
        }
        if let Some(rule) = self.tools.iter().find(|r| too_long(r.timeout)) {
            return Err(CypherLimitError::ToolTimeout {
                tool: rule.tool.clone(),
                max_ms,
            });
        }
        Ok(())
    }
}

/// A cypher provider's `limits` giving a query longer than a database should take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CypherLimitError {
    #[error("limits.timeout_ms may be at most {max_ms} for a cypher provider")]
    Timeout { max_ms: u128 },
    #[error("limits.tools '{tool}': timeout_ms may be at most {max_ms} for a cypher provider")]
    ToolTimeout { tool: String, max_ms: u128 },
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters and `?` for
/// one character; anything else matches itself.
pub fn wildcard_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Greedy with one backtrack point: the pattern just past the last `*` seen, and where in
    // the name what follows that `*` is being tried.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                pi += 1;
                star = Some((pi, ni));
            }
            Some(&c) if c == '?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                // The `*` takes one more character, and what follows it is tried from there.
                Some((after_star, tried_from)) => {
                    let tried_from = tried_from + 1;
                    star = Some((after_star, tried_from));
                    (pi, ni) = (after_star, tried_from);
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        for (pattern, name) in [
            ("echo", "echo"),
            ("*", "anything"),
            ("*", ""),
            ("find_*", "find_callers"),
            ("find_*", "find_"),
            ("*_file", "read_file"),
            ("a*b*c", "aXXbYYc"),
            ("a*b*c", "abbbc"),
            ("get-?", "get-x"),
            ("*-*-*", "a-b-c-d"),
        ] {
            assert!(wildcard_match(pattern, name), "{pattern} ~ {name}");
        }
        for (pattern, name) in [
            ("echo", "echo2"),
            ("echo", "ech"),
            ("find_*", "finder"),
            ("*_file", "read_files"),
            ("a*b*c", "aXXbYY"),
            ("get-?", "get-xy"),
            ("?", ""),
        ] {
            assert!(!wildcard_match(pattern, name), "{pattern} !~ {name}");
        }
    }

    /// The defaults docs/configuration.md gives, whether the section is absent or empty.
    #[test]
    fn the_defaults_are_the_documented_ones() {
        let documented = LimitsSection {
            max_body_bytes: 1_048_576,
            max_json_depth: 64,
            max_string_bytes: 262_144,
            max_json_members: 10_000,
            max_header_bytes: 32_768,
            max_headers: 100,
            header_read_timeout: Duration::from_secs(10),
            max_connections: 1024,
            call_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
            max_concurrent_calls: 64,
            queue_depth: 256,
            queue_timeout: Duration::from_secs(10),
        };
        assert_eq!(LimitsSection::default(), documented);
        let empty: LimitsSection = serde_saphyr::from_str("{}").unwrap();
        assert_eq!(empty, documented);
        let json = documented.json();
        assert_eq!(
            (json.max_depth, json.max_string_bytes, json.max_members),
            (64, 262_144, 10_000)
        );
    }

    fn limits(yaml: &str) -> ProviderLimits {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn the_first_matching_rule_wins_then_the_provider_then_the_defaults() {
        let l = limits(
            "max_concurrent: 8\ntimeout_ms: 2000\ntools:\n  - { tool: echo, max_concurrent: 1, rate_limit: 60 }\n  - { tool: 'e*', timeout_ms: 500 }\n",
        );
        let thirty = Duration::from_secs(30);
        let echo = l.resolve("echo", false, thirty);
        assert_eq!(echo.tool_max_concurrent, Some(1));
        assert_eq!(echo.provider_max_concurrent, Some(8));
        // The first rule matched and sets no timeout: the provider's applies, not the second rule's.
        assert_eq!(echo.timeout, Duration::from_millis(2000));
        assert_eq!(echo.rate_limit, Some(60));
        let env = l.resolve("env", false, thirty);
        assert_eq!(env.tool_max_concurrent, None);
        assert_eq!(env.timeout, Duration::from_millis(500));
        let other = ProviderLimits::default().resolve("x", false, thirty);
        assert_eq!(other.timeout, thirty);
        assert_eq!(other.tool_max_concurrent, None);
    }

    #[test]
    fn cypher_tools_default_to_five_at_once_and_thirty_seconds() {
        let resolved = ProviderLimits::default().resolve("q", true, Duration::from_secs(99));
        assert_eq!(resolved.tool_max_concurrent, Some(5));
        assert_eq!(resolved.timeout, Duration::from_secs(30));
        assert!(limits("timeout_ms: 60000\n").check_cypher().is_ok());
        assert!(limits("timeout_ms: 60001\n").check_cypher().is_err());
        let err = limits("tools: [{ tool: q, timeout_ms: 90000 }]\n")
            .check_cypher()
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "limits.tools 'q': timeout_ms may be at most 60000 for a cypher provider"
        );
    }

    #[test]
    fn the_input_bounds_have_defaults_and_ranges() {
        let limits: LimitsSection = serde_saphyr::from_str("{}").unwrap();
        assert_eq!(limits, LimitsSection::default());
        assert_eq!(limits.max_json_depth, 64);
        assert_eq!(limits.header_read_timeout, Duration::from_secs(10));
        let set: LimitsSection = serde_saphyr::from_str(
            "{ max_json_depth: 127, max_string_bytes: 10, max_json_members: 5, max_header_bytes: 2048, max_headers: 20, header_read_timeout_ms: 500, max_connections: 3 }",
        )
        .unwrap();
        assert_eq!(set.json().max_depth, 127);
        assert_eq!(set.json().max_members, 5);
        assert_eq!(set.max_connections, 3);
        for bad in [
            "max_json_depth: 128",
            "max_json_depth: 0",
            "max_string_bytes: 0",
            "max_header_bytes: 100",
            "max_headers: 2",
            "header_read_timeout_ms: 10",
            "max_connections: 0",
        ] {
            assert!(
                serde_saphyr::from_str::<LimitsSection>(&format!("{{ {bad} }}")).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn unknown_and_out_of_range_fields_are_refused() {
        assert!(serde_saphyr::from_str::<ProviderLimits>("max_concurent: 2\n").is_err());
        assert!(serde_saphyr::from_str::<ProviderLimits>("max_concurrent: 0\n").is_err());
        assert!(
            serde_saphyr::from_str::<ProviderLimits>("tools: [{ max_concurrent: 1 }]\n").is_err()
        );
    }
}
