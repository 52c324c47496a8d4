//! The `search` provider: lexical full-text search (BM25, with tantivy) over local folders,
//! built into the gateway so a service has working tools with nothing else installed.
//!
//! - `roots.rs`: the folders, which files count (`.gitignore`, globs), path confinement;
//! - `tokenize.rs`: tokens for code (camelCase, snake_case, punctuation), language by extension;
//! - `sections.rs`: docs split by heading (Markdown, reStructuredText, plain text);
//! - `index.rs`: the schema, the on-disk index and its manifest (reused on restart);
//! - `indexer.rs`: the thread that builds the index in the background and follows the watcher;
//! - `status.rs`: progress and state for /health;
//! - `tools.rs`: the tools.
//!
//! The dependency /health lists for it is the index: `unknown` while the first pass runs (the
//! service is `degraded`, its tools answer from what is indexed so far), `connected` once
//! ready, `unavailable` when the index cannot be opened or written.

mod index;
mod indexer;
mod roots;
mod sections;
mod status;
mod tokenize;
mod tools;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use contract::{DependencyState, DependencyStatus, IndexState, SearchIndexReport, ToolSchema};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::{Notify, watch};

use self::index::SearchIndex;
use self::indexer::{Indexer, Work};
use self::roots::Root;
use self::status::Status;
use super::{
    CallContext, JsonObject, Provider, ProviderError, ProviderHooks, ProviderReport, ToolError,
    ToolOutput,
};
use crate::config::{RootKind, SearchProviderConfig, ServiceConfig, expand_env};
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

pub struct SearchProvider {
    name: String,
    roots: Arc<Vec<Root>>,
    location: std::path::PathBuf,
    max_file_bytes: u64,
    max_read_bytes: u64,
    watch: bool,
    tools: Vec<ToolSchema>,
    setup_hint: Option<String>,
    status: Arc<Status>,
    index: Arc<OnceLock<Arc<SearchIndex>>>,
    stop: Arc<AtomicBool>,
    work: Mutex<Option<std::sync::mpsc::Sender<Work>>>,
    /// True once the indexer thread has ended.
    done: watch::Receiver<bool>,
    done_tx: Mutex<Option<watch::Sender<bool>>>,
    health_changed: Arc<Notify>,
    shutdown: Shutdown,
}

impl SearchProvider {
    pub fn new(
        service: &ServiceConfig,
        config: &SearchProviderConfig,
        hooks: ProviderHooks,
    ) -> Result<Self, ProviderError> {
        let name = config.common.name.as_str().to_owned();
        let error = |message: String| ProviderError::Config {
            provider: name.clone(),
            message,
        };
        let roots =
            roots::resolve(&config.roots, &service.base_dir).map_err(|e| error(e.to_string()))?;
        let location = match &config.index_dir {
            Some(dir) => service
                .base_dir
                .join(expand_env(dir).map_err(|e| error(format!("index_dir: {e}")))?),
            None => index::default_location(service.service.name.as_str(), &name, &roots),
        };
        let code = roots.iter().any(|r| r.kind == RootKind::Code);
        let docs = roots.iter().any(|r| r.kind == RootKind::Docs);
        let (done_tx, done) = watch::channel(false);
        Ok(SearchProvider {
            tools: tools::schemas(code, docs),
            roots: Arc::new(roots),
            location,
            max_file_bytes: config.max_file_bytes,
            max_read_bytes: config.max_read_bytes,
            watch: config.watch,
            setup_hint: config.common.setup_hint.clone(),
            status: Arc::default(),
            index: Arc::default(),
            stop: Arc::default(),
            work: Mutex::new(None),
            done,
            done_tx: Mutex::new(Some(done_tx)),
            health_changed: hooks.health_changed.clone(),
            shutdown: hooks.shutdown.child(),
            name,
        })
    }

    fn dependency_status(&self) -> DependencyStatus {
        let (status, error) = dependency_of(&self.status.report());
        DependencyStatus {
            status,
            response_time_ms: Some(0),
            error: error.map(|e| super::with_hint(&e, self.setup_hint.as_deref())),
            last_ok: None,
            checked_at: None,
        }
    }
}

/// The index as a dependency: `unknown` (the service degraded) while the first pass runs or a
/// root is missing, `unavailable` when the index failed, `connected` once ready.
fn dependency_of(report: &SearchIndexReport) -> (DependencyState, Option<String>) {
    match report.state {
        IndexState::Failed => (DependencyState::Unavailable, report.error.clone()),
        IndexState::Building => (
            DependencyState::Unknown,
            Some(format!(
                "indexing: {} of {} files ({}%)",
                report.files_done, report.files_total, report.percent
            )),
        ),
        IndexState::Ready if !report.missing_roots.is_empty() => (
            DependencyState::Unknown,
            Some(format!(
                "root(s) missing: {}",
                report.missing_roots.join(", ")
            )),
        ),
        IndexState::Ready => (DependencyState::Connected, None),
    }
}

