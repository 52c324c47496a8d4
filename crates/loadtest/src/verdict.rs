//! The verdicts of a run.
//!
//! Load (SC-011, US7): no failed or lost request in any phase; the open-loop p95 within
//! `max_degradation` × max(baseline p95, floor), and within an absolute budget when one is
//! given (a number for one known machine, never CI's); with a
//! reference measured in the same run, the saturation throughput at least a share of the
//! reference's. The saturation phase's latency is not judged: in a closed loop it is users ÷
//! throughput.
//!
//! Overload: every answer 200 or 503 SERVICE_UNAVAILABLE + Retry-After; none lost; some refused
//! when the callers outnumber the slots and the queue (a gateway without admission control
//! fails here); the admitted calls per second at least a share of the upstream's ceiling (one
//! that serialises calls fails here); the admitted calls' p99 within the tool's delay plus the
//! longest queue wait the limits allow, plus slack.

use serde::Serialize;

use crate::attack::PhaseResult;
use crate::plan::{Overload, Plan};

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub name: String,
    pub passed: bool,
    /// What was measured against what, in words.
    pub detail: String,
}

/// The load run's verdicts. `saturation` is there for its failures and, with a reference,
/// its throughput, unless `calls` (the same closed loop calling the tool only) is given: then
/// that one's throughput is judged against `reference_phase`.
pub fn judge_load(
    plan: &Plan,
    baseline: &PhaseResult,
    open: &PhaseResult,
    saturation: Option<&PhaseResult>,
    calls: Option<&PhaseResult>,
    reference_phase: Option<&PhaseResult>,
) -> Vec<Verdict> {
    let phases: Vec<&PhaseResult> = [
        Some(baseline),
        saturation,
        calls,
        reference_phase,
        Some(open),
    ]
    .into_iter()
    .flatten()
    .collect();
    let failures: usize = phases.iter().map(|p| p.total.failures).sum();
    let per_phase = phases
        .iter()
        .map(|p| {
            let of = p.sent.unwrap_or(p.total.requests);
            format!("{} {} of {of}", p.phase, p.total.failures)
        })
        .collect::<Vec<_>>()
        .join(", ");
    let p95 = open.total.p95_ms;
    let reference = baseline.total.p95_ms.max(plan.latency_floor_ms);
    let allowed = plan.max_degradation * reference;
    let floor_note = if baseline.total.p95_ms < plan.latency_floor_ms {
        format!(
            " (baseline p95 {:.2} ms is under the {} ms floor, so the floor counts)",
            baseline.total.p95_ms, plan.latency_floor_ms
        )
    } else {
        String::new()
    };
    let answered = open.total.requests > 0 && baseline.total.requests > 0;
    let mut verdicts = vec![
        Verdict {
            name: "no failed or lost requests".into(),
            passed: failures == 0 && answered,
            detail: if answered {
                format!("failed or lost: {per_phase}")
            } else {
                "no request was answered".into()
            },
        },
        Verdict {
            name: format!("open-loop p95 ≤ {} × baseline", plan.max_degradation),
            passed: answered && p95 <= allowed,
            detail: format!(
                "{p95:.2} ms against {allowed:.2} ms = {} × {reference:.2} ms{floor_note}",
                plan.max_degradation
            ),
        },
    ];
    if let Some(budget) = plan.budget_p95_ms {
        verdicts.push(Verdict {
            name: format!("open-loop p95 ≤ {budget} ms"),
            passed: answered && p95 <= budget,
            detail: format!(
                "p95 at {} clients, {}: {p95:.2} ms",
                open.users, open.pacing
            ),
        });
    }
    if let (Some((url, ratio)), Some(judged)) = (&plan.reference, calls.or(saturation)) {
        let measured = reference_phase.map_or(0.0, |r| r.total.rps);
        verdicts.push(Verdict {
            name: format!("{} throughput ≥ {ratio} × the reference's", judged.phase),
            passed: measured > 0.0 && judged.total.rps >= ratio * measured,
            detail: format!(
                "{:.0} req/s against {:.0} = {ratio} × {measured:.0} req/s of {url} (ratio {:.3})",
                judged.total.rps,
                ratio * measured,
                if measured > 0.0 {
                    judged.total.rps / measured
                } else {
                    0.0
                }
            ),
        });
    }
    verdicts
}

