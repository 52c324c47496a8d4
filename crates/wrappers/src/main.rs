//! `mcp-wrappers`: the command line, and the only place errors become exit codes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use wrappers::generate::{self, Kind};
use wrappers::registry::Entry;
use wrappers::{context, fetch};

/// Generates clients for the tools of mcp-http-gateway services — bash scripts, a Python
/// module, a CLI, Claude Code slash commands and a skill — from each service's GET /tools.
#[derive(Parser)]
#[command(name = "mcp-wrappers", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Fetch GET /tools of each service and render its wrappers into <out>/<service>/<type>/.
    ///
    /// Exit codes: 0 done; 1 --check found files that would change; 2 bad options, registry or
    /// templates (nothing written); 3 partial: some service could not be fetched or generated
    /// (the others were).
    Generate(GenerateArgs),
}

#[derive(Args)]
struct GenerateArgs {
    /// The registry of services (name, url, enabled).
    #[arg(long, default_value = "config/services.yaml")]
    registry: PathBuf,
    /// The output folder.
    #[arg(long, default_value = "wrappers")]
    out: PathBuf,
    /// Only this service (repeatable); a named service is generated even if not enabled.
    #[arg(long = "service", value_name = "NAME")]
    services: Vec<String>,
    /// Only these types (repeatable); default all.
    #[arg(long = "type", value_name = "TYPE", value_enum)]
    types: Vec<Kind>,
    /// A folder of templates overriding the embedded ones by file name (scripts_tool.sh.j2,
    /// python_client.py.j2, cli.py.j2, command.md.j2, skill.md.j2).
    #[arg(long)]
    templates: Option<PathBuf>,
    /// Write nothing; exit 1 if generating would add, change or remove any file.
    #[arg(long)]
    check: bool,
}

const DRIFT: u8 = 1;
const USAGE: u8 = 2;
const PARTIAL: u8 = 3;

fn main() -> ExitCode {
    let Command::Generate(args) = Cli::parse().command;
    match generate_all(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("mcp-wrappers: {e:#}");
            ExitCode::from(USAGE)
        }
    }
}

/// Generates every selected service; a service that fails is reported and skipped.
fn generate_all(args: &GenerateArgs) -> anyhow::Result<u8> {
    let started = Instant::now();
    let registry = wrappers::registry::load(&args.registry)?;
    let services = registry.select(&args.services)?;
    let env = generate::environment(args.templates.as_deref())?;
    let mut kinds = if args.types.is_empty() {
        Kind::ALL.to_vec()
    } else {
        args.types.clone()
    };
    kinds.sort();
    kinds.dedup();
    // Fetch every service at once: a slow or dead one costs its retries, not everyone's.
    let fetched: Vec<(Entry, Result<contract::ToolsResponse, String>)> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = services
                .iter()
                .map(|entry| (entry, scope.spawn(|| fetch::tools(&entry.url))))
                .collect();
            handles
                .into_iter()
                .map(|(entry, h)| {
                    let result = h.join().unwrap_or_else(|_| Err("fetch panicked".into()));
                    (entry.clone(), result)
                })
                .collect()
        });
    let mut partial = false;
    let mut drift = false;
    for (entry, result) in fetched {
        let outcome = result.and_then(|tools| {
            let scripts_dir = scripts_dir(&args.out, &entry.name);
            let ctx = context::build(&tools, &entry.url, scripts_dir).map_err(|e| e.to_string())?;
            let files = generate::files(&env, &ctx, &kinds).map_err(|e| e.to_string())?;
            let changes = generate::sync(&args.out, &entry.name, &kinds, &files, args.check)
                .map_err(|e| e.to_string())?;
            Ok((ctx.tools.len(), files.len(), changes))
        });
        match outcome {
            Ok((tools, files, changes)) => {
                let (added, changed, removed) = if args.check {
                    ("would be added", "would change", "would be removed")
                } else {
                    ("added", "changed", "removed")
                };
                eprintln!(
                    "{}: {tools} tools, {files} files in {} — {} {added}, {} {changed}, {} {removed}",
                    entry.name,
                    args.out.join(&entry.name).display(),
                    changes.added.len(),
                    changes.changed.len(),
                    changes.stale.len()
                );
                if args.check {
                    for (what, paths) in [
                        ("new", &changes.added),
                        ("changed", &changes.changed),
                        ("stale", &changes.stale),
                    ] {
                        for path in paths {
                            eprintln!("  {what}: {}", path.display());
                        }
                    }
                }
                drift |= !changes.is_empty();
            }
            Err(why) => {
                partial = true;
                eprintln!("warning: {} ({}) skipped: {why}", entry.name, entry.url);
            }
        }
    }
    eprintln!(
        "mcp-wrappers: done in {} ms{}",
        started.elapsed().as_millis(),
        if partial {
            " (partial: some services were skipped)"
        } else {
            ""
        }
    );
    Ok(if partial {
        PARTIAL
    } else if args.check && drift {
        DRIFT
    } else {
        0
    })
}

/// The scripts folder as commands and skills run it: `--out` as given, when its path is plain
/// (letters, digits, `._/-`); else they call the gateway with curl.
fn scripts_dir(out: &std::path::Path, service: &str) -> Option<String> {
    let dir = out.join(service).join("scripts");
    let text = dir.to_str()?.trim_start_matches("./").to_owned();
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c));
    plain.then_some(text)
}
