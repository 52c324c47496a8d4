//! The Prometheus series of one service: every handle in one struct ([`ServiceMetrics`]),
//! recorded through small named methods, and rendered in the text exposition format (0.0.4)
//! for `GET /metrics`.
//!
//! Each service has its own registry, so a process running several services (`--config-dir`)
//! shows each service's series on that service's port only; every series also carries the
//! label `service`. What is a state rather than an event (calls in flight, upstream
//! connections and their restarts) is read when scraped, from the same numbers /health reads,
//! so the two cannot disagree and nothing is recorded twice.

use std::collections::{BTreeMap, HashMap};

use contract::ErrorCode;
use prometheus::proto::{self, MetricFamily, MetricType};
use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

use crate::sync::Unpoisoned;

/// Every series name starts with this.
const PREFIX: &str = "mcp_http_gateway";

/// The `Content-Type` of the rendering: the Prometheus text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Tool calls last from milliseconds (a local echo) to the call timeout (60 s at most).
const CALL_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// A dependency check is a ping or `RETURN 1`, bounded by its budget (1 s).
const CHECK_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];

/// What an `outcome` label says of a call that succeeded.
const OK: &str = "ok";

/// An upstream connection as its provider knows it when scraped.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamScrape {
    pub provider: String,
    pub connected: bool,
    pub restarts: u64,
}

/// A provider with a status machine (gRPC), as it is when scraped.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderScrape {
    pub provider: String,
    pub state: contract::ConnectionState,
    /// Events received, by type.
    pub events: Vec<(String, u64)>,
}

/// What is read from the service when scraped.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    pub calls_in_flight: u64,
    pub calls_queued: u64,
    pub upstreams: Vec<UpstreamScrape>,
    pub providers: Vec<ProviderScrape>,
    /// Each tool's statistics as GET /health's `data.tools` reports them.
    pub tools: BTreeMap<String, contract::ToolHealth>,
    /// The link to Redis (`cluster`), when configured.
    pub cluster: Option<ClusterScrape>,
}

/// The link to the Redis that replicas share, as it is when scraped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterScrape {
    pub up: bool,
    pub errors: u64,
    pub dropped_writes: u64,
}

/// The metric handles of one service.
pub struct ServiceMetrics {
    service: String,
    registry: Registry,
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

    /// The text exposition of every series of this service, with `scrape` read just now.
    pub fn render(&self, scrape: &Scrape) -> String {
        let mut families = self.registry.gather();
        families.push(self.family(
            "tool_calls_in_flight",
            "Tool calls running now.",
            MetricType::GAUGE,
            vec![(vec![], scrape.calls_in_flight as f64)],
        ));
        families.push(self.family(
            "tool_calls_queued",
            "Tool calls waiting for admission (limits.queue_depth at most).",
            MetricType::GAUGE,
            vec![(vec![], scrape.calls_queued as f64)],
        ));
        families.extend(self.tool_families(&scrape.tools));
        let upstream = |u: &UpstreamScrape| vec![("provider", u.provider.clone())];
        families.push(
            self.family(
                "upstream_connected",
                "1 while the provider's connection to its upstream (MCP server, gRPC provider) is up, else 0.",
                MetricType::GAUGE,
                scrape
                    .upstreams
                    .iter()
                    .map(|u| (upstream(u), f64::from(u8::from(u.connected))))
                    .collect(),
            ),
        );
        families.push(self.family(
            "upstream_restarts_total",
            "Times the provider reconnected to its upstream (MCP server, gRPC provider) after losing it (a restarted child, for stdio).",
            MetricType::COUNTER,
            scrape
                .upstreams
                .iter()
                .map(|u| (upstream(u), u.restarts as f64))
                .collect(),
        ));
        families.extend(self.provider_families(&scrape.providers));
        if let Some(cluster) = &scrape.cluster {
            families.extend(self.cluster_families(cluster));
        }
        // A family without samples (no MCP provider, no tools) is not valid text: leave it out.
        families.retain(|f| !f.get_metric().is_empty());
        families.sort_by(|a, b| a.name().cmp(b.name()));
        let mut text = String::with_capacity(16 * 1024);
        // Encoding into a String only fails on a family without samples of its type, which
        // the registry never gathers and `family` never builds.
        if let Err(e) = TextEncoder::new().encode_utf8(&families, &mut text) {
            tracing::error!(service = %self.service, "rendering the metrics failed: {e}");
        }
        text
    }