/// The overload run's verdicts.
pub fn judge_overload(limits: &Overload, run: &PhaseResult) -> Vec<Verdict> {
    let lost = run.lost.unwrap_or(0);
    let refused = run.refused.unwrap_or(0);
    let wrong = run.total.failures.saturating_sub(lost);
    let sent = run.sent.unwrap_or(0);
    let answered = run.total.requests + refused;
    let admitted = run.total.requests.saturating_sub(wrong);
    let bound = limits.p99_bound_ms() as f64;
    let admitted_per_s = if run.seconds > 0.0 {
        admitted as f64 / run.seconds
    } else {
        0.0
    };
    vec![
        Verdict {
            name: "every answer is 200 or 503 + Retry-After".into(),
            passed: wrong == 0 && answered > 0,
            detail: format!("{admitted} × 200, {refused} × 503 + Retry-After, {wrong} other"),
        },
        Verdict {
            name: "no call lost".into(),
            passed: lost == 0 && sent == answered && sent > 0,
            detail: format!("{sent} sent, {answered} answered, {lost} lost"),
        },
        Verdict {
            name: "callers beyond the slots and the queue are refused".into(),
            passed: !limits.must_refuse() || refused > 0,
            detail: format!(
                "{} callers against {} slots + {} queued: {refused} refused{}",
                limits.callers(),
                limits.admission_limit,
                limits.queue_depth,
                if limits.must_refuse() {
                    ""
                } else {
                    " (none need be)"
                }
            ),
        },
        Verdict {
            name: format!(
                "admitted calls/s ≥ {} × the upstream's ceiling",
                limits.min_throughput_ratio
            ),
            passed: admitted_per_s >= limits.min_throughput_ratio * limits.ceiling_per_s(),
            detail: format!(
                "{admitted_per_s:.1} calls/s against {:.1} = {} × {:.1} ({} slots ÷ {} ms)",
                limits.min_throughput_ratio * limits.ceiling_per_s(),
                limits.min_throughput_ratio,
                limits.ceiling_per_s(),
                limits.admission_limit,
                limits.tool_delay_ms
            ),
        },
        Verdict {
            name: format!("admitted calls' p99 ≤ {bound:.0} ms"),
            passed: admitted > 0 && run.total.p99_ms <= bound,
            detail: format!(
                "p99 {:.2} ms over {admitted} admitted calls; bound = tool delay {} ms + longest \
                 queue wait {} ms + slack {} ms",
                run.total.p99_ms,
                limits.tool_delay_ms,
                limits.longest_queue_wait_ms(),
                limits.p99_slack()
            ),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attack::Stats;
    use crate::plan::Args;
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
            pacing: "closed loop".into(),
            seconds: 10.0,
            total,
            endpoints: vec![],
            errors: vec![],
            sent: Some(1000),
            lost: Some(0),
            refused: Some(0),
            drained_ms: None,
            send_lag_ms: None,
        }
    }

    fn plan(extra: &[&str]) -> Plan {
        let mut argv = vec!["loadtest", "--url", "http://127.0.0.1:1"];
        argv.extend_from_slice(extra);
        Args::parse_from(argv).into_plan().unwrap()
    }

    #[test]
    fn a_fast_baseline_is_judged_against_the_floor() {
        // 0.3 ms baseline, 1.5 ms under load: 5× the baseline but within 2 × the 1 ms floor.
        let v = judge_load(
            &plan(&[]),
            &phase(1, 0.3, 0),
            &phase(100, 1.5, 0),
            None,
            None,
            None,
        );
        assert!(v.iter().all(|v| v.passed), "{v:#?}");
        assert!(v[1].detail.contains("floor"));
        // The floor is no escape: 2.1 ms is beyond 2 × 1 ms.
        let v = judge_load(
            &plan(&[]),
            &phase(1, 0.3, 0),
            &phase(100, 2.1, 0),
            None,
            None,
            None,
        );
        assert!(!v[1].passed);
    }

    #[test]
    fn each_load_verdict_can_fail() {
        let p = plan(&["--budget-p95-ms", "100"]);
        let failed = judge_load(
            &p,
            &phase(1, 5.0, 0),
            &phase(100, 6.0, 0),
            Some(&phase(100, 50.0, 1)),
            None,
            None,
        );
        assert!(!failed[0].passed);
        assert_eq!(
            failed[0].detail,
            "failed or lost: x 0 of 1000, x 1 of 1000, x 0 of 1000"
        );
        let slow = judge_load(
            &p,
            &phase(1, 60.0, 0),
            &phase(100, 101.0, 0),
            None,
            None,
            None,
        );
        assert!(!slow[2].passed && slow[1].passed);
        let degraded = judge_load(
            &p,
            &phase(1, 20.0, 0),
            &phase(100, 41.0, 0),
            None,
            None,
            None,
        );
        assert!(degraded[2].passed && !degraded[1].passed);
        // A saturation phase far beyond 2× the baseline is reported, not judged.
        let v = judge_load(
            &p,
            &phase(1, 5.0, 0),
            &phase(100, 6.0, 0),
            Some(&phase(100, 80.0, 0)),
            None,
            None,
        );
        assert!(v.iter().all(|v| v.passed), "{v:#?}");
    }

    #[test]
    fn no_absolute_budget_is_judged_unless_one_is_given() {
        let slow = |p: &Plan| {
            judge_load(
                p,
                &phase(1, 60.0, 0),
                &phase(100, 101.0, 0),
                None,
                None,
                None,
            )
        };
        let v = slow(&plan(&[]));
        assert!(
            v.iter().all(|v| v.passed && !v.name.ends_with(" ms")),
            "{v:#?}"
        );
        let v = slow(&plan(&["--budget-p95-ms", "100"]));
        assert_eq!(v.len(), 3);
        assert!(
            !v[2].passed && v[2].name == "open-loop p95 ≤ 100 ms",
            "{v:#?}"
        );
    }

    /// The saturation throughput against the reference's: judged only with a reference; a
    /// service at a tenth of a 1 000 req/s reference fails a 0.2 floor, at a quarter passes.
    /// The load verdicts of a 5 ms baseline and a 6 ms open loop with these phases.
    fn judged(
        plan: &Plan,
        saturation: Option<&PhaseResult>,
        calls: Option<&PhaseResult>,
        reference: Option<&PhaseResult>,
    ) -> Vec<Verdict> {
        judge_load(
            plan,
            &phase(1, 5.0, 0),
            &phase(100, 6.0, 0),
            saturation,
            calls,
            reference,
        )
    }

    #[test]
    fn the_throughput_floor_is_judged_against_the_reference() {
        let p = plan(&[
            "--reference-url",
            "http://127.0.0.1:2",
            "--min-reference-ratio",
            "0.2",
        ]);
        let mut reference = phase(100, 5.0, 0);
        reference.total.rps = 1000.0;
        let mut saturation = phase(100, 50.0, 0);
        saturation.total.rps = 100.0;
        let v = judged(&p, Some(&saturation), None, Some(&reference));
        assert_eq!(v.len(), 3);
        assert!(!v[2].passed, "{v:#?}");
        assert_eq!(
            v[2].detail,
            "100 req/s against 200 = 0.2 × 1000 req/s of http://127.0.0.1:2 (ratio 0.100)"
        );
        saturation.total.rps = 250.0;
        let v = judged(&p, Some(&saturation), None, Some(&reference));
        assert!(v[2].passed, "{v:#?}");
        // A reference that answered nothing proves nothing: the verdict fails.
        reference.total.rps = 0.0;
        let v = judged(&p, Some(&saturation), None, Some(&reference));
        assert!(!v[2].passed, "{v:#?}");
        // Without a reference, two verdicts.
        let v = judged(&plan(&[]), Some(&saturation), None, None);
        assert_eq!(v.len(), 2);
        // With a calls-only phase, that one is judged: 150 of 1 000 fails 0.2 although the
        // mixed saturation (250) would pass.
        reference.total.rps = 1000.0;
        let mut calls = phase(100, 50.0, 0);
        calls.phase = "saturation, calls only".into();
        calls.total.rps = 150.0;
        let v = judged(&p, Some(&saturation), Some(&calls), Some(&reference));
        assert!(!v[2].passed, "{v:#?}");
        assert!(
            v[2].name.starts_with("saturation, calls only throughput"),
            "{}",
            v[2].name
        );
    }

    #[test]
    fn each_overload_verdict_can_fail() {
        let limits = plan(&[
            "--mode",
            "overload",
            "--scenario",
            "call",
            "--admission-limit",
            "4",
            "--queue-depth",
            "4",
            "--tool-delay-ms",
            "100",
        ])
        .overload
        .unwrap();
        assert_eq!(limits.p99_bound_ms(), 300);
        let mut run = phase(20, 150.0, 0);
        run.total.requests = 600;
        run.refused = Some(400);
        run.sent = Some(1000);
        let v = judge_overload(&limits, &run);
        assert!(v.iter().all(|v| v.passed), "{v:#?}");
        assert_eq!(v[0].detail, "600 × 200, 400 × 503 + Retry-After, 0 other");

        let mut wrong = run.clone();
        wrong.total.failures = 1;
        assert!(!judge_overload(&limits, &wrong)[0].passed);

        let mut lost = run.clone();
        lost.sent = Some(1001);
        lost.lost = Some(1);
        lost.total.failures = 1;
        let v = judge_overload(&limits, &lost);
        assert!(v[0].passed && !v[1].passed, "{v:#?}");

        // The bound: 100 ms delay + 100 ms queue wait + half of them as slack.
        let mut slow = run.clone();
        slow.total.p99_ms = 300.0;
        assert!(judge_overload(&limits, &slow)[4].passed);
        slow.total.p99_ms = 301.0;
        assert!(!judge_overload(&limits, &slow)[4].passed);
        assert!(
            judge_overload(&limits, &slow)[4]
                .detail
                .ends_with("queue wait 100 ms + slack 100 ms"),
            "{}",
            judge_overload(&limits, &slow)[4].detail
        );

        // No admission control: 20 callers, 4 slots, 4 queued, nothing refused.
        let mut unlimited = run.clone();
        unlimited.refused = Some(0);
        unlimited.sent = Some(600);
        let v = judge_overload(&limits, &unlimited);
        assert!(!v[2].passed, "{v:#?}");
        assert_eq!(
            v[2].detail,
            "20 callers against 4 slots + 4 queued: 0 refused"
        );

        // Serialised: 600 admitted in 10 s is 60/s of a 40/s ceiling; 100 is 10/s.
        assert!(v[3].passed, "{v:#?}");
        let mut serial = run.clone();
        serial.total.requests = 100;
        let v = judge_overload(&limits, &serial);
        assert!(!v[3].passed, "{v:#?}");
        assert_eq!(
            v[3].detail,
            "10.0 calls/s against 28.0 = 0.7 × 40.0 (4 slots ÷ 100 ms)"
        );
    }
}
