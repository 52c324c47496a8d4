//! The saturation phase: a goose attack with `users` users in a closed loop for `run_time`,
//! every answer checked against the contract, and the throughput and latencies it measured
//! (goose keeps them in microsecond buckets; requests are timed to the first byte of the
//! answer). In a closed loop latency is users ÷ throughput whatever the service does, so this
//! phase is reported and gives the open loop its rate, but its latency is not judged.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use goose::config::GooseConfiguration;
use goose::goose::{
    GooseMethod, GooseRequest, GooseUser, Scenario, Transaction, TransactionResult,
};
use goose::metrics::{GooseMetrics, GooseRequestMetricTimingData};
use goose::prelude::GooseAttack;
use goose::test_plan::TestPlanStepAction;
use serde::Serialize;

use crate::plan::ScenarioKind;
use crate::target::{Endpoint, Target, check};

/// Latencies and counts of one endpoint (or of all together) in one phase.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    pub name: String,
    pub requests: usize,
    pub failures: usize,
    pub rps: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// What one phase measured.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseResult {
    pub phase: String,
    pub users: usize,
    /// How the users paced their requests, in words.
    pub pacing: String,
    pub seconds: f64,
    /// Every answered request (in the overload phase: the admitted ones); `failures` counts
    /// the failed and the lost ones.
    pub total: Stats,
    pub endpoints: Vec<Stats>,
    /// Why requests failed, with how often.
    pub errors: Vec<(String, usize)>,
    /// Requests sent (our own driver; goose does not say).
    pub sent: Option<usize>,
    /// Requests never answered: reset, timed out, or never sent before the drain deadline
    /// (goose counts these among its failures).
    pub lost: Option<usize>,
    /// Answers 503 SERVICE_UNAVAILABLE with Retry-After (the overload phase).
    pub refused: Option<usize>,
    /// How long the phase ran past its run time for the last answers.
    pub drained_ms: Option<f64>,
    /// Open loop: the longest the driver was late to send a request while its client was
    /// idle — its own scheduling delay, not counted in the latency.
    pub send_lag_ms: Option<f64>,
}

/// The endpoints a scenario sends to, with their weights.
pub fn endpoints(kind: ScenarioKind) -> Vec<(Endpoint, usize)> {
    match kind {
        ScenarioKind::Tools => vec![(Endpoint::Tools, 1)],
        ScenarioKind::Health => vec![(Endpoint::Health, 1)],
        ScenarioKind::Call => vec![(Endpoint::Call, 1)],
        ScenarioKind::Mixed => vec![
            (Endpoint::Tools, 1),
            (Endpoint::Health, 1),
            (Endpoint::Call, 2),
        ],
    }
}

/// Sends one request and fails it unless the answer is what the endpoint should give.
async fn send(user: &mut GooseUser, target: &Target, endpoint: Endpoint) -> TransactionResult {
    let (method, path) = match endpoint {
        Endpoint::Tools => (GooseMethod::Get, "/tools"),
        Endpoint::Health => (GooseMethod::Get, "/health"),
        Endpoint::Call => (GooseMethod::Post, "/call-tool"),
    };
    let mut builder = user.get_request_builder(&method, path)?;
    if let Some(body) = target
        .call_body
        .as_ref()
        .filter(|_| endpoint == Endpoint::Call)
    {
        builder = builder.json(body);
    }
    let request = GooseRequest::builder()
        .method(method)
        .path(path)
        .name(endpoint.name())
        .set_request_builder(builder)
        .build();
    let mut answer = user.request(request).await?;
    let (status, text) = match answer.response {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.text().await.unwrap_or_default())
        }
        // goose already counted a transport error as a failure.
        Err(_) => return Ok(()),
    };
    let body = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    if let Err(why) = check(endpoint, status, &body) {
        return user.set_failure(&why, &mut answer.request, None, Some(&text));
    }
    Ok(())
}

fn scenario(kind: ScenarioKind, target: Arc<Target>) -> Result<Scenario, goose::GooseError> {
    let mut scenario = Scenario::new(&format!("{kind:?}").to_lowercase());
    for (endpoint, weight) in endpoints(kind) {
        let target = target.clone();
        let transaction = Transaction::new(Arc::new(move |user| {
            let target = target.clone();
            Box::pin(async move { send(user, &target, endpoint).await })
        }))
        .set_name(endpoint.name())
        .set_weight(weight)?;
        scenario = scenario.register_transaction(transaction);
    }
    Ok(scenario)
}