    /// The link to Redis: whether it answers, and what failed or was dropped.
    fn cluster_families(&self, cluster: &ClusterScrape) -> Vec<MetricFamily> {
        vec![
            self.family(
                "cluster_redis_up",
                "1 while the last Redis command of this replica succeeded (cluster.redis_url), else 0.",
                MetricType::GAUGE,
                vec![(vec![], f64::from(u8::from(cluster.up)))],
            ),
            self.family(
                "cluster_redis_errors_total",
                "Redis commands of this replica that failed or timed out (rate limit, usage counts, session records, pings).",
                MetricType::COUNTER,
                vec![(vec![], cluster.errors as f64)],
            ),
            self.family(
                "cluster_writes_dropped_total",
                "Usage counts and session records dropped because 10000 were already waiting for Redis.",
                MetricType::COUNTER,
                vec![(vec![], cluster.dropped_writes as f64)],
            ),
        ]
    }

    /// The status machine of each provider that has one, as GET /health's `data.providers`
    /// says it (one series per state, 1 for the current one), and the events each sent.
    fn provider_families(&self, providers: &[ProviderScrape]) -> Vec<MetricFamily> {
        use contract::ConnectionState;
        let states = providers
            .iter()
            .flat_map(|p| {
                [
                    ConnectionState::Disconnected,
                    ConnectionState::Connected,
                    ConnectionState::Error,
                ]
                .map(|s| {
                    (
                        vec![
                            ("provider", p.provider.clone()),
                            ("state", s.as_str().to_owned()),
                        ],
                        f64::from(u8::from(p.state == s)),
                    )
                })
            })
            .collect();
        let events = providers
            .iter()
            .flat_map(|p| {
                p.events.iter().map(|(kind, n)| {
                    (
                        vec![("provider", p.provider.clone()), ("type", kind.clone())],
                        *n as f64,
                    )
                })
            })
            .collect();
        vec![
            self.family(
                "provider_state",
                "1 for the provider's current connection state (DISCONNECTED, CONNECTED, ERROR), 0 for the others (gRPC providers).",
                MetricType::GAUGE,
                states,
            ),
            self.family(
                "provider_events_total",
                "CloudEvents received from the provider's StreamEvents, by type (`invalid`: failed the CloudEvents 1.0 check; `other`: past 64 distinct types).",
                MetricType::COUNTER,
                events,
            ),
        ]
    }

    /// The per-tool statistics of GET /health (`data.tools`), as gauges labelled by tool: the
    /// same numbers, read when scraped.
    fn tool_families(&self, tools: &BTreeMap<String, contract::ToolHealth>) -> Vec<MetricFamily> {
        let per_tool = |value: &dyn Fn(&contract::ToolHealth) -> Option<f64>| {
            tools
                .iter()
                .filter_map(|(name, t)| Some((vec![("tool", name.clone())], value(t)?)))
                .collect::<Vec<_>>()
        };
        let status = tools
            .iter()
            .flat_map(|(name, t)| {
                let current = serde_json::to_value(t.status).ok();
                ["healthy", "degraded", "unavailable"].map(|s| {
                    let on = current.as_ref().is_some_and(|c| c == s);
                    (
                        vec![("tool", name.clone()), ("status", s.to_owned())],
                        f64::from(u8::from(on)),
                    )
                })
            })
            .collect();
        let seconds = |ms: Option<f64>| ms.map(|ms| ms / 1000.0);
        vec![
            self.family(
                "tool_status",
                "1 for the tool's current status (healthy, degraded, unavailable), 0 for the others.",
                MetricType::GAUGE,
                status,
            ),
            self.family(
                "tool_error_ratio",
                "Failed ÷ all calls of the tool over the last 5 minutes (0 with none).",
                MetricType::GAUGE,
                per_tool(&|t| Some(t.error_rate)),
            ),
            self.family(
                "tool_latency_p50_seconds",
                "The median duration of the tool's recent calls (last 128 within 5 minutes).",
                MetricType::GAUGE,
                per_tool(&|t| seconds(t.p50_ms)),
            ),
            self.family(
                "tool_latency_p95_seconds",
                "The 95th percentile duration of the tool's recent calls.",
                MetricType::GAUGE,
                per_tool(&|t| seconds(t.p95_ms)),
            ),
            self.family(
                "tool_queries_per_minute",
                "Calls of the tool in the last minute.",
                MetricType::GAUGE,
                per_tool(&|t| Some(t.queries_per_minute as f64)),
            ),
            self.family(
                "tool_last_success_timestamp_seconds",
                "When the tool last answered successfully (Unix time).",
                MetricType::GAUGE,
                per_tool(&|t| {
                    let at = chrono::DateTime::parse_from_rfc3339(t.last_success.as_deref()?).ok()?;
                    Some(at.timestamp_millis() as f64 / 1000.0)
                }),
            ),
        ]
    }

