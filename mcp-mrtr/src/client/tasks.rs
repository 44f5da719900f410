//! A call the server turned into a task (SEP-2663), followed to its end: polled at the
//! server's `pollIntervalMs`, its questions answered from the same [`Answers`] through
//! `tasks/update` (each key once: keys are unique over a task's life), and its final
//! `CallToolResult` returned as if the call had answered at once. A task that failed is the
//! server's JSON-RPC error; one that was cancelled is [`ClientError::Cancelled`].
//!
//! A task nobody waits for any more is cancelled: a [`TaskHandle`] dropped before its task
//! ended (or the call future that held one) sends `tasks/cancel`, unless the caller
//! [`detach`](TaskHandle::detach)ed it to come back later by its id ([`Client::task`]).
//!
//! [`Answers`]: super::Answers
//! [`Client::task`]: super::Client::task

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::answers::with_defaults_of;
use super::error::ClientError;
use super::message::error_of;
use super::{decode, Inner};
use crate::protocol::{CallToolResult, InputRequest, JsonObject};

/// The key a client declares the tasks extension under.
pub(super) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How often to poll when the server names no interval, and the bounds on what it names.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
const MIN_POLL: Duration = Duration::from_millis(10);
const MAX_POLL: Duration = Duration::from_secs(60);

/// A task the server made of a call: its id, a way to cancel it, and its result.
///
/// Dropped before its task ended, it cancels the task (`tasks/cancel`, sent on a spawned
/// task of the current runtime): nobody could read its result. [`detach`](Self::detach)
/// keeps it running instead.
#[must_use = "a task handle dropped at once cancels its task"]
pub struct TaskHandle {
    inner: Arc<Inner>,
    id: String,
    /// The latest snapshot (`None` for a handle made from an id, until it polls).
    snapshot: Option<JsonObject>,
    /// The question keys answered already (unique over the task's life).
    answered: HashSet<String>,
    /// Whether the task ended, was cancelled or detached: nothing to cancel when dropped.
    settled: bool,
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle").field("id", &self.id).field("status", &self.status()).finish_non_exhaustive()
    }
}

impl TaskHandle {
    pub(super) fn new(inner: Arc<Inner>, id: String, snapshot: Option<JsonObject>) -> Self {
        Self { inner, id, snapshot, answered: HashSet::new(), settled: false }
    }

    /// The task's id, unique on its server.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task's status when the client last heard of it (`working`, `input_required`,
    /// `completed`, `failed`, `cancelled`); `None` before it has.
    pub fn status(&self) -> Option<&str> {
        self.snapshot.as_ref()?.get("status")?.as_str()
    }

    /// Asks the server to cancel the task. Cancelling is cooperative: a task near its end
    /// may still complete, and [`result`](Self::result) then returns its result.
    pub async fn cancel(&self) -> Result<(), ClientError> {
        self.inner.call("tasks/cancel", json!({"taskId": self.id})).await.map(drop)
    }

    /// Lets the task run on without this handle: dropping it no longer cancels it. Returns
    /// the id, for [`Client::task`](super::Client::task) to follow it again later.
    pub fn detach(mut self) -> String {
        self.settled = true;
        std::mem::take(&mut self.id)
    }

    /// Follows the task to its end, answering its questions on the way, and returns its
    /// result (a tool's failure is a result with `isError` set). Dropping this future
    /// before the end cancels the task.
    pub async fn result(mut self) -> Result<CallToolResult, ClientError> {
        decode(self.follow().await?)
    }

    /// Polls the task to its end. Only an end the server reported settles the handle: a
    /// task left on an error of the client's (an answer that failed, a poll that timed out)
    /// is cancelled when the handle drops.
    pub(super) async fn follow(&mut self) -> Result<JsonObject, ClientError> {
        let task_id = self.id.clone();
        loop {
            let mut snapshot = match self.snapshot.take() {
                Some(snapshot) => snapshot,
                None => self.inner.call("tasks/get", json!({"taskId": task_id})).await?,
            };
            let status = snapshot.get("status").and_then(Value::as_str);
            self.settled = matches!(status, Some("completed" | "failed" | "cancelled"));
            match status {
                Some("completed") => {
                    return match snapshot.remove("result") {
                        Some(Value::Object(result)) => Ok(result),
                        _ => Err(ClientError::Malformed(format!("task {task_id} completed without a result"))),
                    };
                }
                Some("failed") => {
                    let error = snapshot.remove("error").unwrap_or(Value::Null);
                    return Err(error_of(error)
                        .unwrap_or_else(|| ClientError::Malformed(format!("task {task_id} failed without an error"))));
                }
                Some("cancelled") => return Err(ClientError::Cancelled { task_id }),
                Some("input_required") => answer(&self.inner, &task_id, &snapshot, &mut self.answered).await?,
                Some("working") => {}
                other => {
                    return Err(ClientError::Malformed(format!("task {task_id} has an unknown status {other:?}")));
                }
            }
            let wait = poll_interval(&snapshot);
            self.snapshot = Some(snapshot);
            tokio::time::sleep(wait).await;
            self.snapshot = None;
        }
    }
}

impl Drop for TaskHandle {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (inner, task_id) = (self.inner.clone(), std::mem::take(&mut self.id));
        runtime.spawn(async move {
            if let Err(error) = inner.call("tasks/cancel", json!({"taskId": task_id})).await {
                tracing::debug!(%error, task = %task_id, "cancelling a task nobody waits for failed");
            }
        });
    }
}

/// Answers the questions of an `input_required` snapshot not answered yet, in one
/// `tasks/update`.
async fn answer(
    inner: &Inner,
    task_id: &str,
    snapshot: &JsonObject,
    answered: &mut HashSet<String>,
) -> Result<(), ClientError> {
    let Some(Value::Object(requests)) = snapshot.get("inputRequests") else { return Ok(()) };
    let mut responses = Map::new();
    for (key, request) in requests {
        if answered.contains(key) {
            continue;
        }
        let Value::Object(request) = request.clone() else { continue };
        let question: InputRequest =
            serde_json::from_value(Value::Object(with_defaults_of(request))).map_err(|error| {
                ClientError::Malformed(format!("task {task_id} asks a question that cannot be read: {error}"))
            })?;
        responses.insert(key.clone(), inner.answers.answer(key, question).await?);
    }
    if responses.is_empty() {
        return Ok(());
    }
    let keys: Vec<String> = responses.keys().cloned().collect();
    inner.call("tasks/update", json!({"taskId": task_id, "inputResponses": responses})).await?;
    answered.extend(keys);
    Ok(())
}

fn poll_interval(snapshot: &JsonObject) -> Duration {
    snapshot
        .get("pollIntervalMs")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}
