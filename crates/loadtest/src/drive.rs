//! Our own load driver, for the phases whose latency is judged (goose is closed-loop only, and
//! times from the moment it sends). `clients` clients, each with one connection of its own:
//! - closed loop: each sends its next request when the last is answered and its think time is
//!   over (none for the overload's callers; 20 ms for the baseline's single client, so that each
//!   request arrives, as in the open loop, at a service that was idle a moment before);
//! - open loop: each sends on a fixed schedule, `rate / clients` requests per second, the
//!   clients staggered so that the total arrives evenly at `rate`. A request's latency runs from
//!   when it was *due* whenever its client was still waiting for the previous answer at that
//!   moment — the delay a slow answer causes to the requests behind it is counted, not omitted
//!   (coordinated omission) — and from its actual send otherwise, so the timer's wake-up slack
//!   (up to a millisecond) is not charged to the service.
//!
//! Latency is to the last byte of the answer. Every request ends one way: answered as it
//! should be, answered wrongly (a failure), refused with 503 + Retry-After (when the run allows
//! it), or lost — a connection reset, a timeout, or a request still unsent when the drain
//! deadline came.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::attack::{PhaseResult, Stats};
use crate::target::{Endpoint, Target, check};

/// How the clients pace their requests.
#[derive(Debug, Clone, Copy)]
pub enum Pace {
    ClosedLoop {
        /// Pause after every answer before the next request.
        think: Duration,
        /// Pause after a refused (503) answer before the next request.
        pause_after_refusal: Duration,
    },
    /// Requests per second, all clients together.
    OpenLoop { rate: f64 },
}

/// One phase for the driver.
#[derive(Debug, Clone)]
pub struct Phase {
    pub name: String,
    pub clients: usize,
    pub pace: Pace,
    pub run_time: Duration,
    /// What the clients send, in turn (a weighted mix repeats an endpoint).
    pub mix: Vec<Endpoint>,
    /// Whether 503 SERVICE_UNAVAILABLE with Retry-After is an allowed answer (the overload run).
    pub refusals_allowed: bool,
    /// A request unanswered after this is lost.
    pub timeout: Duration,
}

#[derive(Debug)]
enum Ending {
    Answered,
    Failed(String),
    Refused,
    Lost(String),
}

struct Record {
    endpoint: Endpoint,
    latency: Duration,
    ending: Ending,
}

/// Runs one phase.
pub async fn run(target: Arc<Target>, phase: &Phase) -> PhaseResult {
    // Clients are made before the clock starts: making one takes milliseconds in a debug
    // build, and a hundred of them would hold up the first sends.
    let clients: Vec<reqwest::Client> = (0..phase.clients)
        .map(|_| {
            reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .timeout(phase.timeout)
                .build()
                .expect("an HTTP client")
        })
        .collect();
    let started = Instant::now();
    let end = started + phase.run_time;
    // After the run time, requests still due are sent and awaited up to this deadline.
    let drain = end + phase.timeout;
    let mut tasks = Vec::with_capacity(phase.clients);
    for (i, http) in clients.into_iter().enumerate() {
        let target = target.clone();
        let phase = phase.clone();
        tasks.push(tokio::spawn(async move {
            client(i, http, &target, &phase, started, end, drain).await
        }));
    }
    let mut records = Vec::new();
    let mut unsent = 0usize;
    let mut send_lag = Duration::ZERO;
    for task in tasks {
        let (mut mine, not_sent, lag) = task.await.expect("a load client panicked");
        records.append(&mut mine);
        unsent += not_sent;
        send_lag = send_lag.max(lag);
    }
    let mut result = summarize(phase, started.elapsed(), records, unsent);
    if matches!(phase.pace, Pace::OpenLoop { .. }) {
        result.send_lag_ms = Some(send_lag.as_secs_f64() * 1000.0);
    }
    result
}

