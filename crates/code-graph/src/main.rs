//! `code-graph-index`: indexes a repository into a Bolt database for the code-graph-rag tools.
//! Parses every Rust, Python and TypeScript/JavaScript file (tree-sitter), builds the graph in
//! code-graph-rag's schema, replaces the project's previous graph with it, and prints what it
//! wrote and how long each step took.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;

use code_graph::build::{Input, Project, build};
use code_graph::graph::{Label, Rel};
use code_graph::lang::parse;
use code_graph::walk::walk;
use code_graph::write::{Target, WriteError, write};

#[derive(Parser)]
#[command(
    name = "code-graph-index",
    version,
    about = "Index a repository (Rust, Python, TypeScript/JavaScript) into a Bolt database in code-graph-rag's schema"
)]
struct Args {
    /// The repository to index.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// The project's name: the root of every qualified name (default: the repository folder's name).
    #[arg(long)]
    project: Option<String>,
    /// The Bolt database.
    #[arg(
        long,
        env = "CODE_GRAPH_BOLT_URI",
        default_value = "bolt://127.0.0.1:7687"
    )]
    uri: String,
    #[arg(long, env = "CODE_GRAPH_BOLT_USER", default_value = "root")]
    user: String,
    /// The environment variable holding the password.
    #[arg(long, default_value = "CODE_GRAPH_BOLT_PASSWORD")]
    password_env: String,
    /// Rows per UNWIND query.
    #[arg(long, default_value_t = 1000)]
    batch_size: usize,
    /// Files larger than this are skipped (bytes).
    #[arg(long, default_value_t = 2_000_000)]
    max_file_bytes: u64,
    /// Parse and build, print the counts, write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Args::parse();
    let started = Instant::now();
    let root = std::fs::canonicalize(&args.repo)
        .with_context(|| format!("repository {}", args.repo.display()))?;
    let project = match args.project {
        Some(p) => p,
        None => root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .context("the repository folder has no name: pass --project")?,
    };
    anyhow::ensure!(
        !project.is_empty() && !project.contains(['.', '/']),
        "the project name '{project}' may not be empty or contain '.' or '/' (qualified names use them)"
    );

    let found = walk(&root, args.max_file_bytes)?;
    let mut inputs = Vec::with_capacity(found.files.len());
    let mut unreadable = 0usize;
    for f in &found.files {
        // Not UTF-8 (or unreadable): skipped and counted, not fatal.
        let Ok(text) = std::fs::read_to_string(&f.abs) else {
            unreadable += 1;
            continue;
        };
        let facts = parse(f.lang, &text).with_context(|| f.rel.clone())?;
        inputs.push(Input {
            rel: f.rel.clone(),
            lang: f.lang,
            facts,
        });
    }
    let parsed = started.elapsed();
    let graph = build(
        &Project {
            name: &project,
            root: &root,
        },
        &inputs,
    );
    let built = started.elapsed();
    eprintln!(
        "code-graph-index: {} files parsed in {} ms ({} skipped as too large, {} unreadable), graph built in {} ms: \
         {} modules, {} classes, {} functions, {} methods; {} CALLS, {} IMPORTS, {} INHERITS",
        inputs.len(),
        parsed.as_millis(),
        found.too_large.len(),
        unreadable,
        (built - parsed).as_millis(),
        graph.count(Label::Module),
        graph.count(Label::Class),
        graph.count(Label::Function),
        graph.count(Label::Method),
        graph.count_rel(Rel::Calls),
        graph.count_rel(Rel::Imports),
        graph.count_rel(Rel::Inherits),
    );
    if args.dry_run {
        return Ok(());
    }
    // No password is not an error by itself (a database may not ask for one), but a refused
    // login then says where the password was looked for.
    let password = std::env::var(&args.password_env).unwrap_or_default();
    let password_hint = if password.is_empty() {
        format!("no password: ${} is not set or empty", args.password_env)
    } else {
        format!("the password from ${}", args.password_env)
    };
    let target = Target {
        uri: args.uri.clone(),
        user: args.user,
        password,
        batch_size: args.batch_size,
    };
    let w = match write(&project, &graph, &target).await {
        Err(e @ WriteError::Login { .. }) => return Err(anyhow::anyhow!("{e} ({password_hint})")),
        other => other?,
    };
    eprintln!(
        "code-graph-index: project '{project}' written to {}: {} old nodes deleted in {} ms, {} nodes and {} relationships created in {} ms; {} ms in all",
        args.uri,
        w.deleted,
        w.delete_time.as_millis(),
        w.nodes,
        w.relationships,
        w.write_time.as_millis(),
        started.elapsed().as_millis()
    );
    Ok(())
}
