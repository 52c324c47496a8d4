//! The load-test suite (see `docs/performance.md`). The load run: a 1-client baseline, the
//! saturation test (closed loop, goose) and the open-loop phase (our own driver at a fixed
//! rate), judged on failures and the open-loop p95. The overload run: a multiple of the
//! admission limit calling a slow tool, judged on the answers' kinds, losses and the admitted
//! calls' p99. Then the reports.

pub mod attack;
pub mod drive;
pub mod plan;
pub mod report;
pub mod sessions;
pub mod target;
pub mod upstream;
pub mod verdict;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

pub use report::Outcome;

use plan::{Mode, Plan, Rate};

/// Runs `plan` and writes its reports.
pub async fn run(plan: &Plan) -> anyhow::Result<Outcome> {
    let target = Arc::new(target::Target::discover(plan).await?);
    if let Some(dir) = &plan.report_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    eprintln!(
        "loadtest: {} — {:?} run, scenario {:?}{}, {} s per phase",
        plan.url,
        plan.mode,
        plan.scenario,
        target
            .tool
            .as_ref()
            .map(|t| format!(", tool {t}"))
            .unwrap_or_default(),
        plan.run_time.as_secs()
    );
    let (phases, verdicts, notes) = match plan.mode {
        Mode::Load => load(plan, target.clone()).await?,
        Mode::Overload => overload(plan, target.clone()).await,
        Mode::Sessions => sessions::run(plan, &target).await,
    };
    let outcome = Outcome {
        url: plan.url.clone(),
        mode: plan.mode,
        scenario: plan.scenario,
        tool: target.tool.clone(),
        phases,
        verdicts,
        notes,
    };
    if let Some(dir) = &plan.report_dir {
        outcome.write(dir)?;
    }
    Ok(outcome)
}

type Run = (Vec<attack::PhaseResult>, Vec<verdict::Verdict>, Vec<String>);

/// The requests a scenario's clients send in turn, each endpoint as often as its weight.
fn mix(kind: plan::ScenarioKind) -> Vec<target::Endpoint> {
    attack::endpoints(kind)
        .into_iter()
        .flat_map(|(endpoint, weight)| std::iter::repeat_n(endpoint, weight))
        .collect()
}

