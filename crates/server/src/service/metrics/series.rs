//! The registry of one service's series and the methods that record events into it (requests,
//! calls, admission, rate limits, API keys, dependency checks, MCP sessions, the tool set).

use std::collections::HashMap;

use contract::ErrorCode;
use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
};

use super::PREFIX;
use crate::sync::Unpoisoned;

/// Tool calls last from milliseconds (a local echo) to the call timeout (60 s at most).
const CALL_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// A dependency check is a ping or `RETURN 1`, bounded by its budget (1 s).
const CHECK_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];

/// What an `outcome` label says of a call that succeeded.
const OK: &str = "ok";

/// The metric handles of one service.
pub struct ServiceMetrics {
    pub(super) service: String,
    pub(super) registry: Registry,
    requests: IntCounterVec,
    calls: IntCounterVec,
    call_duration: HistogramVec,
    timeouts: IntCounterVec,
    admission_rejects: IntCounterVec,
    rate_limited: IntCounter,
    key_requests: IntCounterVec,
    check_duration: HistogramVec,
    dependency_up: IntGaugeVec,
    sessions: IntGaugeVec,
    sessions_opened: IntCounterVec,
    sessions_ended_early: IntCounterVec,
    client_refusals: IntCounterVec,
    top_client_sessions: prometheus::IntGauge,
    /// The (tool, provider) pairs whose series exist, so a tool that goes away takes its
    /// series with it.
    tools: std::sync::Mutex<Vec<(String, String)>>,
}

impl ServiceMetrics {
    pub fn new(service: &str) -> ServiceMetrics {
        let labels = HashMap::from([("service".to_owned(), service.to_owned())]);
        let registry = Registry::new_custom(Some(PREFIX.to_owned()), Some(labels))
            .expect("the prefix is not empty");
        let build = IntGaugeVec::new(
            Opts::new(
                "build_info",
                "The gateway's version; always 1 (join on it for the version).",
            ),
            &["version"],
        )
        .expect("valid metric");
        build.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        let metrics = ServiceMetrics {
            service: service.to_owned(),
            requests: counter_vec(
                "http_requests_total",
                "HTTP requests answered, by route, status and contract error code (none on success).",
                &["route", "status", "code"],
            ),
            calls: counter_vec(
                "tool_calls_total",
                "Tool calls of known tools, by tool, provider and outcome (ok, or the contract error code).",
                &["tool", "provider", "outcome"],
            ),
            call_duration: HistogramVec::new(
                HistogramOpts::new(
                    "tool_call_duration_seconds",
                    "Time a provider took to answer a tool call (failures and timeouts included).",
                )
                .buckets(CALL_BUCKETS.to_vec()),
                &["tool", "provider"],
            )
            .expect("valid metric"),
            timeouts: counter_vec(
                "tool_call_timeouts_total",
                "Tool calls that ran out of time (answered 504 TIMEOUT).",
                &["tool", "provider"],
            ),
            admission_rejects: counter_vec(
                "admission_rejected_total",
                "Tool calls refused by admission control, by the limit that was full (service, provider or tool).",
                &["scope"],
            ),
            rate_limited: IntCounter::new(
                "rate_limited_total",
                "Requests refused with 429 RATE_LIMITED.",
            )
            .expect("valid metric"),
            key_requests: counter_vec(
                "api_key_requests_total",
                "HTTP requests made with each API key, by the key's name (never its value) and contract error code (none on success; FORBIDDEN: a tool outside its scope; RATE_LIMITED).",
                &["key", "code"],
            ),
            check_duration: HistogramVec::new(
                HistogramOpts::new(
                    "dependency_check_duration_seconds",
                    "Time one dependency check took (an MCP ping, a Bolt RETURN 1, an HTTP probe).",
                )
                .buckets(CHECK_BUCKETS.to_vec()),
                &["dependency"],
            )
            .expect("valid metric"),
            dependency_up: IntGaugeVec::new(
                Opts::new(
                    "dependency_up",
                    "1 when the last check found the dependency connected, else 0.",
                ),
                &["dependency"],
            )
            .expect("valid metric"),
            sessions: IntGaugeVec::new(
                Opts::new("mcp_sessions", "Live MCP client sessions, by transport."),
                &["transport"],
            )
            .expect("valid metric"),
            sessions_opened: counter_vec(
                "mcp_sessions_opened_total",
                "MCP client sessions opened, by transport.",
                &["transport"],
            ),
            sessions_ended_early: counter_vec(
                "mcp_sessions_ended_early_total",
                "MCP sessions the gateway ended before their TTL: evicted to make room in a full table, or unused after the handshake.",
                &["reason"],
            ),
            client_refusals: counter_vec(
                "mcp_client_refusals_total",
                "MCP requests refused by a bound on one client (sessions_per_client, streams_per_client) or on all (sessions).",
                &["bound"],
            ),
            top_client_sessions: prometheus::IntGauge::new(
                "mcp_top_client_sessions",
                "Live MCP sessions of the client holding the most (per-client detail: /health).",
            )
            .expect("valid metric"),
            tools: std::sync::Mutex::new(Vec::new()),
            registry,
        };
        let collectors: Vec<Box<dyn prometheus::core::Collector>> = vec![
            Box::new(build),
            Box::new(metrics.requests.clone()),
            Box::new(metrics.calls.clone()),
            Box::new(metrics.call_duration.clone()),
            Box::new(metrics.timeouts.clone()),
            Box::new(metrics.admission_rejects.clone()),
            Box::new(metrics.rate_limited.clone()),
            Box::new(metrics.key_requests.clone()),
            Box::new(metrics.check_duration.clone()),
            Box::new(metrics.dependency_up.clone()),
            Box::new(metrics.sessions.clone()),
            Box::new(metrics.sessions_opened.clone()),
            Box::new(metrics.sessions_ended_early.clone()),
            Box::new(metrics.client_refusals.clone()),
            Box::new(metrics.top_client_sessions.clone()),
        ];
        for collector in collectors {
            metrics
                .registry
                .register(collector)
                .expect("each series is registered once");
        }
        for transport in ["streamable-http", "sse"] {
            metrics.sessions.with_label_values(&[transport]);
            metrics.sessions_opened.with_label_values(&[transport]);
        }
        for scope in ["service", "provider", "tool"] {
            metrics.admission_rejects.with_label_values(&[scope]);
        }
        for reason in ["evicted", "unused"] {
            metrics.sessions_ended_early.with_label_values(&[reason]);
        }
        for bound in ["sessions_per_client", "sessions", "streams_per_client"] {
            metrics.client_refusals.with_label_values(&[bound]);
        }
        metrics
    }

