//! GET /status/data's report: what the status page shows a person, made from what the
//! service already knows ([`Service::health`] for the service, its dependencies, providers
//! and cluster; the tool statistics; the [`super::timeline`]), and the loop that samples the
//! timeline.
//!
//! The report holds no argument value, no error message and no secret: a tool's last failure
//! is its time, its code and the request id to look it up in the log by.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use contract::{StatusFailure, StatusReport, StatusTool};

use super::Service;
use super::timeline::{Reading, ToolCounts};

impl Service {
    /// The report of GET /status/data: no I/O, no waiting.
    pub fn status_report(&self) -> StatusReport {
        let health = self.health();
        let toolset = self.toolset();
        let stats = self.stats.snapshot();
        let tools = health
            .tools
            .iter()
            .map(|(name, tool)| StatusTool {
                name: name.clone(),
                provider: toolset
                    .registry
                    .get(name)
                    .map(|t| t.provider.name().to_owned())
                    .unwrap_or_default(),
                status: tool.status,
                calls: tool.calls,
                error_rate: tool.error_rate,
                p50_ms: tool.p50_ms,
                p95_ms: tool.p95_ms,
                last_error: stats
                    .get(name)
                    .and_then(|s| s.last_error.as_ref())
                    .map(|last| StatusFailure {
                        at: crate::clock::format(last.at),
                        code: last.code,
                        request_id: last.request_id.clone(),
                    }),
            })
            .collect();
        StatusReport {
            service: health.service,
            version: health.version,
            state: health.state,
            status: health.status,
            uptime_seconds: health.uptime_seconds,
            generated_at: crate::clock::timestamp(),
            active_calls: health.active_calls,
            queued_calls: health.queued_calls,
            dependencies: health.dependencies,
            providers: health.providers,
            cluster: health.cluster,
            tool_count: health.tool_count,
            tools,
            timeline: self.timeline.report(),
        }
    }

    /// What the timeline samples now: each listed tool's counts, the queue, the calls running,
    /// and every refusal so far (admission, 429, open circuits).
    fn reading(&self) -> Reading {
        let toolset = self.toolset();
        let stats = self.stats.snapshot();
        let tools = toolset
            .registry
            .tools()
            .iter()
            .map(|tool| {
                let counts = stats
                    .get(&tool.name)
                    .map(|s| ToolCounts {
                        calls: s.calls,
                        failures: s.failures,
                        p95_ms: s.p95_ms,
                    })
                    .unwrap_or_default();
                (tool.name.clone(), counts)
            })
            .collect();
        let circuit_refused: u64 = self
            .resilience
            .all()
            .iter()
            .map(|r| r.breaker.report().refused)
            .sum();
        Reading {
            at: chrono::Utc::now().timestamp(),
            queue_depth: self.admission.waiting(),
            active_calls: self.active_calls.load(Ordering::Acquire),
            refusals: self.metrics.refusals() + circuit_refused,
            tools,
        }
    }

    /// Samples the timeline now (the baseline), then every `monitoring.status_interval_ms`,
    /// until the service drains.
    pub(super) async fn sample_timeline(self: Arc<Self>) {
        let mut every = tokio::time::interval(self.timeline.interval());
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => self.timeline.record(self.reading()),
                _ = self.drain.cancelled() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use contract::ErrorCode;

    use super::*;
    use crate::service::unit_service;

    /// A started service with one `http` tool, `boom`, whose upstream fails with a message
    /// that must not reach the report.
    async fn failing_service() -> Arc<Service> {
        let routes = axum::Router::new()
            .route("/health", axum::routing::get(|| async { "ok" }))
            .route(
                "/boom",
                axum::routing::get(|| async {
                    (
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        "password=hunter2 refused",
                    )
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, routes).await });
        let service = unit_service(&format!(
            "dependencies:
  up: {{ kind: http, base_url: \"http://127.0.0.1:{port}\", health_path: /health }}
providers:
  - name: api
    kind: http
    dependency: up
    tools:
      - {{ name: boom, description: fails, input_schema: {{ type: object }}, path: /boom }}
"
        ));
        service.start().await.unwrap();
        service
    }

    #[tokio::test]
    async fn the_report_names_a_failure_by_code_and_request_id_never_by_message() {
        let service = failing_service().await;
        let failed = service
            .call_tool(crate::service::CallRequest {
                tool: "boom",
                arguments: crate::provider::JsonObject::new(),
                request_id: "req-7",
                client: &crate::service::client::Client::unknown(),
                trace: &crate::telemetry::TraceContext::detached(),
                progress: None,
                caller: None,
            })
            .await
            .unwrap_err();
        assert_eq!(failed.code, ErrorCode::ExecutionError);
        // /health keeps the message; the status page does not.
        let health = serde_json::to_string(&service.health()).unwrap();
        assert!(health.contains("hunter2"), "{health}");
        let report = service.status_report();
        let text = serde_json::to_string(&report).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        let json = serde_json::to_value(&report).unwrap();
        let tool = &json["tools"][0];
        assert_eq!(tool["name"], "boom");
        assert_eq!(tool["provider"], "api");
        assert_eq!(tool["calls"], 1);
        let last = tool["last_error"].as_object().unwrap();
        assert_eq!(
            last.keys().collect::<Vec<_>>(),
            ["at", "code", "request_id"]
        );
        assert_eq!(last["request_id"], "req-7");
        assert_eq!(last["code"], "EXECUTION_ERROR");
        assert_eq!(json["service"], "unit");
        assert_eq!(json["cluster"], serde_json::Value::Null, "null when alone");
        assert!(json["dependencies"]["up"].is_object());
        assert!(json["providers"]["api"].is_object());
    }

    #[tokio::test(start_paused = true)]
    async fn the_sampler_takes_a_baseline_then_one_sample_per_interval_until_drained() {
        let service = unit_service("monitoring: { status_interval_ms: 1000 }\n");
        assert_eq!(service.timeline.interval(), Duration::from_secs(1));
        let sampler = tokio::spawn(service.clone().sample_timeline());
        // Past the baseline (taken at once), before the first sample.
        tokio::time::sleep(Duration::from_millis(500)).await;
        service.metrics.rate_limited();
        tokio::time::sleep(Duration::from_millis(2000)).await;
        let report = service.status_report();
        assert_eq!(report.timeline.t.len(), 2, "{:?}", report.timeline);
        assert_eq!(report.timeline.interval_seconds, 1.0);
        assert_eq!(report.timeline.refusals_per_s.iter().sum::<f64>(), 1.0);
        service.drain().cancel();
        sampler.await.unwrap();
    }
}