impl Provider for SearchProvider {
    fn name(&self) -> &str {
        &self.name
    }

    /// Starts the indexer thread and returns at once: the first pass runs in the background.
    fn start(&self) -> BoxFuture<'_, ()> {
        let Some(done_tx) = self.done_tx.write_unpoisoned().take() else {
            return futures::future::ready(()).boxed();
        };
        let (sender, receiver) = std::sync::mpsc::channel();
        *self.work.write_unpoisoned() = Some(sender.clone());
        let indexer = Indexer {
            roots: self.roots.clone(),
            location: self.location.clone(),
            max_file_bytes: self.max_file_bytes,
            watch: self.watch,
            status: self.status.clone(),
            index: self.index.clone(),
            stop: self.stop.clone(),
            health_changed: self.health_changed.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("search-{}", self.name))
            .spawn(move || {
                indexer.run(sender, receiver);
                let _ = done_tx.send(true);
            });
        if let Err(e) = spawned {
            self.status
                .fail(format!("cannot start the indexer thread: {e}"));
        }
        // Shutdown waits for the thread: it is told to stop and awaited as a tracked task.
        let shutdown = self.shutdown.clone();
        let stop = self.stop.clone();
        let work = self.work.write_unpoisoned().clone();
        let mut done = self.done.clone();
        self.shutdown.spawn(async move {
            shutdown.cancelled().await;
            stop.store(true, Ordering::Relaxed);
            if let Some(work) = work {
                let _ = work.send(Work::Stop);
            }
            let _ = done.wait_for(|d| *d).await;
        });
        futures::future::ready(()).boxed()
    }

    fn tools(&self) -> Vec<ToolSchema> {
        self.tools.clone()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: JsonObject,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move {
            let Some(index) = self.index.get().cloned() else {
                let why = self
                    .status
                    .error()
                    .unwrap_or_else(|| "the search index is being opened".into());
                return Err(ToolError::Unavailable(super::with_hint(
                    &why,
                    self.setup_hint.as_deref(),
                )));
            };
            let roots = self.roots.clone();
            let max_read_bytes = self.max_read_bytes;
            let tool_name = tool.to_owned();
            // Index reads and file reads block: off the runtime's workers.
            let task = tokio::task::spawn_blocking(move || {
                let context = tools::Context {
                    index: &index,
                    roots: &roots,
                    max_read_bytes,
                };
                tools::call(&context, &tool_name, &args)
            });
            match tokio::time::timeout(cx.timeout, task).await {
                Ok(Ok(result)) => result,
                Ok(Err(e)) => Err(ToolError::Execution(format!("search failed: {e}"))),
                Err(_) => Err(ToolError::Timeout {
                    tool: tool.to_owned(),
                    ms: cx.timeout.as_millis() as u64,
                }),
            }
        }
        .map(|r| r.map(ToolOutput::Data))
        .boxed()
    }

    fn health(&self) -> BoxFuture<'_, Vec<(String, DependencyStatus)>> {
        futures::future::ready(vec![(self.name.clone(), self.dependency_status())]).boxed()
    }

    fn report(&self) -> ProviderReport {
        ProviderReport {
            index: Some(self.status.report()),
            ..ProviderReport::default()
        }
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        async move {
            self.shutdown.cancel();
            self.stop.store(true, Ordering::Relaxed);
            if let Some(work) = self.work.write_unpoisoned().take() {
                let _ = work.send(Work::Stop);
            }
            // Never started: no thread to wait for.
            if self.done_tx.read_unpoisoned().is_some() {
                return;
            }
            let mut done = self.done.clone();
            let _ = done.wait_for(|d| *d).await;
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_is_a_dependency_known_only_once_ready() {
        let status = Status::default();
        status.pass_started(200);
        status.files_done.store(50, Ordering::Relaxed);
        let (state, error) = dependency_of(&status.report());
        assert_eq!(
            state,
            DependencyState::Unknown,
            "building: the service is degraded"
        );
        assert_eq!(error.as_deref(), Some("indexing: 50 of 200 files (25%)"));
        status.set_state(IndexState::Ready);
        assert_eq!(
            dependency_of(&status.report()),
            (DependencyState::Connected, None)
        );
        status.set_missing_roots(vec!["/gone".into()]);
        assert_eq!(dependency_of(&status.report()).0, DependencyState::Unknown);
        status.fail("disk full".into());
        assert_eq!(
            dependency_of(&status.report()),
            (DependencyState::Unavailable, Some("disk full".into()))
        );
    }
}