/// Runs one phase; goose's HTML report goes to `report` when given.
pub async fn run_phase(
    phase: &str,
    kind: ScenarioKind,
    target: Arc<Target>,
    users: usize,
    run_time: Duration,
    report: Option<&Path>,
) -> Result<PhaseResult, goose::GooseError> {
    let mut config = GooseConfiguration::default();
    config.host = Some(target.url.clone());
    config.users = Some(users);
    // Every user starts within about a second; metrics are reset once all are running, so
    // the ramp is not measured.
    config.increase_rate = Some(users.max(1).to_string());
    config.run_time = Some(format!("{}s", run_time.as_secs()));
    // No control ports, nothing on stdout but ours.
    config.no_telnet = true;
    config.no_print_metrics = true;
    config.quiet = 1;
    if let Some(path) = report {
        config.report_file = vec![path.display().to_string()];
    }
    let metrics = GooseAttack::initialize_with_config(config)?
        .register_scenario(scenario(kind, target)?)
        .execute()
        .await?;
    Ok(summarize(phase, users, run_time, &metrics))
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn stats(name: &str, data: &GooseRequestMetricTimingData, failures: usize, seconds: f64) -> Stats {
    let empty = data.counter == 0;
    let at = |p: f32| {
        if empty {
            0.0
        } else {
            ms(data.percentile_us(p))
        }
    };
    Stats {
        name: name.to_owned(),
        requests: data.counter,
        failures,
        rps: if seconds > 0.0 {
            data.counter as f64 / seconds
        } else {
            0.0
        },
        p50_ms: at(0.50),
        p95_ms: at(0.95),
        p99_ms: at(0.99),
        max_ms: if empty { 0.0 } else { ms(data.maximum_time_us) },
    }
}

/// The seconds the full load was held (from goose's test-plan history), else the run time.
fn held_seconds(metrics: &GooseMetrics, run_time: Duration) -> f64 {
    let history = &metrics.history;
    history
        .iter()
        .position(|h| matches!(h.action, TestPlanStepAction::Maintaining))
        .and_then(|i| Some((history[i].timestamp, history.get(i + 1)?.timestamp)))
        .map(|(from, to)| (to - from).num_milliseconds() as f64 / 1000.0)
        .filter(|s| *s > 0.0)
        .unwrap_or(run_time.as_secs_f64())
}

fn summarize(phase: &str, users: usize, run_time: Duration, metrics: &GooseMetrics) -> PhaseResult {
    let seconds = held_seconds(metrics, run_time);
    let mut endpoints: Vec<Stats> = Vec::new();
    let mut all = GooseRequestMetricTimingData::default();
    let mut failures = 0;
    let mut names: Vec<&String> = metrics.requests.keys().collect();
    names.sort();
    for key in names {
        let aggregate = &metrics.requests[key];
        let data = &aggregate.raw_data;
        endpoints.push(stats(&aggregate.path, data, aggregate.fail_count, seconds));
        failures += aggregate.fail_count;
        for (floor, count) in data.times_us.iter() {
            let sum = all.times_us.get(floor).copied().unwrap_or(0);
            all.times_us.insert(*floor, sum + count);
        }
        if data.counter > 0 {
            all.minimum_time_us = if all.counter == 0 {
                data.minimum_time_us
            } else {
                all.minimum_time_us.min(data.minimum_time_us)
            };
            all.maximum_time_us = all.maximum_time_us.max(data.maximum_time_us);
        }
        all.counter += data.counter;
        all.total_time_us += data.total_time_us;
    }
    let errors = metrics
        .errors
        .values()
        .map(|e| {
            (
                format!("{} {}: {}", e.method, e.name, e.error),
                e.occurrences,
            )
        })
        .collect();
    PhaseResult {
        phase: phase.to_owned(),
        users,
        pacing: "closed loop (goose)".into(),
        seconds,
        total: stats("all", &all, failures, seconds),
        endpoints,
        errors,
        sent: None,
        lost: None,
        refused: None,
        drained_ms: None,
        send_lag_ms: None,
    }
}
