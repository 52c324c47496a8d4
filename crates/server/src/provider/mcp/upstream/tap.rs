//! A transport wrapper that hands each `notifications/progress` to the call it belongs to as
//! the message is read, in order with the responses: rmcp runs notification handlers in tasks
//! of their own, so a call's last progress report could otherwise come after its answer. It
//! queues the log messages as they are read, for the same reason and so they are handed on
//! in the order they came (a call's answer waits until they are: `CallerBook::logs_handed_on`).

use std::future::Future;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::RxJsonRpcMessage;
use rmcp::transport::Transport;

use crate::provider::Progress;
use crate::provider::mcp::client::{CallerRoutes, ProgressRoutes};
use crate::sync::Unpoisoned;

/// `inner`, with progress routed as it is read.
pub struct ProgressTap<T> {
    inner: T,
    routes: ProgressRoutes,
    callers: CallerRoutes,
}

impl<T> ProgressTap<T> {
    pub fn new(inner: T, routes: ProgressRoutes, callers: CallerRoutes) -> Self {
        ProgressTap {
            inner,
            routes,
            callers,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressTap<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(notification) = &message
            && let ServerNotification::LoggingMessageNotification(log) = &notification.notification
        {
            self.callers
                .logs_queued
                .write_unpoisoned()
                .push_back(log.params.clone());
            self.callers
                .logs_read
                .fetch_add(1, std::sync::atomic::Ordering::Release);
        }
        if let JsonRpcMessage::Notification(notification) = &message
            && let ServerNotification::ProgressNotification(progress) = &notification.notification
        {
            let params = &progress.params;
            let key = serde_json::to_string(&params.progress_token).unwrap_or_default();
            let sink = self.routes.read_unpoisoned().get(&key).cloned();
            if let Some(sink) = sink {
                let _ = sink.send(Progress {
                    progress: params.progress,
                    total: params.total,
                    message: params.message.clone(),
                });
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
