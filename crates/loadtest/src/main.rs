//! `loadtest`: the command line. Runs the load or the overload test against one service,
//! writes the reports and prints the summary; the only place errors become exit codes
//! (0 every verdict passed, 1 a verdict failed, 2 the run could not be made).

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let args = loadtest::plan::Args::parse();
    let plan = match args.into_plan() {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("loadtest: {e}");
            return ExitCode::from(2);
        }
    };
    match loadtest::run(&plan).await {
        Ok(outcome) => {
            println!("{}", outcome.summary_markdown());
            if let Some(dir) = &plan.report_dir {
                eprintln!("loadtest: reports in {}", dir.display());
            }
            if outcome.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("loadtest: {e:#}");
            ExitCode::from(2)
        }
    }
}