/// One client: its requests and how each ended; the requests that were due but never sent
/// before the drain deadline; the longest the driver itself was late to send a request while
/// its client was idle (its own scheduling, not charged to the service, but reported: when it
/// is large the load generator was starved and the run says less).
async fn client(
    index: usize,
    http: reqwest::Client,
    target: &Target,
    phase: &Phase,
    started: Instant,
    end: Instant,
    drain: Instant,
) -> (Vec<Record>, usize, Duration) {
    let mut records = Vec::new();
    let mut lag = Duration::ZERO;
    let mut previous_answer = started;
    let mut k = 0usize;
    loop {
        let endpoint = phase.mix[(index + k) % phase.mix.len()];
        let due = match phase.pace {
            Pace::ClosedLoop { .. } => {
                if Instant::now() >= end {
                    return (records, 0, lag);
                }
                None
            }
            Pace::OpenLoop { rate } => {
                let period = Duration::from_secs_f64(phase.clients as f64 / rate);
                let offset = period.mul_f64(index as f64 / phase.clients as f64);
                let due = started + offset + period * k as u32;
                if due >= end {
                    return (records, 0, lag);
                }
                if Instant::now() >= drain {
                    // Due but never sent: lost, however the service would have answered.
                    let left = ((end - due).as_secs_f64() / period.as_secs_f64()).ceil();
                    return (records, left as usize, lag);
                }
                tokio::time::sleep_until(due.into()).await;
                Some(due)
            }
        };
        let sent = Instant::now();
        let from = match due {
            Some(due) if previous_answer > due => due,
            Some(due) => {
                lag = lag.max(sent - due);
                sent
            }
            None => sent,
        };
        let ending = send(&http, target, endpoint, phase.refusals_allowed).await;
        let answered = Instant::now();
        previous_answer = answered;
        let refused = matches!(ending, Ending::Refused);
        records.push(Record {
            endpoint,
            latency: answered - from,
            ending,
        });
        k += 1;
        if let Pace::ClosedLoop {
            think,
            pause_after_refusal,
        } = phase.pace
        {
            let pause = if refused { pause_after_refusal } else { think };
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
    }
}

async fn send(
    http: &reqwest::Client,
    target: &Target,
    endpoint: Endpoint,
    refusals_allowed: bool,
) -> Ending {
    let request = match endpoint {
        Endpoint::Tools => http.get(format!("{}/tools", target.url)),
        Endpoint::Health => http.get(format!("{}/health", target.url)),
        Endpoint::Call => {
            let body = target.call_body.clone().unwrap_or(Value::Null);
            http.post(format!("{}/call-tool", target.url)).json(&body)
        }
    };
    let answer = match request.send().await {
        Ok(answer) => answer,
        Err(e) => return Ending::Lost(transport_error(&e)),
    };
    let status = answer.status().as_u16();
    let retry_after = answer.headers().contains_key(reqwest::header::RETRY_AFTER);
    let text = match answer.text().await {
        Ok(text) => text,
        Err(e) => return Ending::Lost(transport_error(&e)),
    };
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if refusals_allowed && status == 503 {
        return match refusal(&body, retry_after) {
            Ok(()) => Ending::Refused,
            Err(why) => Ending::Failed(why),
        };
    }
    match check(endpoint, status, &body) {
        Ok(()) => Ending::Answered,
        Err(why) => Ending::Failed(why),
    }
}

/// A refusal as the contract gives it: 503, code SERVICE_UNAVAILABLE, a Retry-After header.
pub fn refusal(body: &Value, retry_after: bool) -> Result<(), String> {
    let code = body["code"].as_str().unwrap_or("no code");
    if code != "SERVICE_UNAVAILABLE" {
        return Err(format!("status 503 with code {code}"));
    }
    if !retry_after {
        return Err("status 503 without Retry-After".into());
    }
    Ok(())
}

fn transport_error(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "could not connect".into()
    } else {
        // The connection closed or was reset before the whole answer came.
        "connection closed before the answer".into()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // Nearest rank.
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1000.0
}

/// Latency statistics over `latencies` (any order); `count` requests, `failures` of them bad.
pub fn stats(name: &str, mut latencies: Vec<Duration>, failures: usize, seconds: f64) -> Stats {
    latencies.sort();
    Stats {
        name: name.to_owned(),
        requests: latencies.len(),
        failures,
        rps: if seconds > 0.0 {
            latencies.len() as f64 / seconds
        } else {
            0.0
        },
        p50_ms: percentile(&latencies, 0.50),
        p95_ms: percentile(&latencies, 0.95),
        p99_ms: percentile(&latencies, 0.99),
        max_ms: latencies
            .last()
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0),
    }
}

