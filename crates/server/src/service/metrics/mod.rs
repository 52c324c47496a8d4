//! The Prometheus series of one service: every handle in one struct ([`ServiceMetrics`]),
//! recorded through small named methods, and rendered in the text exposition format (0.0.4)
//! for `GET /metrics`.
//!
//! Each service has its own registry, so a process running several services (`--config-dir`)
//! shows each service's series on that service's port only; every series also carries the
//! label `service`. What is a state rather than an event (calls in flight, upstream
//! connections and their restarts) is read when scraped, from the same numbers /health reads,
//! so the two cannot disagree and nothing is recorded twice.
//!
//! `series.rs` holds the registry and the recording methods, `scrape.rs` what is read from the
//! service when scraped, `render.rs` the text exposition of both.

mod render;
mod scrape;
mod series;

pub use self::scrape::{ClusterScrape, ProviderScrape, Scrape, UpstreamScrape};
pub use self::series::ServiceMetrics;

/// Every series name starts with this.
const PREFIX: &str = "mcp_http_gateway";

/// The `Content-Type` of the rendering: the Prometheus text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Reading the rendered text back, for the tests of each part.
#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

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
    pub(super) fn sample(text: &str, series: &str) -> Option<f64> {
        let wanted = parse(series);
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .find_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                (parse(series) == wanted).then(|| value.parse().ok())?
            })
    }

    #[test]
    fn the_content_type_is_the_contracts() {
        assert!(CONTENT_TYPE.starts_with(contract::openapi::METRICS_MEDIA_TYPE));
    }
}
