//! Live changes of a server's lists and resources ([`Client::listen`]), as a stream the same
//! in both eras: a 2026-07-28 `subscriptions/listen` (its own SSE response over HTTP, its
//! notifications told apart by subscription id over stdio), or a 2025-11-25 session's
//! standalone stream, whose notifications are filtered to what was asked (and whose
//! resources are subscribed to with `resources/subscribe`).
//!
//! A change of the tools read from the stream also empties the client's tool list cache,
//! so the next [`Client::list_tools`] asks the server.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::error::ClientError;
use super::message::{self, reply};
use super::sse::Reader;
use super::{http, stdio, Client, Inner, Transport};

/// What a [`Client::listen`] subscription asks to hear of.
///
/// ```
/// use mcp_mrtr::client::Listen;
///
/// let listen = Listen::new().tools().resource("file:///notes.md");
/// # let _ = listen;
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Listen {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
}

impl Listen {
    /// A subscription to nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tool list's changes.
    pub fn tools(mut self) -> Self {
        self.tools = true;
        self
    }

    /// The prompt list's changes.
    pub fn prompts(mut self) -> Self {
        self.prompts = true;
        self
    }

    /// The resource list's changes.
    pub fn resources(mut self) -> Self {
        self.resources = true;
        self
    }

    /// The updates of the resource at `uri`.
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.uris.push(uri.into());
        self
    }

    fn wants(&self, change: &Change) -> bool {
        match change {
            Change::Tools => self.tools,
            Change::Prompts => self.prompts,
            Change::Resources => self.resources,
            Change::Resource { uri } => self.uris.contains(uri),
        }
    }
}

/// What changed on the server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The tool list changed: list it again.
    Tools,
    /// The prompt list changed.
    Prompts,
    /// The resource list changed.
    Resources,
    /// The resource at `uri` changed: read it again.
    Resource {
        /// The resource.
        uri: String,
    },
}

/// The changes a subscription hears, in the order the server sent them; the stream ends
/// when the server ends the subscription or the connection. Dropping it ends the
/// subscription (over HTTP its stream is closed, over stdio `notifications/cancelled` is
/// sent). It holds the connection open while it lives.
pub struct Changes {
    inner: Arc<Inner>,
    listen: Listen,
    receiver: mpsc::Receiver<Value>,
    _held: Held,
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes").field("listen", &self.listen).finish_non_exhaustive()
    }
}

/// What keeps a subscription open, and ends it when dropped.
enum Held {
    /// The task reading its HTTP stream.
    Reading(tokio::task::JoinHandle<()>),
    /// Its request over stdio.
    Waiting(#[allow(dead_code, reason = "held for its Drop")] stdio::Pending),
    /// A session's standalone stream, which other subscriptions share.
    Session,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Self::Reading(task) = self {
            task.abort();
        }
    }
}

impl Changes {
    /// The next change, or `None` once the subscription has ended.
    pub async fn next(&mut self) -> Option<Change> {
        std::future::poll_fn(|context| self.poll_change(context)).await
    }

    fn poll_change(&mut self, context: &mut Context<'_>) -> Poll<Option<Change>> {
        loop {
            let Some(message) = std::task::ready!(self.receiver.poll_recv(context)) else { return Poll::Ready(None) };
            let Some(change) = change_of(&message).filter(|change| self.listen.wants(change)) else { continue };
            if change == Change::Tools {
                self.inner.tools.forget();
            }
            return Poll::Ready(Some(change));
        }
    }
}

impl futures_util::Stream for Changes {
    type Item = Change;

    fn poll_next(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Change>> {
        self.get_mut().poll_change(context)
    }
}

/// A notification as the change it tells of; `None` for any other.
fn change_of(message: &Value) -> Option<Change> {
    Some(match message.get("method")?.as_str()? {
        "notifications/tools/list_changed" => Change::Tools,
        "notifications/prompts/list_changed" => Change::Prompts,
        "notifications/resources/list_changed" => Change::Resources,
        "notifications/resources/updated" => {
            Change::Resource { uri: message.get("params")?.get("uri")?.as_str()?.to_owned() }
        }
        _ => return None,
    })
}

/// Opens the subscription `listen` asks for.
pub(super) async fn open(client: &Client, listen: Listen) -> Result<Changes, ClientError> {
    let inner = &client.inner;
    let changes = |receiver, held| Changes { inner: inner.clone(), listen: listen.clone(), receiver, _held: held };
    if inner.in_session() {
        if !inner.has_session_stream() {
            return Err(ClientError::Unsupported("the server offers its session no stream of changes".into()));
        }
        let (sender, receiver) = mpsc::channel(stdio::QUEUED_NOTICES);
        match &inner.transport {
            Transport::Http(http) => http.watch(sender),
            Transport::Stdio(stdio) => stdio.watch(sender)?,
        }
        for uri in &listen.uris {
            inner.call("resources/subscribe", json!({"uri": uri})).await?;
        }
        return Ok(changes(receiver, Held::Session));
    }
    let notifications = json!({
        "toolsListChanged": listen.tools,
        "promptsListChanged": listen.prompts,
        "resourcesListChanged": listen.resources,
        "resourceSubscriptions": listen.uris,
    });
    let params = inner.enveloped("subscriptions/listen", json!({"notifications": notifications}), None)?;
    let id = inner.next_id();
    let body = message::request(id, "subscriptions/listen", &params);
    let after = inner.limits.request_timeout;
    let timed_out = || ClientError::Timeout { waiting_for: "the subscription's acknowledgement", after };
    match &inner.transport {
        Transport::Http(http) => {
            let wire =
                http::Wire::Request { method: "subscriptions/listen", name: None, mirrored: &[], authorization: None };
            let mut reader = http.open_stream(wire, id, body).await?;
            let first = tokio::time::timeout(after, reader.next_message()).await.map_err(|_| timed_out())??;
            acknowledged(first, id)?;
            let (sender, receiver) = mpsc::channel(stdio::QUEUED_NOTICES);
            Ok(changes(receiver, Held::Reading(tokio::spawn(forward(reader, sender)))))
        }
        Transport::Stdio(stdio) => {
            let (pending, mut receiver, response) = stdio.subscribe(id, body).await?;
            let first = tokio::time::timeout(after, async {
                tokio::select! {
                    notice = receiver.recv() => notice,
                    ended = response => ended.ok(),
                }
            });
            acknowledged(first.await.map_err(|_| timed_out())?, id)?;
            Ok(changes(receiver, Held::Waiting(pending)))
        }
    }
}

/// Whether the first message of a subscription acknowledges it; a response instead is the
/// server's refusal.
fn acknowledged(first: Option<Value>, id: u64) -> Result<(), ClientError> {
    match first {
        Some(message) if message.get("method").is_some() => Ok(()),
        Some(message) => Err(reply(message, id).err().unwrap_or_else(|| {
            ClientError::Malformed("the server ended the subscription before acknowledging it".into())
        })),
        None => Err(ClientError::Malformed("the subscription's stream ended before it was acknowledged".into())),
    }
}

/// Hands each notification of a subscription's HTTP stream on, until the stream ends (the
/// server's response to the listen request ends it) or the subscription is dropped.
async fn forward(mut reader: Reader, sender: mpsc::Sender<Value>) {
    while let Ok(Some(message)) = reader.next_message().await {
        if message.get("method").is_none() {
            return;
        }
        if sender.send(message).await.is_err() {
            return;
        }
    }
}