    /// One HTTP request was answered (`code`: the contract's error code, if it failed).
    pub fn request(&self, route: &str, status: &str, code: Option<ErrorCode>) {
        let code = code.map_or("none", ErrorCode::as_str);
        self.requests
            .with_label_values(&[route, status, code])
            .inc();
    }

    /// A call of a known tool ended; `ran` is how long its provider took, when it got that far
    /// (invalid arguments never reach it).
    pub fn call_finished(
        &self,
        tool: &str,
        provider: &str,
        ran: Option<std::time::Duration>,
        failure: Option<ErrorCode>,
    ) {
        let outcome = failure.map_or(OK, ErrorCode::as_str);
        self.calls
            .with_label_values(&[tool, provider, outcome])
            .inc();
        if let Some(ran) = ran {
            self.call_duration
                .with_label_values(&[tool, provider])
                .observe(ran.as_secs_f64());
        }
        if failure == Some(ErrorCode::Timeout) {
            self.timeouts.with_label_values(&[tool, provider]).inc();
        }
    }

    /// Admission control refused a call; `scope` is the limit that was full: `service`,
    /// `provider` or `tool`.
    pub fn admission_rejected(&self, scope: &str) {
        self.admission_rejects.with_label_values(&[scope]).inc();
    }

    /// A request was refused with 429.
    pub fn rate_limited(&self) {
        self.rate_limited.inc();
    }

    /// Refusals counted so far: calls admission control refused (every scope) and requests
    /// refused with 429 (GET /status's timeline adds the calls an open circuit refused).
    pub fn refusals(&self) -> u64 {
        use prometheus::core::Collector;
        let admission: f64 = self
            .admission_rejects
            .collect()
            .iter()
            .flat_map(|family| family.get_metric())
            .map(|metric| metric.get_counter().get_value())
            .sum();
        admission as u64 + self.rate_limited.get()
    }

    /// A request made with the API key named `key` was answered (`code`, if it failed).
    pub fn key_request(&self, key: &str, code: Option<ErrorCode>) {
        let code = code.map_or("none", ErrorCode::as_str);
        self.key_requests.with_label_values(&[key, code]).inc();
    }

    /// One dependency check finished.
    pub fn dependency_checked(&self, dependency: &str, took: std::time::Duration, connected: bool) {
        self.check_duration
            .with_label_values(&[dependency])
            .observe(took.as_secs_f64());
        self.dependency_up
            .with_label_values(&[dependency])
            .set(i64::from(connected));
    }

