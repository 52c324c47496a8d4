//! A transport wrapper that hands each `notifications/progress` to the call it belongs to as
//! the message is read, in order with the responses: rmcp runs notification handlers in tasks
//! of their own, so a call's last progress report could otherwise come after its answer.

use std::future::Future;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::RxJsonRpcMessage;
use rmcp::transport::Transport;

use crate::provider::Progress;
use crate::provider::mcp::client::ProgressRoutes;
use crate::sync::Unpoisoned;

/// `inner`, with progress routed as it is read.
pub struct ProgressTap<T> {
    inner: T,
    routes: ProgressRoutes,
}

impl<T> ProgressTap<T> {
    pub fn new(inner: T, routes: ProgressRoutes) -> Self {
        ProgressTap { inner, routes }
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
