//! What the indexer reports, shared with the provider: progress of the current pass, the
//! index's size, skipped files, missing roots and the watcher — read by /health without
//! waiting for the indexer.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use contract::{IndexState, SearchIndexReport, SkippedFiles, WatcherState};

use super::index::Skip;
use crate::sync::Unpoisoned;

#[derive(Default)]
pub struct Status {
    pub files_done: AtomicU64,
    pub files_total: AtomicU64,
    pub files_unchanged: AtomicU64,
    binary: AtomicU64,
    unreadable: AtomicU64,
    too_large: AtomicU64,
    inner: Mutex<Inner>,
}

struct Inner {
    state: IndexState,
    watcher: WatcherState,
    files: u64,
    documents: u64,
    index_bytes: u64,
    last_commit: Option<String>,
    missing_roots: Vec<String>,
    location: String,
    error: Option<String>,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            state: IndexState::Building,
            watcher: WatcherState::Off,
            files: 0,
            documents: 0,
            index_bytes: 0,
            last_commit: None,
            missing_roots: Vec::new(),
            location: String::new(),
            error: None,
        }
    }
}

impl Status {
    pub fn skipped(&self, why: Skip) {
        let counter = match why {
            Skip::Binary => &self.binary,
            Skip::Unreadable => &self.unreadable,
            Skip::TooLarge => &self.too_large,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A new pass over `total` files starts: the skip counts are of the last full pass.
    pub fn pass_started(&self, total: u64) {
        self.files_done.store(0, Ordering::Relaxed);
        self.files_total.store(total, Ordering::Relaxed);
        self.files_unchanged.store(0, Ordering::Relaxed);
        for c in [&self.binary, &self.unreadable, &self.too_large] {
            c.store(0, Ordering::Relaxed);
        }
    }

    pub fn set_location(&self, location: String) {
        self.inner.write_unpoisoned().location = location;
    }

    pub fn set_state(&self, state: IndexState) {
        self.inner.write_unpoisoned().state = state;
    }

    pub fn fail(&self, error: String) {
        let mut inner = self.inner.write_unpoisoned();
        inner.state = IndexState::Failed;
        inner.error = Some(error);
    }

    pub fn set_watcher(&self, watcher: WatcherState, error: Option<String>) {
        let mut inner = self.inner.write_unpoisoned();
        inner.watcher = watcher;
        if error.is_some() {
            inner.error = error;
        }
    }

    pub fn set_missing_roots(&self, missing: Vec<String>) {
        self.inner.write_unpoisoned().missing_roots = missing;
    }

    pub fn missing_roots(&self) -> Vec<String> {
        self.inner.write_unpoisoned().missing_roots.clone()
    }

    pub fn committed(&self, files: u64, documents: u64, index_bytes: u64) {
        let mut inner = self.inner.write_unpoisoned();
        inner.files = files;
        inner.documents = documents;
        inner.index_bytes = index_bytes;
        inner.last_commit = Some(crate::clock::timestamp());
    }

    pub fn error(&self) -> Option<String> {
        self.inner.write_unpoisoned().error.clone()
    }

    pub fn report(&self) -> SearchIndexReport {
        let inner = self.inner.write_unpoisoned();
        let done = self.files_done.load(Ordering::Relaxed);
        let total = self.files_total.load(Ordering::Relaxed);
        let percent = if total == 0 {
            if inner.state == IndexState::Building {
                0.0
            } else {
                100.0
            }
        } else {
            ((done.min(total) as f64 / total as f64) * 1000.0).round() / 10.0
        };
        SearchIndexReport {
            state: inner.state,
            files_done: done,
            files_total: total,
            percent,
            files_unchanged: self.files_unchanged.load(Ordering::Relaxed),
            files: inner.files,
            documents: inner.documents,
            index_bytes: inner.index_bytes,
            last_commit: inner.last_commit.clone(),
            watcher: inner.watcher,
            skipped: SkippedFiles {
                binary: self.binary.load(Ordering::Relaxed),
                unreadable: self.unreadable.load(Ordering::Relaxed),
                too_large: self.too_large.load(Ordering::Relaxed),
            },
            missing_roots: inner.missing_roots.clone(),
            location: inner.location.clone(),
            error: inner.error.clone(),
        }
    }
}
