//! The indexer: one dedicated thread per provider that owns all writing — the first pass over
//! the roots (in the background: the service serves at once, answers cover what is indexed so
//! far) and then the changes the file watcher reports, batched. Being a plain thread, it never
//! holds a runtime worker; it checks the stop flag between files and commits before it ends.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use contract::{IndexState, WatcherState};
use notify::{RecursiveMode, Watcher};
use tokio::sync::Notify;

use super::index::{Outcome, SearchIndex, id};
use super::roots::Root;
use super::status::Status;

/// Changes arriving within this long of each other are applied (and committed) together.
const BATCH: Duration = Duration::from_millis(100);
/// During the first pass, commit at least this often so progress is searchable and survives
/// a restart.
const COMMIT_EVERY: Duration = Duration::from_secs(2);

/// How long opening the index is retried (another provider of a reload releasing it).
const OPEN_RETRY: Duration = Duration::from_secs(10);

/// What the thread is asked to do.
pub enum Work {
    /// Something changed at these paths (from the watcher).
    Changed(Vec<PathBuf>),
    Stop,
}

/// Everything the thread needs.
pub struct Indexer {
    pub roots: Arc<Vec<Root>>,
    pub location: PathBuf,
    pub max_file_bytes: u64,
    pub watch: bool,
    pub status: Arc<Status>,
    pub index: Arc<OnceLock<Arc<SearchIndex>>>,
    pub stop: Arc<AtomicBool>,
    /// Told when the provider's health changed (ready, failed, a root gone).
    pub health_changed: Arc<Notify>,
}

