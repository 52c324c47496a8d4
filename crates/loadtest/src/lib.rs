//! The load-test suite: a baseline phase at one user, the load phase at many, verdicts on
//! failures and p95 latency, and the reports (see `docs/performance.md`).

pub mod attack;
pub mod plan;
pub mod report;
pub mod target;
pub mod verdict;

use std::sync::Arc;

use anyhow::Context;

pub use report::Outcome;

/// Runs both phases of `plan` and writes its reports.
pub async fn run(plan: &plan::Plan) -> anyhow::Result<Outcome> {
    let target = Arc::new(target::Target::discover(plan).await?);
    if let Some(dir) = &plan.report_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let html = |phase: &str| {
        plan.report_dir
            .as_ref()
            .map(|d| d.join(format!("{phase}.html")))
    };
    eprintln!(
        "loadtest: {} — scenario {:?}{}, {} s per phase",
        plan.url,
        plan.scenario,
        target
            .tool
            .as_ref()
            .map(|t| format!(", tool {t}"))
            .unwrap_or_default(),
        plan.run_time.as_secs()
    );
    eprintln!("loadtest: baseline, 1 user …");
    let baseline = attack::run_phase(
        "baseline",
        plan.scenario,
        target.clone(),
        1,
        plan.run_time,
        html("baseline").as_deref(),
    )
    .await
    .context("baseline phase")?;
    eprintln!("loadtest: load, {} users …", plan.users);
    let load = attack::run_phase(
        "load",
        plan.scenario,
        target.clone(),
        plan.users,
        plan.run_time,
        html("load").as_deref(),
    )
    .await
    .context("load phase")?;
    let verdicts = verdict::judge(plan, &baseline, &load);
    let outcome = Outcome {
        url: plan.url.clone(),
        scenario: plan.scenario,
        tool: target.tool.clone(),
        phases: vec![baseline, load],
        verdicts,
        latency_floor_ms: plan.latency_floor_ms,
    };
    if let Some(dir) = &plan.report_dir {
        outcome.write(dir)?;
    }
    Ok(outcome)
}
