//! `conformance`: property-tests a running service against the mcp-http-gateway contract.
//! Exit 0 only when every check passed and the run tested what it lists; 1 when a check
//! failed, a listed tool was never exercised (unless --allow-not-exercised names it) or a
//! check ran no case without saying why; 2 when the run could not start.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// Checks any running service — ours or anyone's, in any language — against the committed
/// OpenAPI contract and says precisely what is wrong, with a curl command per failure; or,
/// with --grpc, a provider of the gRPC Provider contract (proto/mcpgateway/provider/v1).
#[derive(Parser)]
#[command(name = "conformance", version)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["url", "grpc"])))]
struct Cli {
    /// Base URL of the service, e.g. http://127.0.0.1:8001
    #[arg(long)]
    url: Option<String>,
    /// Check a gRPC provider at HOST:PORT (plaintext) instead of an HTTP service.
    #[arg(long, value_name = "HOST:PORT")]
    grpc: Option<String>,
    /// --grpc: a tool that outlives --deadline-ms when called with --slow-args, for the
    /// deadline check (not run without it).
    #[arg(long, value_name = "NAME", requires = "grpc")]
    slow_tool: Option<String>,
    /// --grpc: the arguments of --slow-tool, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}", value_parser = parse_object, requires = "slow_tool")]
    slow_args: serde_json::Value,
    /// --grpc: the deadline of the slow call, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    deadline_ms: u64,
    /// --grpc: how late after its deadline the slow call's answer may arrive, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 250)]
    deadline_margin_ms: u64,
    /// --grpc: how long to wait for a first event from StreamEvents, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 3000)]
    event_wait_ms: u64,
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
    /// Exit 0 even though this tool was never exercised (repeatable): no valid call of it ran,
    /// e.g. its backend is down on purpose. Without it, such a tool fails the run.
    #[arg(long = "allow-not-exercised", value_name = "NAME")]
    allow_not_exercised: Vec<String>,
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
    let report = match (&cli.grpc, &cli.url) {
        (Some(address), _) => {
            let options = conformance::grpc::GrpcOptions {
                slow_tool: cli.slow_tool.clone(),
                slow_args: cli.slow_args.clone(),
                deadline: Duration::from_millis(cli.deadline_ms),
                deadline_margin: Duration::from_millis(cli.deadline_margin_ms),
                event_wait: Duration::from_millis(cli.event_wait_ms),
                timeout: Duration::from_secs(cli.timeout),
                progress: !cli.quiet,
                ..conformance::grpc::GrpcOptions::new(address)
            };
            conformance::grpc::run(options)
        }
        (None, Some(url)) => run_http(&cli, url.clone()),
        (None, None) => unreachable!("clap requires --url or --grpc"),
    };
    let report = match report {
        Ok(report) => report,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", report.render());
    let gaps = report.gaps(&cli.allow_not_exercised);
    for gap in &gaps {
        println!("not tested: {gap}");
    }
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
        if cli.grpc.is_none() {
            println!("replay with --seed {}", report.seed);
        }
        ExitCode::FAILURE
    } else if !gaps.is_empty() {
        ExitCode::FAILURE
    } else if write_failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// The HTTP contract's checks.
fn run_http(cli: &Cli, url: String) -> Result<conformance::Report, String> {
    let seed = cli.seed.unwrap_or_else(|| {
        u64::from_le_bytes(
            uuid::Uuid::new_v4().as_bytes()[..8]
                .try_into()
                .unwrap_or_default(),
        )
    });
    let options = conformance::Options {
        url,
        spec: cli.spec.clone(),
        cases: cli.cases,
        seed,
        only_tools: cli.only_tool.clone(),
        skip_tools: cli.skip_tool.clone(),
        examples: cli.example.clone(),
        allow_destructive: cli.allow_destructive,
        allow_open_world: cli.allow_open_world,
        no_call: cli.no_call,
        mcp: cli.mcp,
        max_body_bytes: cli.max_body_bytes,
        timeout: Duration::from_secs(cli.timeout),
        progress: !cli.quiet,
    };
    conformance::run(options)
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

/// A JSON object.
fn parse_object(text: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str(text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value),
        Ok(_) => Err("expected a JSON object, e.g. {\"ms\": 5000}".into()),
        Err(e) => Err(e.to_string()),
    }
}