async fn load(plan: &Plan, target: Arc<target::Target>) -> anyhow::Result<Run> {
    let phase = |name: &str, clients, pace| drive::Phase {
        name: name.into(),
        clients,
        pace,
        run_time: plan.run_time,
        mix: mix(plan.scenario),
        refusals_allowed: false,
        timeout: Duration::from_secs(10),
    };
    // One request at a time with a pause between: a lone request at an idle service. Sent
    // back to back they would keep the service's threads hot, and the baseline would be the
    // best case no spaced arrival gets (docs/performance.md).
    let lone = drive::Pace::ClosedLoop {
        think: plan.baseline_think,
        pause_after_refusal: Duration::ZERO,
    };
    eprintln!("loadtest: baseline, 1 client …");
    let baseline = drive::run(target.clone(), &phase("baseline", 1, lone)).await;
    let saturation = if plan.saturation {
        eprintln!("loadtest: saturation, {} users, closed loop …", plan.users);
        let html = plan.report_dir.as_ref().map(|d| d.join("saturation.html"));
        Some(
            attack::run_phase(
                "saturation",
                plan.scenario,
                target.clone(),
                plan.users,
                plan.run_time,
                html.as_deref(),
            )
            .await
            .context("saturation phase")?,
        )
    } else {
        None
    };
    // With a reference, the call path alone in the same closed loop: a call path that
    // serialises shows in full here, where the mixed scenario's list and health requests
    // would dilute it.
    let calls = match (&plan.reference, &saturation) {
        (Some(_), Some(_)) if plan.scenario == plan::ScenarioKind::Mixed => {
            eprintln!(
                "loadtest: saturation, calls only, {} users, closed loop …",
                plan.users
            );
            Some(
                attack::run_phase(
                    "saturation, calls only",
                    plan::ScenarioKind::Call,
                    target.clone(),
                    plan.users,
                    plan.run_time,
                    None,
                )
                .await
                .context("calls-only saturation phase")?,
            )
        }
        _ => None,
    };
    // The reference right after the saturation phase, so both meet the same machine.
    let reference = match (&plan.reference, &saturation) {
        (Some((url, _)), Some(_)) => {
            eprintln!(
                "loadtest: reference {url}, {} users, GET /tools …",
                plan.users
            );
            let reference_plan = Plan {
                url: url.clone(),
                scenario: plan::ScenarioKind::Tools,
                tool: None,
                ..plan.clone()
            };
            let reference_target = Arc::new(
                target::Target::discover(&reference_plan)
                    .await
                    .context("the reference server")?,
            );
            let mut phase = attack::run_phase(
                "reference",
                plan::ScenarioKind::Tools,
                reference_target,
                plan.users,
                plan.run_time,
                None,
            )
            .await
            .context("reference phase")?;
            phase.phase = format!("reference ({url})");
            Some(phase)
        }
        _ => None,
    };
    let rate = match (plan.rate, &saturation) {
        (Rate::Fixed(rate), _) => rate,
        (Rate::FractionOfSaturation(f), Some(s)) if s.total.rps > 0.0 => f * s.total.rps,
        (Rate::FractionOfSaturation(_), _) => {
            bail!("the saturation phase answered nothing, so there is no rate to derive")
        }
    };
    eprintln!(
        "loadtest: open loop, {} clients at {rate:.0} req/s …",
        plan.users
    );
    let open = drive::run(
        target,
        &phase("open loop", plan.users, drive::Pace::OpenLoop { rate }),
    )
    .await;
    let verdicts = verdict::judge_load(
        plan,
        &baseline,
        &open,
        saturation.as_ref(),
        calls.as_ref(),
        reference.as_ref(),
    );
    let mut notes = vec![match plan.rate {
        Rate::Fixed(_) => format!("The open-loop rate, {rate:.0} req/s, was given (--rate)."),
        Rate::FractionOfSaturation(f) => {
            format!("The open-loop rate, {rate:.0} req/s, is {f} × the saturation throughput.")
        }
    }];
    notes.push(format!(
        "The degradation verdict compares against max(baseline p95, {} ms): below that floor a \
         doubled baseline is within the scheduling noise of a shared machine.",
        plan.latency_floor_ms
    ));
    let phases = [Some(baseline), saturation, calls, reference, Some(open)]
        .into_iter()
        .flatten()
        .collect();
    Ok((phases, verdicts, notes))
}

async fn overload(plan: &Plan, target: Arc<target::Target>) -> Run {
    let limits = plan.overload.clone().expect("an overload plan has limits");
    eprintln!(
        "loadtest: overload, {} callers ({} × the admission limit {}) …",
        limits.callers(),
        limits.multiple,
        limits.admission_limit
    );
    let phase = drive::Phase {
        name: format!("overload {}×", limits.multiple),
        clients: limits.callers(),
        pace: drive::Pace::ClosedLoop {
            think: Duration::ZERO,
            pause_after_refusal: Duration::from_millis(limits.retry_pause_ms),
        },
        run_time: plan.run_time,
        mix: vec![target::Endpoint::Call],
        refusals_allowed: true,
        // Far beyond any admitted call's bound: what is not answered by then is lost.
        timeout: Duration::from_millis(limits.p99_bound_ms() * 4).max(Duration::from_secs(10)),
    };
    let run = drive::run(target, &phase).await;
    let verdicts = verdict::judge_overload(&limits, &run);
    let refused = run.refused.unwrap_or(0);
    let answered = run.total.requests + refused;
    let mut notes = vec![format!(
        "Accepted {:.1} calls/s; {refused} of {answered} answers ({:.1} %) were 503 + Retry-After; \
         a refused caller paused {} ms before calling again.",
        run.total.rps,
        if answered > 0 {
            100.0 * refused as f64 / answered as f64
        } else {
            0.0
        },
        limits.retry_pause_ms
    )];
    if refused == 0 && limits.callers() > limits.admission_limit + limits.queue_depth {
        notes.push(
            "No call was refused although the callers outnumber the limit and the queue: the \
             service has no admission control, or its limits are not the ones given here."
                .into(),
        );
    }
    (vec![run], verdicts, notes)
}