    /// A family built when scraped, labelled like the registry's (prefix, `service`).
    fn family(
        &self,
        name: &str,
        help: &str,
        kind: MetricType,
        samples: Vec<(Vec<(&str, String)>, f64)>,
    ) -> MetricFamily {
        let mut family = MetricFamily::default();
        family.set_name(format!("{PREFIX}_{name}"));
        family.set_help(help.to_owned());
        family.set_field_type(kind);
        let metrics = samples
            .into_iter()
            .map(|(labels, value)| {
                let mut pairs: BTreeMap<&str, String> = labels.into_iter().collect();
                pairs.insert("service", self.service.clone());
                let mut metric = proto::Metric::default();
                metric.set_label(
                    pairs
                        .into_iter()
                        .map(|(name, value)| {
                            let mut pair = proto::LabelPair::default();
                            pair.set_name(name.to_owned());
                            pair.set_value(value);
                            pair
                        })
                        .collect(),
                );
                match kind {
                    MetricType::COUNTER => {
                        let mut counter = proto::Counter::default();
                        counter.set_value(value);
                        metric.set_counter(counter);
                    }
                    _ => {
                        let mut gauge = proto::Gauge::default();
                        gauge.set_value(value);
                        metric.set_gauge(gauge);
                    }
                }
                metric
            })
            .collect();
        family.set_metric(metrics);
        family
    }
}

fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric")
}

