//! What is read from the service when scraped (calls in flight and queued, upstream
//! connections, provider states and events, per-tool statistics, the link to Redis): a state,
//! not an event, so it is read from the same numbers /health reads rather than recorded.

use std::collections::BTreeMap;

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
    /// Each running provider's breaker, retries and shared results (`resilience`).
    pub resilience: Vec<ResilienceScrape>,
}

/// One provider's containment of failures, as /health reports it, and its pool's ejections.
#[derive(Debug, Clone, PartialEq)]
pub struct ResilienceScrape {
    pub provider: String,
    pub report: contract::ResilienceReport,
    /// Times a child of its pool was left out of rotation (0 without a pool).
    pub ejections: u64,
}

/// The link to the Redis that replicas share, as it is when scraped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterScrape {
    pub up: bool,
    pub errors: u64,
    pub dropped_writes: u64,
}

impl crate::service::Service {
    /// GET /metrics's body: the recorded series and the state read now.
    pub fn metrics_text(&self) -> String {
        let reports: Vec<(String, crate::provider::ProviderReport)> = self
            .toolset()
            .providers
            .iter()
            .map(|p| (p.name().to_owned(), p.report()))
            .collect();
        let upstreams = reports
            .iter()
            .filter_map(|(provider, report)| {
                let connection = report.connection?;
                Some(UpstreamScrape {
                    provider: provider.clone(),
                    connected: connection.connected,
                    restarts: connection.restarts,
                })
            })
            .collect();
        let resilience = reports
            .iter()
            .filter_map(|(provider, report)| {
                Some(ResilienceScrape {
                    provider: provider.clone(),
                    report: self.resilience.get(provider)?.report(),
                    ejections: report.instances.iter().map(|i| i.ejections).sum::<u64>()
                        + report.endpoints.iter().map(|e| e.ejections).sum::<u64>(),
                })
            })
            .collect();
        let providers = reports
            .into_iter()
            .filter_map(|(provider, report)| {
                Some(ProviderScrape {
                    provider,
                    state: report.state?.state,
                    events: report.events,
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
            resilience,
        };
        self.metrics.render(&scrape)
    }
}
