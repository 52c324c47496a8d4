//! The one shutdown mechanism: a tree of cancellation tokens and one task tracker.
//!
//! The root token stops everything; its `drain` child stops what faces clients (listeners,
//! MCP session streams, background loops) first, so in-flight requests can finish while the
//! providers behind them still run. Every task the gateway spawns goes through
//! [`Shutdown::spawn`], so shutdown can wait for all of them.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A handle on the shutdown of some part of the gateway; cheap to clone.
#[derive(Debug, Clone)]
pub struct Shutdown {
    token: CancellationToken,
    tracker: TaskTracker,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown {
            token: CancellationToken::new(),
            tracker: TaskTracker::new(),
        }
    }
}

impl Shutdown {
    /// A part that stops when this one does, and can also be stopped alone (a provider
    /// removed by a reload).
    pub fn child(&self) -> Shutdown {
        Shutdown {
            token: self.token.child_token(),
            tracker: self.tracker.clone(),
        }
    }

    /// Spawns a task that shutdown waits for.
    pub fn spawn<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn(task)
    }

    /// Resolves once this part is told to stop.
    pub async fn cancelled(&self) {
        self.token.cancelled().await
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Tells this part (and its children) to stop.
    pub fn cancel(&self) {
        self.token.cancel()
    }

    /// The token itself, for libraries that take one (rmcp's session streams).
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Waits for every tracked task, at most `within`; says how many were still running.
    pub async fn wait_for_tasks(&self, within: Duration) -> Result<(), usize> {
        self.tracker.close();
        match tokio::time::timeout(within, self.tracker.wait()).await {
            Ok(()) => Ok(()),
            Err(_) => Err(self.tracker.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancelling_the_root_stops_children_and_tasks_are_awaited() {
        let root = Shutdown::default();
        let drain = root.child();
        let provider = root.child();
        let seen = provider.clone();
        provider.spawn(async move { seen.cancelled().await });
        drain.cancel();
        assert!(!provider.is_cancelled(), "a child stops alone");
        assert_eq!(root.wait_for_tasks(Duration::from_millis(50)).await, Err(1));
        root.cancel();
        assert!(provider.is_cancelled());
        assert_eq!(root.wait_for_tasks(Duration::from_secs(5)).await, Ok(()));
    }
}