impl super::Service {
    /// GET /metrics's body: the recorded series and the state read now.
    pub fn metrics_text(&self) -> String {
        let upstreams = self
            .toolset()
            .providers
            .iter()
            .filter_map(|p| {
                let connection = p.connection()?;
                Some(UpstreamScrape {
                    provider: p.name().to_owned(),
                    connected: connection.connected,
                    restarts: connection.restarts,
                })
            })
            .collect();
        let providers = self
            .toolset()
            .providers
            .iter()
            .filter_map(|p| {
                Some(ProviderScrape {
                    provider: p.name().to_owned(),
                    state: p.connection_state()?.state,
                    events: p.events_received(),
                })
            })
            .collect();
        let scrape = Scrape {
            calls_in_flight: self.active_calls.load(std::sync::atomic::Ordering::Acquire),
            calls_queued: self.admission.waiting(),
            upstreams,
            providers,
            tools: self.health().tools,
            cluster: self.cluster.as_ref().map(|c| ClusterScrape {
                up: c.up(),
                errors: c.errors(),
                dropped_writes: c.dropped_writes(),
            }),
        };
        self.metrics.render(&scrape)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A sample line's name and labels, in any label order.
    fn parse(series: &str) -> (String, BTreeMap<String, String>) {
        let Some((name, rest)) = series.split_once('{') else {
            return (series.to_owned(), BTreeMap::new());
        };
        let mut labels = BTreeMap::new();
        let mut chars = rest.chars();
        loop {
            let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
            if key.is_empty() || key == "}" {
                break;
            }
            assert_eq!(chars.next(), Some('"'), "{series}");
            let mut value = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.push(chars.next().unwrap()),
                    '"' => break,
                    c => value.push(c),
                }
            }
            labels.insert(key.trim_start_matches(',').to_owned(), value);
        }
        (name.to_owned(), labels)
    }

    /// The value of the sample `series` (labels in any order), if rendered.
    fn sample(text: &str, series: &str) -> Option<f64> {
        let wanted = parse(series);
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .find_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                (parse(series) == wanted).then(|| value.parse().ok())?
            })
    }

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

    #[test]
    fn state_read_when_scraped_is_rendered_with_the_service_label() {
        let scrape = Scrape {
            calls_in_flight: 3,
            calls_queued: 2,
            tools: BTreeMap::from([(
                "echo".to_owned(),
                contract::ToolHealth {
                    status: contract::ToolStatus::Degraded,
                    calls: 8,
                    error_rate: 0.25,
                    last_success: Some("2026-01-01T00:00:01.500Z".into()),
                    last_error: None,
                    p50_ms: Some(2.0),
                    p95_ms: None,
                    queries_per_minute: 8,
                },
            )]),
            upstreams: vec![
                UpstreamScrape {
                    provider: "up".into(),
                    connected: true,
                    restarts: 2,
                },
                UpstreamScrape {
                    provider: "down".into(),
                    connected: false,
                    restarts: 0,
                },
            ],
            providers: vec![ProviderScrape {
                provider: "hello".into(),
                state: contract::ConnectionState::Error,
                events: vec![("provider.tool.executed".into(), 3)],
            }],
            cluster: Some(ClusterScrape {
                up: false,
                errors: 4,
                dropped_writes: 1,
            }),
        };
        let text = ServiceMetrics::new("s").render(&scrape);
        for (series, value) in [
            ("mcp_http_gateway_cluster_redis_up{service=\"s\"}", 0.0),
            (
                "mcp_http_gateway_cluster_redis_errors_total{service=\"s\"}",
                4.0,
            ),
            (
                "mcp_http_gateway_cluster_writes_dropped_total{service=\"s\"}",
                1.0,
            ),
            ("mcp_http_gateway_tool_calls_in_flight{service=\"s\"}", 3.0),
            ("mcp_http_gateway_tool_calls_queued{service=\"s\"}", 2.0),
            (
                "mcp_http_gateway_tool_status{service=\"s\",status=\"degraded\",tool=\"echo\"}",
                1.0,
            ),
            (
                "mcp_http_gateway_tool_status{service=\"s\",status=\"healthy\",tool=\"echo\"}",
                0.0,
            ),
            (
                "mcp_http_gateway_tool_error_ratio{service=\"s\",tool=\"echo\"}",
                0.25,
            ),
            (
                "mcp_http_gateway_tool_latency_p50_seconds{service=\"s\",tool=\"echo\"}",
                0.002,
            ),
            (
                "mcp_http_gateway_tool_queries_per_minute{service=\"s\",tool=\"echo\"}",
                8.0,
            ),
            (
                "mcp_http_gateway_tool_last_success_timestamp_seconds{service=\"s\",tool=\"echo\"}",
                1767225601.5,
            ),
            (
                "mcp_http_gateway_upstream_connected{provider=\"up\",service=\"s\"}",
                1.0,
            ),
            (
                "mcp_http_gateway_upstream_connected{provider=\"down\",service=\"s\"}",
                0.0,
            ),
            (
                "mcp_http_gateway_upstream_restarts_total{provider=\"up\",service=\"s\"}",
                2.0,
            ),
            (
                "mcp_http_gateway_provider_state{provider=\"hello\",service=\"s\",state=\"ERROR\"}",
                1.0,
            ),
            (
                "mcp_http_gateway_provider_state{provider=\"hello\",service=\"s\",state=\"CONNECTED\"}",
                0.0,
            ),
            (
                "mcp_http_gateway_provider_events_total{provider=\"hello\",service=\"s\",type=\"provider.tool.executed\"}",
                3.0,
            ),
        ] {
            assert_eq!(sample(&text, series), Some(value), "{series}:\n{text}");
        }
        assert!(text.contains("# TYPE mcp_http_gateway_upstream_restarts_total counter\n"));
    }

    #[test]
    fn each_service_renders_only_its_own_series() {
        let a = ServiceMetrics::new("a");
        let b = ServiceMetrics::new("b");
        a.tools_installed(&[("only_a".into(), "p".into())]);
        a.rate_limited();
        let text = b.render(&Scrape::default());
        assert!(!text.contains("only_a"), "{text}");
        assert!(!text.contains("service=\"a\""), "{text}");
        assert_eq!(
            sample(&text, "mcp_http_gateway_rate_limited_total{service=\"b\"}"),
            Some(0.0)
        );
    }

    #[test]
    fn the_content_type_is_the_contracts() {
        assert!(CONTENT_TYPE.starts_with(contract::openapi::METRICS_MEDIA_TYPE));
    }

    #[test]
    fn label_values_are_escaped() {
        let metrics = ServiceMetrics::new("s");
        metrics.tools_installed(&[("we\"ird\\name".into(), "p".into())]);
        let text = metrics.render(&Scrape::default());
        assert!(text.contains(r#"tool="we\"ird\\name""#), "{text}");
    }
}
