//! The text exposition (format 0.0.4) of one service: the registry's series, and the families
//! built from the state read when scraped, each labelled like the registry's.

use std::collections::BTreeMap;

use prometheus::TextEncoder;
use prometheus::proto::{self, MetricFamily, MetricType};

use super::PREFIX;
use super::scrape::{ClusterScrape, ProviderScrape, ResilienceScrape, Scrape, UpstreamScrape};
use super::series::ServiceMetrics;

impl ServiceMetrics {
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
        families.extend(self.resilience_families(&scrape.resilience));
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

    /// Each provider's breaker, retries, hedges, shared results and pool ejections.
    fn resilience_families(&self, providers: &[ResilienceScrape]) -> Vec<MetricFamily> {
        use contract::CircuitState;
        let by = |p: &ResilienceScrape| vec![("provider", p.provider.clone())];
        let counter = |name: &str, help: &str, value: fn(&ResilienceScrape) -> u64| {
            self.family(
                name,
                help,
                MetricType::COUNTER,
                providers.iter().map(|p| (by(p), value(p) as f64)).collect(),
            )
        };
        let states = providers
            .iter()
            .flat_map(|p| {
                [
                    (CircuitState::Closed, "closed"),
                    (CircuitState::Open, "open"),
                    (CircuitState::HalfOpen, "half_open"),
                ]
                .map(|(s, name)| {
                    (
                        vec![("provider", p.provider.clone()), ("state", name.to_owned())],
                        f64::from(u8::from(p.report.circuit == s)),
                    )
                })
            })
            .collect();
        let cache = providers
            .iter()
            .flat_map(|p| {
                let r = &p.report;
                [
                    ("hit", r.cache_hits),
                    ("coalesced", r.cache_coalesced),
                    ("miss", r.cache_misses),
                ]
                .map(|(result, n)| {
                    (
                        vec![
                            ("provider", p.provider.clone()),
                            ("result", result.to_owned()),
                        ],
                        n as f64,
                    )
                })
            })
            .collect();
        vec![
            self.family(
                "circuit_state",
                "1 for the provider's circuit breaker state (closed, open, half_open), 0 for the others.",
                MetricType::GAUGE,
                states,
            ),
            counter(
                "circuit_opened_total",
                "Times the provider's circuit opened.",
                |p| p.report.circuit_opened,
            ),
            counter(
                "circuit_refused_total",
                "Calls refused at once by the provider's open circuit (503 SERVICE_UNAVAILABLE).",
                |p| p.report.circuit_refused,
            ),
            counter(
                "retries_total",
                "Retries sent after a failure that left an idempotent tool unrun.",
                |p| p.report.retries,
            ),
            counter(
                "hedges_total",
                "Second attempts sent beside a slow read-only call.",
                |p| p.report.hedges,
            ),
            counter(
                "retry_budget_exhausted_total",
                "Retries and hedges not sent because the provider's retry budget was spent.",
                |p| p.report.retry_budget_exhausted,
            ),
            self.family(
                "cache_results_total",
                "Read-only calls by what answered them: a kept result (hit), an identical call in flight (coalesced), the upstream (miss).",
                MetricType::COUNTER,
                cache,
            ),
            self.family(
                "cache_entries",
                "Read-only results kept now.",
                MetricType::GAUGE,
                providers
                    .iter()
                    .map(|p| (by(p), p.report.cache_entries as f64))
                    .collect(),
            ),
            counter(
                "pool_ejections_total",
                "Times a child of the provider's pool, or an endpoint of its HTTP API, was left out of rotation as an outlier.",
                |p| p.ejections,
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

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::*;

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
                    top_callers: Vec::new(),
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
            resilience: vec![ResilienceScrape {
                provider: "api".into(),
                report: contract::ResilienceReport {
                    circuit: contract::CircuitState::HalfOpen,
                    circuit_since: "2026-01-01T00:00:00.000Z".into(),
                    retry_after_seconds: None,
                    circuit_reason: None,
                    circuit_opened: 2,
                    circuit_refused: 7,
                    retries: 5,
                    hedges: 1,
                    retry_budget_exhausted: 3,
                    cache_hits: 11,
                    cache_coalesced: 12,
                    cache_misses: 13,
                    cache_entries: 4,
                    cache_bytes: 400,
                },
                ejections: 6,
            }],
        };
        let text = ServiceMetrics::new("s").render(&scrape);
        for (series, value) in [
            (
                "mcp_http_gateway_circuit_state{provider=\"api\",service=\"s\",state=\"half_open\"}",
                1.0,
            ),
            (
                "mcp_http_gateway_circuit_state{provider=\"api\",service=\"s\",state=\"open\"}",
                0.0,
            ),
            (
                "mcp_http_gateway_circuit_opened_total{provider=\"api\",service=\"s\"}",
                2.0,
            ),
            (
                "mcp_http_gateway_circuit_refused_total{provider=\"api\",service=\"s\"}",
                7.0,
            ),
            (
                "mcp_http_gateway_retries_total{provider=\"api\",service=\"s\"}",
                5.0,
            ),
            (
                "mcp_http_gateway_hedges_total{provider=\"api\",service=\"s\"}",
                1.0,
            ),
            (
                "mcp_http_gateway_retry_budget_exhausted_total{provider=\"api\",service=\"s\"}",
                3.0,
            ),
            (
                "mcp_http_gateway_cache_results_total{provider=\"api\",result=\"coalesced\",service=\"s\"}",
                12.0,
            ),
            (
                "mcp_http_gateway_cache_entries{provider=\"api\",service=\"s\"}",
                4.0,
            ),
            (
                "mcp_http_gateway_pool_ejections_total{provider=\"api\",service=\"s\"}",
                6.0,
            ),
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
    fn label_values_are_escaped() {
        let metrics = ServiceMetrics::new("s");
        metrics.tools_installed(&[("we\"ird\\name".into(), "p".into())]);
        let text = metrics.render(&Scrape::default());
        assert!(text.contains(r#"tool="we\"ird\\name""#), "{text}");
    }
}
