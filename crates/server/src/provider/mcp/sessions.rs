//! `session_per_client`: one upstream connection per client MCP session, opened at the
//! session's first use and closed when the session ends (or the provider stops, or the
//! connection dies — the next use opens a new one). Everything the server sends on it goes to
//! that session; its tool list is the shared connection's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, OnceCell};

use super::Inner;
use super::call::Link;
use super::client::GatewayClient;
use super::upstream::{self, ConnectError};
use crate::provider::clients::ClientSession;
use crate::sync::Unpoisoned;

/// The open per-session connections, by downstream session.
#[derive(Default)]
pub(super) struct SessionLinks(Mutex<HashMap<u64, Arc<OnceCell<Link>>>>);

impl Inner {
    /// The connection of `session`'s own, opened now if it has none.
    pub(super) async fn session_link(
        self: &Arc<Self>,
        session: &Arc<dyn ClientSession>,
    ) -> Result<Link, ConnectError> {
        let cell = self
            .session_links
            .0
            .write_unpoisoned()
            .entry(session.id())
            .or_default()
            .clone();
        let opened = cell
            .get_or_try_init(|| self.open_session_link(session))
            .await
            .cloned();
        if opened.is_err() {
            self.session_links
                .0
                .write_unpoisoned()
                .remove(&session.id());
        }
        opened
    }

    async fn open_session_link(
        self: &Arc<Self>,
        session: &Arc<dyn ClientSession>,
    ) -> Result<Link, ConnectError> {
        let handler = GatewayClient {
            // The tool list is the shared connection's; this one's changes are not followed.
            refresh: Arc::new(Notify::new()),
            progress: Default::default(),
            callers: Default::default(),
            sessions: self.sessions.clone(),
            owner: Some(Arc::downgrade(session)),
            who: Arc::new((self.service.clone(), self.name.clone())),
            protocol: self.protocol,
        };
        let link_tables = (handler.progress.clone(), handler.callers.clone());
        let serving = upstream::serve(
            &self.endpoint,
            handler,
            &self.shutdown,
            (&self.service, &self.name),
        );
        let running = tokio::time::timeout(super::supervisor::CONNECT_TIMEOUT, serving)
            .await
            .map_err(|_| {
                ConnectError::InitializeTimeout(super::supervisor::CONNECT_TIMEOUT.as_secs())
            })??;
        let link = Link {
            peer: running.peer().clone(),
            progress: link_tables.0,
            callers: link_tables.1,
        };
        super::supervisor::hear_every_level(&link.peer).await;
        tracing::info!(
            service = %self.service, provider = %self.name, downstream = session.id(),
            "opened this client session's own connection ({})", self.endpoint.describe()
        );
        let closed = session.closed();
        let id = session.id();
        let inner = self.clone();
        self.shutdown.spawn(async move {
            let cancel = running.cancellation_token();
            let mut waiting = std::pin::pin!(running.waiting());
            tokio::select! {
                _ = &mut waiting => {}
                _ = closed => {
                    cancel.cancel();
                    let _ = waiting.await;
                }
                _ = inner.shutdown.cancelled() => {
                    cancel.cancel();
                    let _ = waiting.await;
                }
            }
            inner.session_links.0.write_unpoisoned().remove(&id);
            tracing::info!(
                service = %inner.service, provider = %inner.name, downstream = id,
                "closed a client session's own connection"
            );
        });
        Ok(link)
    }
}
