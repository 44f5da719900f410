//! A tool call as the caller shapes it. Awaited as it is, it runs to its result: rounds
//! answered, a task the server made of it followed. [`with_progress`](ToolCall::with_progress)
//! also hands over the server's progress notifications as a stream, and
//! [`start`](ToolCall::start) stops at a task, for the caller to hold by its id and cancel.
//!
//! A call whose future is dropped is cancelled the way its transport cancels: over HTTP the
//! response's stream is closed, over stdio `notifications/cancelled` is sent, and a task is
//! sent `tasks/cancel`.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};

use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::error::ClientError;
use super::tasks::TaskHandle;
use super::{arguments_of, decode, stdio, Client, Outcome};
use crate::protocol::CallToolResult;

/// A tool call being set up; `.await` it to run it (see [`Client::call_tool`]).
#[must_use = "a call runs only when awaited"]
pub struct ToolCall<'c> {
    client: &'c Client,
    name: String,
    arguments: Result<Value, ClientError>,
    progress: Option<mpsc::Sender<Value>>,
}

impl std::fmt::Debug for ToolCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCall").field("name", &self.name).field("arguments", &self.arguments).finish_non_exhaustive()
    }
}

/// What [`ToolCall::start`] leads to: the result, or a task the server made of the call.
#[derive(Debug)]
pub enum Started {
    /// The call answered at once (after its rounds, if it asked).
    Complete(CallToolResult),
    /// The server runs the call as a task.
    Task(TaskHandle),
}

impl<'c> ToolCall<'c> {
    pub(super) fn new(client: &'c Client, name: &str, arguments: impl Serialize) -> Self {
        Self { client, name: name.to_owned(), arguments: arguments_of(arguments), progress: None }
    }

    /// The call, asking the server for progress notifications (a `progressToken`), and the
    /// stream they arrive on while the call runs. The stream ends with the call. A
    /// server may send none; a task sends none.
    pub fn with_progress(mut self) -> (Self, Progress) {
        let (sender, receiver) = mpsc::channel(stdio::QUEUED_NOTICES);
        self.progress = Some(sender);
        (self, Progress { receiver })
    }

    /// Runs the call until it is complete or has become a task, and returns which.
    pub async fn start(self) -> Result<Started, ClientError> {
        let params = json!({"name": self.name, "arguments": self.arguments?});
        match self.client.start("tools/call", params, self.progress).await? {
            Outcome::Complete(result) => decode(result).map(Started::Complete),
            Outcome::Task(task) => Ok(Started::Task(task)),
        }
    }

    async fn run(self) -> Result<CallToolResult, ClientError> {
        match self.start().await? {
            Started::Complete(result) => Ok(result),
            Started::Task(task) => task.result().await,
        }
    }
}

impl<'c> IntoFuture for ToolCall<'c> {
    type Output = Result<CallToolResult, ClientError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'c>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

/// One progress notification of a call.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ProgressUpdate {
    /// How far the call has come; it grows with each notification.
    pub progress: f64,
    /// What `progress` will be at the end, when the server knows.
    pub total: Option<f64>,
    /// What the server says it is doing.
    pub message: Option<String>,
}

/// The progress notifications of one call, in the order the server sent them; the stream
/// ends when the call does. When the reader falls far behind, the newest are dropped.
#[derive(Debug)]
pub struct Progress {
    receiver: mpsc::Receiver<Value>,
}

impl Progress {
    /// The next notification, or `None` once the call has ended.
    pub async fn next(&mut self) -> Option<ProgressUpdate> {
        std::future::poll_fn(|context| self.poll_update(context)).await
    }

    fn poll_update(&mut self, context: &mut Context<'_>) -> Poll<Option<ProgressUpdate>> {
        loop {
            let Some(message) = std::task::ready!(self.receiver.poll_recv(context)) else { return Poll::Ready(None) };
            if let Some(update) = update_of(&message) {
                return Poll::Ready(Some(update));
            }
        }
    }
}

impl futures_util::Stream for Progress {
    type Item = ProgressUpdate;

    fn poll_next(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<ProgressUpdate>> {
        self.get_mut().poll_update(context)
    }
}

/// A `notifications/progress` message read; `None` when it is not one (the mount relays
/// an upstream's progress read here too).
pub(crate) fn update_of(message: &Value) -> Option<ProgressUpdate> {
    let params = message.get("params")?;
    Some(ProgressUpdate {
        progress: params.get("progress")?.as_f64()?,
        total: params.get("total").and_then(Value::as_f64),
        message: params.get("message").and_then(Value::as_str).map(str::to_owned),
    })
}
