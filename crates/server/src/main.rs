//! `mcp-http-gateway`: the command line. Parses arguments and hands each subcommand to
//! [`mcp_http_gateway::commands`]; the only place errors become exit codes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use mcp_http_gateway::commands;
use mcp_http_gateway::config::LogFormat;
use mcp_http_gateway::runtime::{ConfigSource, StartPolicy};

/// mimalloc rather than glibc's malloc: the request path allocates small, short-lived blocks
/// on two threads at once, where glibc's arenas spent a tenth of the CPU (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Read a service configuration the way `serve` does, for scripts.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Read (or, for an installer, rewrite) the registry of services (config/services.yaml),
    /// for scripts.
    #[command(subcommand)]
    Registry(RegistryCommand),
    /// Print the contract's OpenAPI 3.1 document (the content of openapi/openapi.yaml).
    Openapi {
        /// yaml (as committed) or json.
        #[arg(long, default_value = "yaml", value_parser = ["yaml", "json"])]
        format: String,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print one setting of a service file, defaults applied, in the file's units
    /// (e.g. `limits.shutdown_grace_ms`, `service.port`, `providers.0.name`): scalars as plain
    /// text, lists and maps as JSON. Exit 1 if the file is invalid or has no such setting.
    Get {
        /// The service's YAML file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// A dotted path into the configuration.
        #[arg(value_name = "KEY")]
        key: String,
    },
}

#[derive(Subcommand)]
enum RegistryCommand {
    /// Print one line per service: NAME<TAB>URL<TAB>ENABLED (true or false). Exit 1 if the
    /// file is invalid.
    List {
        /// The registry file (config/services.yaml).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Print the registry FILE with every service not among NAMEs disabled.
    ///
    /// Each service whose name is not among NAMEs gets `enabled: false` (its `enabled` value
    /// replaced, or the key added where the entry has none); the kept services are left as
    /// they are, and the file's comments and layout are kept. Exit 1, printing nothing, if the
    /// file is invalid or a NAME is not in it (each such NAME is named). FILE is not changed:
    /// redirect the output, e.g.
    /// `registry keep-only config/services.yaml seekr docwell > installed/services.yaml`.
    KeepOnly {
        /// The registry file (config/services.yaml).
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// The services to keep as they are.
        #[arg(value_name = "NAME", required = true)]
        names: Vec<String>,
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
    /// Stop every service and exit 1 when one cannot start. Without it a service that cannot
    /// start is logged and its port stays closed while the others serve; the exit status is 1
    /// only when none started.
    #[arg(long)]
    strict: bool,
    /// Threads that run requests and provider connections, shared by every service (default:
    /// one per core, or TOKIO_WORKER_THREADS). On a small machine whose tools run as stdio
    /// children, fewer leave the children more CPU (docs/performance.md, "Goals").
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    worker_threads: Option<u16>,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Openapi { format } => commands::openapi(format == "json"),
        Command::CheckConfig { paths } => commands::check_config(&paths),
        Command::Config(ConfigCommand::Get { file, key }) => commands::config_get(&file, &key),
        Command::Registry(RegistryCommand::List { file }) => commands::registry_list(&file),
        Command::Registry(RegistryCommand::KeepOnly { file, names }) => {
            commands::registry_keep_only(&file, &names)
        }
        Command::Serve(args) => {
            let source = match (args.config, args.config_dir) {
                (Some(file), _) => ConfigSource::File(file),
                (None, Some(dir)) => ConfigSource::Dir(dir),
                (None, None) => unreachable!("clap requires --config or --config-dir"),
            };
            let policy = if args.strict {
                StartPolicy::Strict
            } else {
                StartPolicy::KeepOthers
            };
            let workers = args.worker_threads.map(usize::from);
            match commands::serve(source, args.log_format, policy, workers) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("mcp-http-gateway: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