    /// An MCP client session was opened on `transport` (`streamable-http` or `sse`).
    pub fn session_opened(&self, transport: &str) {
        self.sessions_opened.with_label_values(&[transport]).inc();
        self.sessions.with_label_values(&[transport]).inc();
    }

    /// The gateway ended a session early: `evicted` to make room, or `unused`.
    pub fn session_ended_early(&self, reason: &str) {
        self.sessions_ended_early.with_label_values(&[reason]).inc();
    }

    /// A session was refused by `bound` (`sessions_per_client` or `sessions`).
    pub fn client_refused(&self, bound: &str) {
        self.client_refusals.with_label_values(&[bound]).inc();
    }

    /// The live sessions of the client holding the most.
    pub fn set_top_client_sessions(&self, sessions: u64) {
        self.top_client_sessions
            .set(i64::try_from(sessions).unwrap_or(i64::MAX));
    }

    /// Live MCP sessions, both transports.
    pub fn live_sessions(&self) -> u64 {
        ["streamable-http", "sse"]
            .iter()
            .map(|t| self.sessions.with_label_values(&[*t]).get().max(0) as u64)
            .sum()
    }

    /// A live MCP client session ended (closed or expired).
    pub fn session_ended(&self, transport: &str) {
        self.sessions.with_label_values(&[transport]).dec();
    }

    /// The tool set changed: every tool's series start at zero (so `rate()` works from the
    /// first call), and the series of tools no longer served go away.
    pub fn tools_installed(&self, tools: &[(String, String)]) {
        let mut known = self.tools.write_unpoisoned();
        let served: std::collections::HashSet<&(String, String)> = tools.iter().collect();
        for pair in known.iter() {
            if served.contains(pair) {
                continue;
            }
            let (tool, provider) = pair;
            let _ = self.call_duration.remove_label_values(&[tool, provider]);
            let _ = self.timeouts.remove_label_values(&[tool, provider]);
            for outcome in std::iter::once(OK).chain(ErrorCode::ALL.iter().map(|c| c.as_str())) {
                let _ = self.calls.remove_label_values(&[tool, provider, outcome]);
            }
        }
        for (tool, provider) in tools {
            self.call_duration.with_label_values(&[tool, provider]);
            self.timeouts.with_label_values(&[tool, provider]);
            self.calls.with_label_values(&[tool, provider, OK]);
        }
        *known = tools.to_vec();
    }
}

fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::tests::sample;
    use super::*;
    use crate::service::metrics::Scrape;

    #[test]
    fn build_info_and_help_and_types_are_rendered() {
        let text = ServiceMetrics::new("docs").render(&Scrape::default());
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(
            sample(
                &text,
                &format!("mcp_http_gateway_build_info{{service=\"docs\",version=\"{version}\"}}")
            ),
            Some(1.0),
            "{text}"
        );
        for (name, kind) in [
            ("mcp_http_gateway_tool_calls_in_flight", "gauge"),
            ("mcp_http_gateway_tool_calls_queued", "gauge"),
            ("mcp_http_gateway_mcp_sessions", "gauge"),
            ("mcp_http_gateway_rate_limited_total", "counter"),
        ] {
            assert!(
                text.contains(&format!("# TYPE {name} {kind}\n")),
                "{name}:\n{text}"
            );
            assert!(text.contains(&format!("# HELP {name} ")), "{name}");
        }
        assert_eq!(
            sample(
                &text,
                "mcp_http_gateway_admission_rejected_total{scope=\"provider\",service=\"docs\"}"
            ),
            Some(0.0),
            "every scope starts at zero"
        );
    }

    #[test]
    fn calls_count_by_tool_provider_and_outcome() {
        let metrics = ServiceMetrics::new("s");
        metrics.tools_installed(&[("echo".into(), "everything".into())]);
        let fresh = metrics.render(&Scrape::default());
        let ok = "mcp_http_gateway_tool_calls_total{outcome=\"ok\",provider=\"everything\",service=\"s\",tool=\"echo\"}";
        assert_eq!(sample(&fresh, ok), Some(0.0), "{fresh}");
        metrics.call_finished("echo", "everything", Some(Duration::from_millis(3)), None);
        metrics.call_finished("echo", "everything", Some(Duration::from_millis(30)), None);
        metrics.call_finished(
            "echo",
            "everything",
            Some(Duration::from_secs(2)),
            Some(ErrorCode::Timeout),
        );
        metrics.call_finished(
            "echo",
            "everything",
            None,
            Some(ErrorCode::InvalidArguments),
        );
        let text = metrics.render(&Scrape::default());
        assert!(text.contains("# TYPE mcp_http_gateway_tool_call_duration_seconds histogram\n"));
        assert_eq!(sample(&text, ok), Some(2.0), "{text}");
        let labels = "provider=\"everything\",service=\"s\",tool=\"echo\"";
        assert_eq!(
            sample(
                &text,
                &format!("mcp_http_gateway_tool_calls_total{{outcome=\"TIMEOUT\",{labels}}}")
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                &format!("mcp_http_gateway_tool_call_timeouts_total{{{labels}}}")
            ),
            Some(1.0)
        );
        // Invalid arguments never reached the provider: counted, not timed.
        assert_eq!(
            sample(
                &text,
                &format!("mcp_http_gateway_tool_call_duration_seconds_count{{{labels}}}")
            ),
            Some(3.0)
        );
        assert_eq!(
            sample(
                &text,
                &format!(
                    "mcp_http_gateway_tool_call_duration_seconds_bucket{{{labels},le=\"0.005\"}}"
                )
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                &format!(
                    "mcp_http_gateway_tool_call_duration_seconds_bucket{{{labels},le=\"+Inf\"}}"
                )
            ),
            Some(3.0)
        );
    }

    #[test]
    fn a_tool_that_goes_away_takes_its_series_along() {
        let metrics = ServiceMetrics::new("s");
        metrics.tools_installed(&[("a".into(), "p".into()), ("b".into(), "p".into())]);
        metrics.call_finished(
            "b",
            "p",
            Some(Duration::from_millis(1)),
            Some(ErrorCode::ExecutionError),
        );
        metrics.tools_installed(&[("a".into(), "p".into())]);
        let text = metrics.render(&Scrape::default());
        assert!(text.contains("tool=\"a\""), "{text}");
        assert!(!text.contains("tool=\"b\""), "{text}");
    }

    #[test]
    fn requests_queue_rejects_and_sessions() {
        let metrics = ServiceMetrics::new("s");
        metrics.request("/tools/{name}", "504", Some(ErrorCode::Timeout));
        metrics.request("/tools", "200", None);
        metrics.request("/tools", "200", None);
        metrics.admission_rejected("tool");
        metrics.rate_limited();
        assert_eq!(metrics.refusals(), 2, "the refusals the status page charts");
        metrics.key_request("ci", None);
        metrics.key_request("ci", Some(ErrorCode::Forbidden));
        metrics.key_request("ci", Some(ErrorCode::Forbidden));
        metrics.session_opened("sse");
        metrics.session_opened("sse");
        metrics.session_ended("sse");
        metrics.dependency_checked("db", Duration::from_millis(2), false);
        let text = metrics.render(&Scrape::default());
        for (series, value) in [
            (
                "mcp_http_gateway_http_requests_total{code=\"TIMEOUT\",route=\"/tools/{name}\",service=\"s\",status=\"504\"}",
                1.0,
            ),
            (
                "mcp_http_gateway_http_requests_total{code=\"none\",route=\"/tools\",service=\"s\",status=\"200\"}",
                2.0,
            ),
            (
                "mcp_http_gateway_admission_rejected_total{scope=\"tool\",service=\"s\"}",
                1.0,
            ),
            ("mcp_http_gateway_rate_limited_total{service=\"s\"}", 1.0),
            (
                "mcp_http_gateway_api_key_requests_total{code=\"FORBIDDEN\",key=\"ci\",service=\"s\"}",
                2.0,
            ),
            (
                "mcp_http_gateway_api_key_requests_total{code=\"none\",key=\"ci\",service=\"s\"}",
                1.0,
            ),
            (
                "mcp_http_gateway_mcp_sessions{service=\"s\",transport=\"sse\"}",
                1.0,
            ),
            (
                "mcp_http_gateway_mcp_sessions{service=\"s\",transport=\"streamable-http\"}",
                0.0,
            ),
            (
                "mcp_http_gateway_mcp_sessions_opened_total{service=\"s\",transport=\"sse\"}",
                2.0,
            ),
            (
                "mcp_http_gateway_dependency_up{dependency=\"db\",service=\"s\"}",
                0.0,
            ),
            (
                "mcp_http_gateway_dependency_check_duration_seconds_count{dependency=\"db\",service=\"s\"}",
                1.0,
            ),
        ] {
            assert_eq!(sample(&text, series), Some(value), "{series}:\n{text}");
        }
    }
}
