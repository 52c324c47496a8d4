//! The verdicts of a run (SC-011, US7): no failed request in either phase; p95 under load
//! within the budget; p95 under load within `max_degradation` × max(baseline p95, floor).

use serde::Serialize;

use crate::attack::PhaseResult;
use crate::plan::Plan;

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub name: String,
    pub passed: bool,
    /// What was measured against what, in words.
    pub detail: String,
}

pub fn judge(plan: &Plan, baseline: &PhaseResult, load: &PhaseResult) -> Vec<Verdict> {
    let failures = baseline.total.failures + load.total.failures;
    let requests = baseline.total.requests + load.total.requests;
    let p95 = load.total.p95_ms;
    let reference = baseline.total.p95_ms.max(plan.latency_floor_ms);
    let allowed = plan.max_degradation * reference;
    let floor_note = if baseline.total.p95_ms < plan.latency_floor_ms {
        format!(
            " (baseline p95 {:.2} ms is under the {:.0} ms floor, so the floor counts)",
            baseline.total.p95_ms, plan.latency_floor_ms
        )
    } else {
        String::new()
    };
    vec![
        Verdict {
            name: "no failed requests".into(),
            passed: failures == 0 && load.total.requests > 0 && baseline.total.requests > 0,
            detail: if requests == 0 {
                "no request was answered".into()
            } else {
                format!("{failures} of {requests} requests failed")
            },
        },
        Verdict {
            name: format!("p95 under load ≤ {} ms", plan.budget_p95_ms),
            passed: p95 <= plan.budget_p95_ms,
            detail: format!("p95 at {} users: {p95:.2} ms", load.users),
        },
        Verdict {
            name: format!("p95 under load ≤ {} × baseline", plan.max_degradation),
            passed: p95 <= allowed,
            detail: format!(
                "{p95:.2} ms against {allowed:.2} ms = {} × {reference:.2} ms{floor_note}",
                plan.max_degradation
            ),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attack::Stats;
    use crate::plan::{Args, ScenarioKind};
    use clap::Parser;

    fn phase(users: usize, p95: f64, failures: usize) -> PhaseResult {
        let total = Stats {
            name: "all".into(),
            requests: 1000,
            failures,
            rps: 100.0,
            p50_ms: p95 / 2.0,
            p95_ms: p95,
            p99_ms: p95,
            max_ms: p95,
        };
        PhaseResult {
            phase: "x".into(),
            users,
            seconds: 10.0,
            total,
            endpoints: vec![],
            errors: vec![],
        }
    }

    fn plan() -> Plan {
        let plan = Args::parse_from(["loadtest", "--url", "http://127.0.0.1:1"])
            .into_plan()
            .unwrap();
        assert_eq!(plan.scenario, ScenarioKind::Mixed);
        plan
    }

    #[test]
    fn a_fast_baseline_is_judged_against_the_floor() {
        // 0.3 ms baseline, 15 ms under load: 50× the baseline but within 2 × 10 ms floor.
        let v = judge(&plan(), &phase(1, 0.3, 0), &phase(100, 15.0, 0));
        assert!(v.iter().all(|v| v.passed), "{v:#?}");
        assert!(v[2].detail.contains("floor"));
    }

    #[test]
    fn each_verdict_can_fail() {
        let failed = judge(&plan(), &phase(1, 5.0, 0), &phase(100, 15.0, 3));
        assert!(!failed[0].passed);
        assert_eq!(failed[0].detail, "3 of 2000 requests failed");
        let slow = judge(&plan(), &phase(1, 60.0, 0), &phase(100, 101.0, 0));
        assert!(!slow[1].passed && slow[2].passed);
        let degraded = judge(&plan(), &phase(1, 20.0, 0), &phase(100, 41.0, 0));
        assert!(degraded[1].passed && !degraded[2].passed);
    }
}
