//! `conformance`: property-tests a running service against the mcp-http-gateway contract.
//! Exit 0 only when every check passed; 1 when one failed; 2 when the run could not start.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// Checks any running service — ours or anyone's, in any language — against the committed
/// OpenAPI contract and says precisely what is wrong, with a curl command per failure.
#[derive(Parser)]
#[command(name = "conformance", version)]
struct Cli {
    /// Base URL of the service, e.g. http://127.0.0.1:8001
    #[arg(long)]
    url: String,
    /// OpenAPI document to test against (default: the committed openapi/openapi.yaml, built in).
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    /// Generated inputs per tool, for valid and for invalid inputs each.
    #[arg(long, default_value_t = 256)]
    cases: u32,
    /// Seed for the generated inputs; the same seed replays the same inputs (default: random).
    #[arg(long)]
    seed: Option<u64>,
    /// Test only this tool (repeatable).
    #[arg(long = "only-tool", value_name = "NAME")]
    only_tool: Vec<String>,
    /// Do not call this tool (repeatable), e.g. one that is slow or reaches the network.
    #[arg(long = "skip-tool", value_name = "NAME")]
    skip_tool: Vec<String>,
    /// Known-good arguments for a tool, called before the generated ones (repeatable), e.g.
    /// --example 'get_current_time={"timezone": "UTC"}'. A tool none of whose valid calls runs
    /// is reported not exercised; an example is how one whose schema cannot say what runs gets
    /// exercised.
    #[arg(long = "example", value_name = "TOOL=JSON", value_parser = parse_example)]
    example: Vec<(String, serde_json::Value)>,
    /// Also call tools annotated destructiveHint: true.
    #[arg(long)]
    allow_destructive: bool,
    /// Also call tools annotated openWorldHint: true (they may reach outside this machine).
    #[arg(long)]
    allow_open_world: bool,
    /// Call no tool: check schemas, status codes, discovery only.
    #[arg(long)]
    no_call: bool,
    /// Write a JUnit XML report here.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write the full report as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also check the MCP surface at /mcp against the REST one.
    #[arg(long)]
    mcp: bool,
    /// The body limit to exceed for the 413 check (default: x-limits.max_body_bytes from /openapi.json).
    #[arg(long, value_name = "BYTES")]
    max_body_bytes: Option<u64>,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// No progress lines on stderr.
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let seed = cli.seed.unwrap_or_else(|| {
        u64::from_le_bytes(
            uuid::Uuid::new_v4().as_bytes()[..8]
                .try_into()
                .unwrap_or_default(),
        )
    });
    let options = conformance::Options {
        url: cli.url,
        spec: cli.spec,
        cases: cli.cases,
        seed,
        only_tools: cli.only_tool,
        skip_tools: cli.skip_tool,
        examples: cli.example,
        allow_destructive: cli.allow_destructive,
        allow_open_world: cli.allow_open_world,
        no_call: cli.no_call,
        mcp: cli.mcp,
        max_body_bytes: cli.max_body_bytes,
        timeout: Duration::from_secs(cli.timeout),
        progress: !cli.quiet,
    };
    let report = match conformance::run(options) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", report.render());
    let mut write_failed = false;
    if let Some(path) = &cli.junit {
        write_failed |= write(path, &report.junit());
    }
    if let Some(path) = &cli.json {
        write_failed |= write(
            path,
            &serde_json::to_string_pretty(&report).unwrap_or_default(),
        );
    }
    if !report.ok() {
        println!("replay with --seed {seed}");
        ExitCode::FAILURE
    } else if write_failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Writes a report file, creating its folder; true when that failed.
fn write(path: &PathBuf, text: &str) -> bool {
    let result = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, text));
    if let Err(e) = &result {
        eprintln!("conformance: cannot write {}: {e}", path.display());
    }
    result.is_err()
}

/// `TOOL=JSON` with a JSON object.
fn parse_example(text: &str) -> Result<(String, serde_json::Value), String> {
    let (tool, json) = text
        .split_once('=')
        .ok_or("expected TOOL=JSON, e.g. echo={\"message\": \"hi\"}")?;
    let arguments: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("the arguments of '{tool}': {e}"))?;
    if !arguments.is_object() {
        return Err(format!("the arguments of '{tool}' must be a JSON object"));
    }
    Ok((tool.to_owned(), arguments))
}
