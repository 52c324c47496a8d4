//! What each subcommand of the binary does, returning its exit code; the command line itself
//! is parsed in `main.rs`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::config::{self, LogFormat, ServiceConfig};
use crate::runtime::{ConfigSource, StartPolicy};
use crate::shutdown::Shutdown;

mod keep_only;

use self::keep_only::KeepOnlyError;

/// `openapi`: the contract's document as YAML (as committed) or JSON.
pub fn openapi(json: bool) -> ExitCode {
    if json {
        println!("{:#}", contract::openapi::document_json());
    } else {
        print!("{}", contract::openapi::document_yaml());
    }
    ExitCode::SUCCESS
}

/// `check-config PATH…`: every file (or folder of files) loaded and its providers built, a line
/// per service; exit 1 if any is invalid.
pub fn check_config(paths: &[PathBuf]) -> ExitCode {
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
                    for warning in &c.warnings {
                        eprintln!("warning: {warning}");
                    }
                    for notice in &c.notices {
                        eprintln!("note: {notice}");
                    }
                    for warning in c.secret_warnings() {
                        eprintln!("{}: warning: {warning}", c.source);
                    }
                    let summary = format!(
                        "{}: ok: service '{}' on {}, {} provider(s)",
                        c.source,
                        c.service.name,
                        c.address(),
                        c.providers.len()
                    );
                    let unused = Shutdown::default();
                    crate::service::Service::new(c, unused.child(), unused.child())
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

/// `config get FILE KEY`: one setting, defaults applied, on one line.
pub fn config_get(file: &Path, key: &str) -> ExitCode {
    let answer = ServiceConfig::load(file)
        .map_err(|e| e.to_string())
        .and_then(|c| config::query::get(&c, key).map_err(|e| e.to_string()));
    match answer {
        Ok(value) => {
            println!("{value}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// `registry list FILE`: one line per service, `NAME<TAB>URL<TAB>ENABLED`.
pub fn registry_list(file: &Path) -> ExitCode {
    let shown = file.display().to_string();
    let registry = std::fs::read_to_string(file)
        .map_err(|source| contract::registry::RegistryError::Read {
            path: shown.clone(),
            source,
        })
        .and_then(|text| contract::registry::Registry::parse(&text, &shown));
    match registry {
        Ok(registry) => {
            for entry in registry.services {
                println!("{}\t{}\t{}", entry.name, entry.url, entry.enabled);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// `registry keep-only FILE NAME…`: the registry's text with every service but NAMEs disabled;
/// exit 1 (printing nothing) if the file is invalid or a NAME is not in it.
pub fn registry_keep_only(file: &Path, names: &[String]) -> ExitCode {
    let shown = file.display().to_string();
    let edited = std::fs::read_to_string(file)
        .map_err(|source| {
            KeepOnlyError::from(contract::registry::RegistryError::Read {
                path: shown.clone(),
                source,
            })
        })
        .and_then(|text| keep_only::keep_only(&text, &shown, names));
    match edited {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// `serve`: loads the configuration (errors before anything listens), sets up logging and
/// runs every service until a signal, on `worker_threads` threads (tokio's default: one per
/// core, or TOKIO_WORKER_THREADS).
pub fn serve(
    source: ConfigSource,
    log_format: Option<LogFormat>,
    policy: StartPolicy,
    worker_threads: Option<usize>,
) -> anyhow::Result<()> {
    let configs = source.load()?;
    let first = &configs[0].logging;
    crate::logging::init(log_format.unwrap_or(first.format), &first.level);
    for config in &configs {
        for warning in config.secret_warnings() {
            tracing::warn!(service = %config.service.name, "{warning}");
        }
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = worker_threads {
        runtime.worker_threads(n);
    }
    let runtime = runtime.enable_all().build()?;
    runtime.block_on(crate::runtime::run(source, configs, policy))?;
    Ok(())
}
