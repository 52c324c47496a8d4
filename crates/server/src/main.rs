//! `mcp-http-gateway`: the command line. Parses arguments, loads configuration, and hands
//! over to the runtime; the only place errors become exit codes.

mod clock;
mod config;
mod dependency;
mod http;
mod legacy_sse;
mod lifecycle;
mod logging;
mod mcp_gate;
mod mcp_sessions;
mod mcp_surface;
mod provider;
mod rate_limit;
mod registry;
mod runtime;
mod service;
mod service_doc;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::config::{LogFormat, ServiceConfig};
use crate::runtime::ConfigSource;

/// Serves MCP servers (and other tool providers) behind one HTTP contract: GET /tools,
/// POST /call-tool, GET /health, OpenAPI at /openapi.json and Swagger UI at /docs.
#[derive(Parser)]
#[command(name = "mcp-http-gateway", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one service (--config) or every service of a folder (--config-dir), each on its
    /// own port, until SIGTERM/SIGINT (drain, then exit 0). SIGHUP re-reads the configuration.
    Serve(ServeArgs),
    /// Validate configuration files (or folders of them) without starting anything; exit 1 if
    /// any is invalid, printing file:line:column: what is wrong.
    CheckConfig {
        /// Service YAML files, or folders whose *.yaml files are services.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// Print the contract's OpenAPI 3.1 document (the content of openapi/openapi.yaml).
    Openapi {
        /// yaml (as committed) or json.
        #[arg(long, default_value = "yaml", value_parser = ["yaml", "json"])]
        format: String,
    },
}

#[derive(Args)]
struct ServeArgs {
    /// One service's YAML file.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "config_dir",
        required_unless_present = "config_dir"
    )]
    config: Option<PathBuf>,
    /// A folder: every *.yaml in it (but services.yaml) is a service.
    #[arg(long, value_name = "DIR")]
    config_dir: Option<PathBuf>,
    /// Log format; overrides logging.format of the configuration.
    #[arg(long, value_enum, value_name = "FORMAT")]
    log_format: Option<LogFormat>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Openapi { format } => {
            if format == "json" {
                println!("{:#}", contract::openapi::document_json());
            } else {
                print!("{}", contract::openapi::document_yaml());
            }
            ExitCode::SUCCESS
        }
        Command::CheckConfig { paths } => check_config(&paths),
        Command::Serve(args) => match serve(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcp-http-gateway: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn check_config(paths: &[PathBuf]) -> ExitCode {
    let mut failed = false;
    for path in paths {
        let loaded = if path.is_dir() {
            config::load_dir(path)
        } else {
            ServiceConfig::load(path).map(|c| vec![c])
        };
        match loaded.map_err(|e| e.to_string()).and_then(|configs| {
            configs
                .into_iter()
                .map(|c| {
                    let summary = format!(
                        "{}: ok: service '{}' on {}:{}, {} provider(s)",
                        c.source,
                        c.service.name,
                        c.service.host,
                        c.service.port.0,
                        c.providers.len()
                    );
                    service::Service::new(c)
                        .map(|_| summary)
                        .map_err(|e| e.to_string())
                })
                .collect::<Result<Vec<_>, _>>()
        }) {
            Ok(lines) => lines.iter().for_each(|l| println!("{l}")),
            Err(e) => {
                eprintln!("{e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let source = match (args.config, args.config_dir) {
        (Some(file), _) => ConfigSource::File(file),
        (None, Some(dir)) => ConfigSource::Dir(dir),
        (None, None) => anyhow::bail!("give --config FILE or --config-dir DIR"),
    };
    // Configuration errors are reported before anything listens.
    let configs = source.load()?;
    let first = &configs[0].logging;
    logging::init(args.log_format.unwrap_or(first.format), &first.level);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(runtime::run(source, configs))?;
    Ok(())
}
