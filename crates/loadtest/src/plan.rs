//! What a run does: the command-line options and the validated plan made from them.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use serde_json::Value;

/// Load-tests one mcp-http-gateway service: a baseline phase at 1 user, then the load phase at
/// --users, each for --run-time; then three verdicts — no failed request, p95 under load within
/// --budget-p95-ms, and p95 under load within --max-degradation × max(baseline p95,
/// --latency-floor-ms). Exit code 0 when every verdict passes, 1 when one fails, 2 when the run
/// could not be made (bad options, service unreachable).
#[derive(Parser, Debug)]
#[command(name = "loadtest", version)]
pub struct Args {
    /// The service's base URL.
    #[arg(long)]
    pub url: String,
    /// Concurrent users in the load phase (each sends its next request as soon as the last
    /// one is answered).
    #[arg(long, default_value_t = 100)]
    pub users: usize,
    /// How long each phase runs: seconds, or with a unit (`30s`, `2m`, `1m30s`).
    #[arg(long, default_value = "30s", value_parser = parse_run_time)]
    pub run_time: Duration,
    /// What each user sends: GET /tools, GET /health, POST /call-tool, or a weighted mix
    /// (tools 1 : health 1 : call 2).
    #[arg(long, value_enum, default_value_t = ScenarioKind::Mixed)]
    pub scenario: ScenarioKind,
    /// The tool to call; by default the first tool whose input schema has no required field.
    #[arg(long)]
    pub tool: Option<String>,
    /// The call's arguments, a JSON object.
    #[arg(long, default_value = "{}", value_parser = parse_args_json)]
    pub args: Value,
    /// Verdict: p95 latency under load must not exceed this many milliseconds.
    #[arg(long, default_value_t = 100.0)]
    pub budget_p95_ms: f64,
    /// Verdict: p95 under load must not exceed this multiple of the baseline p95 ...
    #[arg(long, default_value_t = 2.0)]
    pub max_degradation: f64,
    /// ... where a baseline p95 below this floor counts as the floor, so that a
    /// sub-millisecond baseline does not turn scheduling noise into a failure.
    #[arg(long, default_value_t = 10.0)]
    pub latency_floor_ms: f64,
    /// Folder for the reports: goose's HTML report per phase, summary.md and summary.json.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScenarioKind {
    Tools,
    Health,
    Call,
    Mixed,
}

impl ScenarioKind {
    pub fn calls_a_tool(self) -> bool {
        matches!(self, ScenarioKind::Call | ScenarioKind::Mixed)
    }
}

/// A run, checked.
#[derive(Debug, Clone)]
pub struct Plan {
    pub url: String,
    pub users: usize,
    pub run_time: Duration,
    pub scenario: ScenarioKind,
    pub tool: Option<String>,
    pub args: Value,
    pub budget_p95_ms: f64,
    pub max_degradation: f64,
    pub latency_floor_ms: f64,
    pub report_dir: Option<PathBuf>,
}

impl Args {
    pub fn into_plan(self) -> Result<Plan, String> {
        let url = reqwest::Url::parse(&self.url).map_err(|e| format!("--url {}: {e}", self.url))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("--url {}: must be http or https", self.url));
        }
        if self.users == 0 {
            return Err("--users must be at least 1".into());
        }
        if self.run_time < Duration::from_secs(1) {
            return Err("--run-time must be at least 1s".into());
        }
        for (flag, value) in [
            ("--budget-p95-ms", self.budget_p95_ms),
            ("--max-degradation", self.max_degradation),
            ("--latency-floor-ms", self.latency_floor_ms),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(format!("{flag} must be a positive number, got {value}"));
            }
        }
        if self.tool.is_some() && !self.scenario.calls_a_tool() {
            return Err("--tool needs --scenario call or mixed".into());
        }
        Ok(Plan {
            url: self.url.trim_end_matches('/').to_owned(),
            users: self.users,
            run_time: self.run_time,
            scenario: self.scenario,
            tool: self.tool,
            args: self.args,
            budget_p95_ms: self.budget_p95_ms,
            max_degradation: self.max_degradation,
            latency_floor_ms: self.latency_floor_ms,
            report_dir: self.report,
        })
    }
}

/// `30`, `30s`, `2m`, `1m30s`, `1h`.
pub fn parse_run_time(text: &str) -> Result<Duration, String> {
    let bad = || format!("'{text}' is not a duration (like 30, 30s, 2m, 1m30s)");
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return Err(bad()),
        };
        let n: u64 = number.parse().map_err(|_| bad())?;
        total += n * unit;
        number.clear();
    }
    if !number.is_empty() || text.is_empty() {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

fn parse_args_json(text: &str) -> Result<Value, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if !value.is_object() {
        return Err("must be a JSON object".into());
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_times() {
        assert_eq!(parse_run_time("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_run_time("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_run_time("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_run_time("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_run_time("10x").is_err());
        assert!(parse_run_time("m").is_err());
        assert!(parse_run_time("").is_err());
    }

    #[test]
    fn options_are_checked() {
        let args = |extra: &[&str]| {
            let mut argv = vec!["loadtest", "--url", "http://127.0.0.1:8001"];
            argv.extend_from_slice(extra);
            Args::try_parse_from(argv).unwrap().into_plan()
        };
        let plan = args(&[]).unwrap();
        assert_eq!(plan.users, 100);
        assert_eq!(plan.scenario, ScenarioKind::Mixed);
        assert_eq!(plan.run_time, Duration::from_secs(30));
        assert!(args(&["--users", "0"]).is_err());
        assert!(args(&["--budget-p95-ms", "0"]).is_err());
        assert!(args(&["--scenario", "tools", "--tool", "echo"]).is_err());
        assert!(Args::try_parse_from(["loadtest", "--url", "http://h", "--args", "[1]"]).is_err());
        assert!(
            Args::try_parse_from(["loadtest", "--url", "ftp://h"])
                .unwrap()
                .into_plan()
                .is_err()
        );
    }
}