impl Indexer {
    /// The thread's body: open, watch, first pass, then changes until [`Work::Stop`].
    pub fn run(self, sender: Sender<Work>, work: Receiver<Work>) {
        self.status
            .set_location(self.location.display().to_string());
        // On a reload the provider being replaced may still hold the index's writer lock
        // for a moment: try again for a while before calling the index failed.
        let mut opened = SearchIndex::open(&self.location);
        let deadline = Instant::now() + OPEN_RETRY;
        while opened.is_err() && Instant::now() < deadline && !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            opened = SearchIndex::open(&self.location);
        }
        let index = match opened {
            Ok(index) => Arc::new(index),
            Err(e) => {
                tracing::error!(location = %self.location.display(), error = %e, "search index cannot be opened");
                self.status.fail(e.to_string());
                self.health_changed.notify_one();
                return;
            }
        };
        let _ = self.index.set(index.clone());
        // The watcher starts before the first pass, so nothing changed during it is missed.
        let _watcher = self.watch.then(|| self.start_watcher(sender)).flatten();
        self.first_pass(&index);
        if self.stop.load(Ordering::Relaxed) {
            self.commit(&index);
            return;
        }
        self.status.set_state(IndexState::Ready);
        self.health_changed.notify_one();
        tracing::info!(location = %self.location.display(), report = ?self.status.report(), "search index ready");
        while let Ok(first) = work.recv() {
            let mut paths = Vec::new();
            let mut next = Some(first);
            // Take what else arrives within the batch window.
            while let Some(w) = next.take() {
                match w {
                    Work::Stop => {
                        self.apply(&index, paths);
                        self.commit(&index);
                        return;
                    }
                    Work::Changed(p) => paths.extend(p),
                }
                match work.recv_timeout(BATCH) {
                    Ok(w) => next = Some(w),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            self.apply(&index, paths);
            self.commit(&index);
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
        }
    }

    fn start_watcher(&self, sender: Sender<Work>) -> Option<notify::RecommendedWatcher> {
        let handler = move |event: notify::Result<notify::Event>| {
            if let Ok(event) = event
                && !matches!(event.kind, notify::EventKind::Access(_))
            {
                let _ = sender.send(Work::Changed(event.paths));
            }
        };
        let mut watcher = match notify::recommended_watcher(handler) {
            Ok(w) => w,
            Err(e) => {
                self.status
                    .set_watcher(WatcherState::Failed, Some(format!("watcher: {e}")));
                return None;
            }
        };
        for root in self.roots.iter().filter(|r| r.exists()) {
            if let Err(e) = watcher.watch(&root.path, RecursiveMode::Recursive) {
                tracing::warn!(root = %root.path.display(), error = %e, "search: cannot watch root");
                self.status.set_watcher(
                    WatcherState::Failed,
                    Some(format!("watcher on {}: {e}", root.path.display())),
                );
                return Some(watcher);
            }
        }
        self.status.set_watcher(WatcherState::Watching, None);
        Some(watcher)
    }

    /// Every root reconciled with the index: new and changed files read, vanished ones
    /// removed; unchanged files (same size and mtime as in the manifest) cost a stat.
    fn first_pass(&self, index: &SearchIndex) {
        let mut missing = Vec::new();
        let mut files = Vec::new();
        for (i, root) in self.roots.iter().enumerate() {
            if !root.exists() {
                missing.push(root.path.display().to_string());
                continue;
            }
            files.extend(root.walk(&root.path, true).into_iter().map(|f| (i, f)));
        }
        self.status.set_missing_roots(missing);
        self.status.pass_started(files.len() as u64);
        let mut seen = std::collections::HashSet::new();
        let mut last_commit = Instant::now();
        for (i, file) in &files {
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            let root = &self.roots[*i];
            if let Some(name) = root.name_of(file) {
                seen.insert(id(root.kind, &name));
            }
            self.index_one(index, root, file);
            self.status.files_done.fetch_add(1, Ordering::Relaxed);
            if last_commit.elapsed() >= COMMIT_EVERY {
                self.commit(index);
                last_commit = Instant::now();
            }
        }
        // What the manifest has that the roots no longer do (a reused index).
        let gone: Vec<String> = index
            .files()
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        for id in gone {
            index.remove(&id);
        }
        self.commit(index);
    }

    fn index_one(&self, index: &SearchIndex, root: &Root, file: &Path) {
        match index.index_file(root, file, self.max_file_bytes) {
            Outcome::Skipped(why) => self.status.skipped(why),
            Outcome::Unchanged => {
                self.status.files_unchanged.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Indexed => {}
        }
    }

    /// The changes at `paths`: a folder is walked again, a file is read again (or removed
    /// when gone or now excluded), a `.gitignore` change rescans its root, a root that is
    /// gone loses its files.
    fn apply(&self, index: &SearchIndex, mut paths: Vec<PathBuf>) {
        paths.sort();
        paths.dedup();
        for path in paths {
            for root in self.roots.iter().filter(|r| path.starts_with(&r.path)) {
                if self.stop.load(Ordering::Relaxed) {
                    return;
                }
                let ignore_file = path
                    .file_name()
                    .is_some_and(|n| n == ".gitignore" || n == ".ignore");
                if path == root.path || ignore_file {
                    self.rescan(index, root, &root.path, true);
                } else if !path.exists() || !root.admits(&path) {
                    // Gone, or now ignored/excluded: whatever the index has there goes.
                    self.forget(index, root, &path);
                } else if path.is_dir() {
                    self.rescan(index, root, &path, true);
                } else {
                    self.index_one(index, root, &path);
                }
            }
        }
        let missing: Vec<String> = self
            .roots
            .iter()
            .filter(|r| !r.exists())
            .map(|r| r.path.display().to_string())
            .collect();
        if missing != self.status.missing_roots() {
            self.status.set_missing_roots(missing);
            self.health_changed.notify_one();
        }
    }

    /// The index's files at or under `path` removed.
    fn forget(&self, index: &SearchIndex, root: &Root, path: &Path) {
        self.rescan(index, root, path, false);
    }

    /// `dir` (a folder of `root`, or a path that no longer exists) made to match the disk:
    /// its files indexed, the index's files under it that the walk no longer finds removed.
    /// `look: false` takes it as empty (gone or ignored).
    fn rescan(&self, index: &SearchIndex, root: &Root, dir: &Path, look: bool) {
        let found = if look && dir.is_dir() {
            root.walk(dir, true)
        } else {
            Vec::new()
        };
        let Some(prefix) = root.name_of(dir) else {
            return;
        };
        let prefix_id = id(root.kind, &prefix);
        let found_ids: std::collections::HashSet<String> = found
            .iter()
            .filter_map(|f| root.name_of(f))
            .map(|n| id(root.kind, &n))
            .collect();
        let under = |k: &str| {
            let whole_kind = prefix.is_empty() && k.starts_with(&prefix_id);
            whole_kind || k == prefix_id || k.starts_with(&format!("{prefix_id}/"))
        };
        // Ids under a prefix are neighbours in the sorted manifest.
        let gone: Vec<String> = index
            .files()
            .range(prefix_id.clone()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(&prefix_id))
            .filter(|k| under(k) && !found_ids.contains(*k))
            .cloned()
            .collect();
        for id in gone {
            index.remove(&id);
        }
        for file in &found {
            self.index_one(index, root, file);
        }
    }

    fn commit(&self, index: &SearchIndex) {
        match index.commit() {
            Ok((documents, bytes)) => {
                let files = index.files().len() as u64;
                self.status.committed(files, documents, bytes);
            }
            Err(e) => {
                tracing::error!(error = %e, "search index commit failed");
                self.status.fail(e.to_string());
                self.health_changed.notify_one();
            }
        }
    }
}
