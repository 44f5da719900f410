//! [`Ctx`]: what a handler knows about the request it serves, and its channel for
//! progress and log notifications.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::envelope::RequestMeta;
use crate::protocol::{ClientCapabilities, Implementation, LoggingLevel, Notification, RequestId};

/// Where a request's notifications go: its SSE stream on HTTP, the channel on stdio.
pub(crate) type Notifier = mpsc::Sender<Notification>;

/// The request context handed to every tool, prompt and resource handler.
///
/// Cheap to clone. Everything in it belongs to *this* request: the client's capabilities
/// are the ones it declared on this request, and notifications go to this request's
/// stream only.
#[derive(Clone, Debug)]
pub struct Ctx {
    inner: Arc<CtxInner>,
}

#[derive(Debug)]
struct CtxInner {
    id: RequestId,
    meta: RequestMeta,
    notifier: Option<Notifier>,
    logging: bool,
    last_progress: Mutex<Option<f64>>,
}

impl Ctx {
    pub(crate) fn new(id: RequestId, meta: RequestMeta, notifier: Option<Notifier>, logging: bool) -> Self {
        let inner = CtxInner { id, meta, notifier, logging, last_progress: Mutex::new(None) };
        Self { inner: Arc::new(inner) }
    }

    /// The JSON-RPC id of the request (a retry of a multi-round call has a new one).
    pub fn request_id(&self) -> &RequestId {
        &self.inner.id
    }

    /// The protocol version the request was made with.
    pub fn protocol_version(&self) -> &str {
        &self.inner.meta.protocol_version
    }

    /// What the client declared it can do on this request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.meta.client_capabilities
    }

    /// The client's name and version, if it sent them. For display and logs only:
    /// never branch behaviour or security on it.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.meta.client_info.as_ref()
    }

    /// Reports progress, if the request asked for it (`_meta.progressToken`).
    ///
    /// Progress must increase: a value not above the last one sent is dropped, as are
    /// all values when the request carried no token or the client went away.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.inner.meta.progress_token else { return };
        {
            let mut last = self.inner.last_progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|last| progress <= last) {
                tracing::debug!(progress, "dropping progress that does not increase");
                return;
            }
            *last = Some(progress);
        }
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.notify("notifications/progress", params).await;
    }

    /// Sends a log message, if the server enabled logging and the request opted in at
    /// this level or below (`_meta["io.modelcontextprotocol/logLevel"]`).
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: impl Serialize) {
        if !self.inner.logging || self.inner.meta.log_level.is_none_or(|min| level < min) {
            return;
        }
        let data =
            serde_json::to_value(data).unwrap_or_else(|e| Value::String(format!("<unserializable log data: {e}>")));
        let mut params = json!({ "level": level, "data": data });
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        self.notify("notifications/message", params).await;
    }

    async fn notify(&self, method: &str, params: Value) {
        if let Some(notifier) = &self.inner.notifier {
            // A closed channel means the client is gone; the request is being cancelled.
            let _ = notifier.send(Notification { method: method.to_owned(), params }).await;
        }
    }
}
