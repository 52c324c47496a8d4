//! The reports of a run: `summary.md` (a table per phase and the verdicts, fit for a CI job
//! summary), `summary.json` (the same for scripts); goose writes its HTML report per phase.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use crate::attack::{PhaseResult, Stats};
use crate::plan::{Mode, ScenarioKind};
use crate::verdict::Verdict;

#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub url: String,
    pub mode: Mode,
    pub scenario: ScenarioKind,
    pub tool: Option<String>,
    pub phases: Vec<PhaseResult>,
    pub verdicts: Vec<Verdict>,
    /// What the reader needs to read the numbers (the rate's origin, the floor, refusals).
    pub notes: Vec<String>,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.passed)
    }

    pub fn summary_markdown(&self) -> String {
        let mut md = format!(
            "## {} test of {} — {}\n\nScenario `{}`{}. Latency is to the last byte of the \
             answer (goose's saturation phase: to the first); in the open loop it runs from when \
             a request was due if its client was still busy then. A request fails if its status \
             or envelope is not what that call should give; it is lost if no answer came.\n",
            match self.mode {
                Mode::Load => "Load",
                Mode::Overload => "Overload",
                Mode::Sessions => "Session-flood",
            },
            self.url,
            if self.passed() { "PASSED" } else { "FAILED" },
            serde_json::to_value(self.scenario)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            self.tool
                .as_ref()
                .map(|t| format!(", tool `{t}`"))
                .unwrap_or_default(),
        );
        for phase in &self.phases {
            md.push_str(&format!(
                "\n### {} — {} client{}, {}, {:.1} s\n\n| request | answered | rps | p50 ms | p95 ms | p99 ms | max ms | failed or lost |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
                phase.phase,
                phase.users,
                if phase.users == 1 { "" } else { "s" },
                phase.pacing,
                phase.seconds
            ));
            for row in phase.endpoints.iter().chain([&phase.total]) {
                md.push_str(&table_row(row));
            }
            for (error, count) in &phase.errors {
                md.push_str(&format!("\n- {count} × {error}"));
            }
            if !phase.errors.is_empty() {
                md.push('\n');
            }
            if let (Some(sent), Some(lost)) = (phase.sent, phase.lost) {
                md.push_str(&format!(
                    "\n{sent} sent, {lost} lost, {} refused (503 + Retry-After); the last answer \
                     came {:.0} ms after the run time.\n",
                    phase.refused.unwrap_or(0),
                    phase.drained_ms.unwrap_or(0.0)
                ));
            }
            if let Some(lag) = phase.send_lag_ms {
                md.push_str(&format!(
                    "The driver sent at most {lag:.1} ms after a request was due while its client \
                     was idle (its own scheduling, not counted as latency).\n"
                ));
            }
        }
        md.push_str("\n### Verdicts\n\n| verdict | result | measured |\n|---|---|---|\n");
        for v in &self.verdicts {
            md.push_str(&format!(
                "| {} | {} | {} |\n",
                v.name,
                if v.passed { "pass" } else { "**FAIL**" },
                v.detail
            ));
        }
        for note in &self.notes {
            md.push_str(&format!("\n{note}\n"));
        }
        md
    }

    /// Writes `summary.md` and `summary.json` into `dir`.
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let md = dir.join("summary.md");
        std::fs::write(&md, self.summary_markdown())
            .with_context(|| format!("writing {}", md.display()))?;
        let json = dir.join("summary.json");
        let mut value = serde_json::to_value(self)?;
        value["passed"] = self.passed().into();
        // The same key scripts/loadtest-ci.sh writes for a service it did not run.
        value["status"] = if self.passed() { "passed" } else { "failed" }.into();
        std::fs::write(&json, serde_json::to_string_pretty(&value)?)
            .with_context(|| format!("writing {}", json.display()))?;
        Ok(())
    }
}

fn table_row(s: &Stats) -> String {
    let name = if s.name == "all" {
        "**all**".to_owned()
    } else {
        s.name.clone()
    };
    format!(
        "| {name} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {} |\n",
        s.requests, s.rps, s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms, s.failures
    )
}