fn summarize(phase: &Phase, took: Duration, records: Vec<Record>, unsent: usize) -> PhaseResult {
    let seconds = phase.run_time.as_secs_f64();
    let mut by_endpoint: BTreeMap<&'static str, (Vec<Duration>, usize)> = BTreeMap::new();
    let mut all = Vec::new();
    let mut failures = 0;
    let mut refused = 0;
    let mut lost = unsent;
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    if unsent > 0 {
        errors.insert(
            "due but never sent before the drain deadline".into(),
            unsent,
        );
    }
    for record in &records {
        let entry = by_endpoint
            .entry(record.endpoint.name())
            .or_insert((Vec::new(), 0));
        match &record.ending {
            // The latencies judged are those of the requests the service carried: in the
            // overload run a refusal is quick by design and says nothing about admitted calls.
            Ending::Answered => {
                entry.0.push(record.latency);
                all.push(record.latency);
            }
            Ending::Refused => refused += 1,
            Ending::Failed(why) => {
                entry.0.push(record.latency);
                all.push(record.latency);
                entry.1 += 1;
                failures += 1;
                *errors
                    .entry(format!("{} {}", record.endpoint.name(), why))
                    .or_default() += 1;
            }
            Ending::Lost(why) => {
                entry.1 += 1;
                lost += 1;
                *errors
                    .entry(format!("{} lost: {}", record.endpoint.name(), why))
                    .or_default() += 1;
            }
        }
    }
    let endpoints = by_endpoint
        .into_iter()
        .map(|(name, (latencies, bad))| stats(name, latencies, bad, seconds))
        .collect();
    PhaseResult {
        phase: phase.name.clone(),
        users: phase.clients,
        pacing: match phase.pace {
            Pace::ClosedLoop { think, .. } if think.is_zero() => "closed loop".into(),
            Pace::ClosedLoop { think, .. } => {
                format!("closed loop, {} ms think time", think.as_millis())
            }
            Pace::OpenLoop { rate } => format!("open loop, {rate:.0} req/s scheduled"),
        },
        seconds,
        total: stats("all", all, failures + lost, seconds),
        endpoints,
        errors: errors.into_iter().collect(),
        sent: Some(records.len() + unsent),
        lost: Some(lost),
        refused: Some(refused),
        drained_ms: Some(took.saturating_sub(phase.run_time).as_secs_f64() * 1000.0),
        send_lag_ms: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn percentiles_are_nearest_rank() {
        let ms = |v: u64| Duration::from_millis(v);
        let s = stats("x", (1..=100).rev().map(ms).collect(), 0, 10.0);
        assert_eq!(
            (s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms),
            (50.0, 95.0, 99.0, 100.0)
        );
        assert_eq!(s.rps, 10.0);
        assert_eq!(stats("x", vec![], 0, 1.0).p95_ms, 0.0);
    }

    /// A connection closed without an answer is lost, and counted once: the driver against the
    /// faulty upstream directly (its `{"ok":true}` is no envelope, so the others fail).
    #[tokio::test]
    async fn a_dropped_connection_is_a_lost_request() {
        let upstream = crate::upstream::Upstream::spawn(
            0,
            crate::upstream::Faults {
                drop_nth: Some(3),
                ..Default::default()
            },
        )
        .unwrap();
        let target = Arc::new(Target {
            url: format!("http://127.0.0.1:{}", upstream.port),
            call_body: Some(json!({"tool": "x", "arguments": {}})),
            tool: Some("x".into()),
        });
        let phase = Phase {
            name: "p".into(),
            clients: 1,
            pace: Pace::OpenLoop { rate: 50.0 },
            run_time: Duration::from_secs(1),
            mix: vec![Endpoint::Call],
            refusals_allowed: false,
            timeout: Duration::from_secs(5),
        };
        let result = run(target, &phase).await;
        assert_eq!(result.lost, Some(1), "{result:#?}");
        assert_eq!(result.sent, Some(50));
        assert_eq!(
            result.total.failures, 50,
            "49 wrong answers and the lost one"
        );
        assert!(
            result
                .errors
                .iter()
                .any(|(e, n)| e.contains("lost: connection closed") && *n == 1),
            "{:?}",
            result.errors
        );
    }

    #[test]
    fn a_refusal_needs_its_code_and_retry_after() {
        let refused = json!({"success": false, "code": "SERVICE_UNAVAILABLE", "error": "busy"});
        assert!(refusal(&refused, true).is_ok());
        assert_eq!(
            refusal(&refused, false).unwrap_err(),
            "status 503 without Retry-After"
        );
        assert_eq!(
            refusal(&json!({"code": "EXECUTION_ERROR"}), true).unwrap_err(),
            "status 503 with code EXECUTION_ERROR"
        );
    }
}
