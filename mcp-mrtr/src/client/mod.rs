//! An MCP client that speaks multi round-trip requests natively (the `client` feature).
//!
//! A server built with this crate asks halfway through a call; this is the other half of
//! that conversation. The client sends a request, and when the server answers
//! `input_required` it asks the application's [`Answers`] each question (a form for the
//! user, a URL to open, a message from the application's model, its roots), sends the
//! request again with the answers and the server's sealed `requestState`, and returns only
//! the final result. The application writes no retry loop and never sees the state.
//!
//! ```no_run
//! use mcp_mrtr::client::{Answers, Client};
//! use mcp_mrtr::protocol::ElicitResult;
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), mcp_mrtr::client::ClientError> {
//! let answers = Answers::new().forms(|question| async move {
//!     println!("{}", question.message);
//!     Ok(ElicitResult::accept_as(&json!({"name": "Ada"}))?)
//! });
//! let client = Client::http("http://127.0.0.1:8080/mcp").answers(answers).connect().await?;
//! for tool in client.list_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let result = client.call_tool("greet", json!({})).await?;
//! println!("{}", result.all_text());
//! # Ok(())
//! # }
//! ```
//!
//! It speaks 2026-07-28 over Streamable HTTP ([`Client::http`]) or to a child process over
//! stdio ([`Client::stdio`]): `server/discover` when it connects, the request envelope
//! (`_meta`, and on HTTP the MCP headers, `Mcp-Param-*` included) on every request, lists
//! followed across pages, and any number of rounds up to [`ClientLimits::max_rounds`]. A
//! server that speaks only 2025-11-25 gets a session instead (`initialize`), whose
//! questions arrive as the server's own requests and are answered from the same
//! [`Answers`]; the caller's code is the same either way ([`Connect::versions`]). A call the
//! server makes a task (SEP-2663) is polled, its questions answered, until its result
//! ([`Connect::tasks`]), or held by its id ([`ToolCall::start`]). A call's progress and the
//! server's changes arrive as streams ([`ToolCall::with_progress`], [`Client::listen`]);
//! a call whose future is dropped is cancelled.

mod answers;
mod call;
mod connect;
mod error;
mod forward;
mod http;
mod legacy;
mod listen;
mod message;
mod rounds;
mod sse;
mod stdio;
mod tasks;
mod tools;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::mpsc;

pub(crate) use answers::Relayed;
pub use answers::{Answers, FormQuestion, UrlQuestion};
pub(crate) use call::update_of;
pub use call::{Progress, ProgressUpdate, Started, ToolCall};
pub use connect::{ClientLimits, Connect};
pub use error::{BoxError, ClientError};
pub(crate) use forward::{Forwarding, SessionOver};
pub use listen::{Change, Changes, Listen};
pub use tasks::TaskHandle;

use crate::protocol::{
    DiscoverResult, GetPromptResult, Implementation, JsonObject, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Tool, PROTOCOL_VERSION,
};

/// A connection to one MCP server. Cheap to clone: clones share the connection pool.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    discovered: Arc<DiscoverResult>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.discovered)
            .field("answers", &self.inner.answers)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of the server at `url`, over Streamable HTTP (`https://`, or `http://`).
    pub fn http(url: impl Into<String>) -> Connect {
        Connect::new(connect::Target::Http(url.into()))
    }

    /// A client of the server `command` starts, spoken to over its stdin and stdout. The
    /// command's arguments, environment and working directory are the caller's; its
    /// stderr goes where the command says (by default, this process's stderr).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), mcp_mrtr::client::ClientError> {
    /// use mcp_mrtr::client::Client;
    ///
    /// let mut command = std::process::Command::new("my-server");
    /// command.arg("--stdio").env("RUST_LOG", "warn");
    /// let client = Client::stdio(command).connect().await?;
    /// // …
    /// client.close().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn stdio(command: impl Into<tokio::process::Command>) -> Connect {
        Connect::new(connect::Target::Stdio(command.into()))
    }

    /// Ends the connection: a server run over stdio has its stdin closed and
    /// [`ClientLimits::exit_wait`] to exit before it is killed. Requests still running on
    /// clones of this client fail. Dropping the last clone without closing kills the
    /// child at once.
    pub async fn close(&self) {
        if let Transport::Stdio(stdio) = &self.inner.transport {
            stdio.close().await;
        }
    }

    /// What the server said of itself when the client connected: its versions, its
    /// capabilities, its instructions.
    pub fn server(&self) -> &DiscoverResult {
        &self.discovered
    }

    /// Every tool the server lists, across its pages, but those whose `x-mcp-header`
    /// annotations the spec forbids (no call of theirs could be right; each is named in a
    /// warning). The client keeps which parameters each tool mirrors into headers, and the
    /// list itself for as long as the server says it stays fresh (`ttlMs`) and no change of
    /// the tools is read from a [`listen`](Self::listen) stream.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        self.inner.list_tools().await
    }

    /// Every prompt the server lists, across its pages.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.inner.list("prompts/list", "prompts").await
    }

    /// Every resource the server lists, across its pages.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.inner.list("resources/list", "resources").await
    }

    /// Every resource template the server lists, across its pages.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.inner.list("resources/templates/list", "resourceTemplates").await
    }

    /// A call of a tool with `arguments` (any value that serializes to a JSON object).
    /// Awaited, it asks the application's [`Answers`] whatever the tool asks, follows a
    /// task the server makes of it, and returns its result. A tool that fails returns a
    /// result with [`is_error`](crate::protocol::CallToolResult::is_error) set, not an `Err`. Dropping the
    /// future cancels the call (and its task). See [`ToolCall`] for progress and for
    /// holding a task by its id.
    ///
    /// Over HTTP the arguments a tool mirrors into `Mcp-Param-*` headers are sent in them
    /// too; the client lists the tools first if it has not yet, to know which.
    pub fn call_tool(&self, name: &str, arguments: impl Serialize) -> ToolCall<'_> {
        ToolCall::new(self, name, arguments)
    }

    /// A handle to the task `id` of this server, made by an earlier call (whose handle was
    /// [`detach`](TaskHandle::detach)ed, perhaps by another process): its status, its
    /// cancelling, its result.
    pub fn task(&self, id: impl Into<String>) -> TaskHandle {
        TaskHandle::new(self.inner.clone(), id.into(), None)
    }

    /// Gets a prompt with `arguments`, answering what it asks on the way.
    pub async fn get_prompt(&self, name: &str, arguments: impl Serialize) -> Result<GetPromptResult, ClientError> {
        let params = json!({"name": name, "arguments": arguments_of(arguments)?});
        decode(self.request("prompts/get", params).await?)
    }

    /// Reads a resource, answering what its handler asks on the way.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        decode(self.request("resources/read", json!({"uri": uri})).await?)
    }

    /// Subscribes to the changes `listen` names: a stream of them, for as long as it is
    /// held. A server that offers no changes refuses (`-32601`, or
    /// [`ClientError::Unsupported`] for a 2025-11-25 session without a standalone stream).
    ///
    /// ```no_run
    /// # async fn run(client: mcp_mrtr::client::Client) -> Result<(), mcp_mrtr::client::ClientError> {
    /// use mcp_mrtr::client::{Change, Listen};
    ///
    /// let mut changes = client.listen(Listen::new().tools()).await?;
    /// while let Some(change) = changes.next().await {
    ///     if change == Change::Tools {
    ///         println!("{} tools now", client.list_tools().await?.len());
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn listen(&self, listen: Listen) -> Result<Changes, ClientError> {
        listen::open(self, listen).await
    }

    /// Any request, by method and params (a JSON object), run to its final result with
    /// every round answered: for methods of the server's own, or fields this client has no
    /// typed call for. The envelope's `_meta` is added to the params' own.
    pub async fn request(&self, method: &str, params: Value) -> Result<JsonObject, ClientError> {
        match self.start(method, params, None).await? {
            Outcome::Complete(result) => Ok(result),
            Outcome::Task(mut task) => task.follow().await,
        }
    }

    /// Runs `method` until it is complete or a task, with progress notifications sent to
    /// `progress` (the request then carries a `progressToken`).
    async fn start(
        &self,
        method: &str,
        params: Value,
        progress: Option<mpsc::Sender<Value>>,
    ) -> Result<Outcome, ClientError> {
        let notices = progress.map(|sender| (self.inner.next_id(), sender));
        let mut result = self.inner.rounds(method, params, notices).await?;
        if result.get("resultType").and_then(Value::as_str) != Some("task") {
            return Ok(Outcome::Complete(result));
        }
        let Some(Value::String(id)) = result.remove("taskId") else {
            return Err(ClientError::Malformed("a task result without a taskId".into()));
        };
        Ok(Outcome::Task(TaskHandle::new(self.inner.clone(), id, Some(result))))
    }
}

/// Where a call stopped: complete, or a task the server made of it.
enum Outcome {
    Complete(JsonObject),
    Task(TaskHandle),
}

/// Where a call's notifications go: its progress token, and the stream's sender.
type Notices = (u64, mpsc::Sender<Value>);

/// What one request does its own way.
struct PerRequest<'a> {
    /// What answers the server's questions on its stream (a session's server asking).
    answers: &'a Answers,
    /// Its `Authorization` header, instead of the client's (HTTP only).
    authorization: Option<&'a axum::http::HeaderValue>,
}

/// How requests reach the server.
enum Transport {
    Http(Arc<http::HttpTransport>),
    Stdio(Box<stdio::StdioTransport>),
}

/// What a client holds for its requests.
struct Inner {
    transport: Transport,
    answers: Arc<Answers>,
    /// The envelope's `_meta`, the same on every request.
    meta: JsonObject,
    limits: ClientLimits,
    next_id: AtomicU64,
    tools: tools::KnownTools,
    /// The task answering a 2025-11-25 session's standalone stream.
    listening: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = self.listening.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            task.abort();
        }
    }
}

impl Inner {
    /// Opens a 2025-11-25 session: `initialize`, then `notifications/initialized`.
    async fn initialize(&self, info: &Implementation) -> Result<DiscoverResult, ClientError> {
        let id = self.next_id();
        let Value::Object(params) = legacy::initialize_params(&self.answers, info) else { unreachable!("an object") };
        let body = message::request(id, "initialize", &params);
        let http = match &self.transport {
            Transport::Http(http) => http,
            Transport::Stdio(stdio) => {
                let result = stdio.request(id, body, None).await?;
                let (discovered, _) = legacy::discovered(result)?;
                stdio.open_session();
                stdio.notify("notifications/initialized").await?;
                return Ok(discovered);
            }
        };
        let (result, session) = http.request(http::Wire::Initialize, id, body, &self.answers, None).await?;
        let (discovered, version) = legacy::discovered(result)?;
        http.open_session(&version, session)?;
        http.notify("notifications/initialized").await?;
        // The standalone stream, open before the first call: a server may ask on it.
        match http.get_stream(None).await {
            Ok(Some(body)) => {
                let task = http.listen(body, Arc::downgrade(&self.answers));
                *self.listening.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(task);
            }
            Ok(None) => {}
            Err(error) => tracing::debug!(%error, "the server's standalone stream could not be opened"),
        }
        Ok(discovered)
    }

    /// Whether requests belong to a 2025-11-25 session.
    fn in_session(&self) -> bool {
        match &self.transport {
            Transport::Http(http) => http.in_session(),
            Transport::Stdio(stdio) => stdio.in_session(),
        }
    }

    async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        if let Some(tools) = self.tools.fresh() {
            return Ok(tools);
        }
        let (tools, ttl) = self.list_for("tools/list", "tools").await?;
        Ok(self.tools.learn(tools, ttl))
    }

    async fn list<T: DeserializeOwned>(&self, method: &str, field: &str) -> Result<Vec<T>, ClientError> {
        Ok(self.list_for(method, field).await?.0)
    }

    /// Every item of a list, across its pages, and how long the server said it stays
    /// fresh (the shortest `ttlMs` of its pages; none is zero).
    async fn list_for<T: DeserializeOwned>(
        &self,
        method: &str,
        field: &str,
    ) -> Result<(Vec<T>, Duration), ClientError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut ttl = Duration::MAX;
        for _ in 0..self.limits.max_pages {
            let params = cursor.map_or_else(|| json!({}), |cursor| json!({"cursor": cursor}));
            let mut page = self.call(method, params).await?;
            let page_ttl = page.get("ttlMs").and_then(Value::as_u64).map_or(Duration::ZERO, Duration::from_millis);
            ttl = ttl.min(page_ttl);
            let listed = page.remove(field).unwrap_or(Value::Null);
            let listed: Vec<T> = serde_json::from_value(listed).map_err(|error| {
                ClientError::Malformed(format!("the {method} result's {field} cannot be read: {error}"))
            })?;
            items.extend(listed);
            match page.remove("nextCursor") {
                Some(Value::String(next)) if !next.is_empty() => cursor = Some(next),
                _ => return Ok((items, ttl)),
            }
        }
        Err(ClientError::Malformed(format!("{method} went on for more than {} pages", self.limits.max_pages)))
    }

    /// A request of the client's own (a list, a task's poll), run to its final result.
    async fn call(&self, method: &str, params: Value) -> Result<JsonObject, ClientError> {
        let result = self.rounds(method, params, None).await?;
        if result.get("resultType").and_then(Value::as_str) == Some("task") {
            return Err(ClientError::Malformed(format!("the server made a task of {method}")));
        }
        Ok(result)
    }

    /// A request with the envelope's `_meta` added to its params' own (and the progress
    /// token of `notices`), run until it is complete or a task.
    async fn rounds(&self, method: &str, params: Value, notices: Option<Notices>) -> Result<JsonObject, ClientError> {
        let params = self.enveloped(method, params, notices.as_ref().map(|(token, _)| *token))?;
        rounds::run(self, method, params, notices.as_ref()).await
    }

    /// `params` with the envelope's `_meta` added to their own, and a progress token.
    fn enveloped(&self, method: &str, params: Value, progress_token: Option<u64>) -> Result<JsonObject, ClientError> {
        let Value::Object(mut params) = params else {
            return Err(ClientError::Config(format!("the params of {method} must be a JSON object")));
        };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(own)) => own,
            _ => JsonObject::new(),
        };
        // A session's requests carry the caller's `_meta` alone: the envelope's keys would
        // make them 2026-07-28 requests.
        if !self.in_session() {
            meta.extend(self.meta.clone());
        }
        if let Some(token) = progress_token {
            meta.insert(crate::protocol::meta_keys::PROGRESS_TOKEN.into(), token.into());
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        Ok(params)
    }

    /// A fresh request id (progress tokens and subscription ids are taken from the same).
    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether a 2025-11-25 session's standalone stream is being read (over stdio, the
    /// channel is the stream).
    fn has_session_stream(&self) -> bool {
        if let Transport::Stdio(stdio) = &self.transport {
            return stdio.in_session();
        }
        self.listening
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .is_some_and(|task| !task.is_finished())
    }

    /// One request as it goes on the wire (a round of a call, or all of a call that asks
    /// nothing), and its result.
    ///
    /// A server that refuses the version (`-32022`) while naming this client's among those
    /// it supports is asked once more (a server rolling between releases may say so for a
    /// moment); a refusal that does not name it fails the request.
    async fn send(
        &self,
        method: &str,
        params: &JsonObject,
        notices: Option<&Notices>,
    ) -> Result<JsonObject, ClientError> {
        self.send_as(method, params, notices, &PerRequest { answers: &self.answers, authorization: None }).await
    }

    /// [`send`](Self::send), with what this request does its own way.
    async fn send_as(
        &self,
        method: &str,
        params: &JsonObject,
        notices: Option<&Notices>,
        own: &PerRequest<'_>,
    ) -> Result<JsonObject, ClientError> {
        match self.send_once(method, params, notices, own).await {
            Err(ClientError::Rpc(refused)) if supports_ours(&refused) => {
                self.send_once(method, params, notices, own).await
            }
            sent => sent,
        }
    }

    async fn send_once(
        &self,
        method: &str,
        params: &JsonObject,
        notices: Option<&Notices>,
        own: &PerRequest<'_>,
    ) -> Result<JsonObject, ClientError> {
        // Taken when the request is about to go, after any listing it needs: ids go out in order.
        let next = || {
            let id = self.next_id();
            (id, message::request(id, method, params))
        };
        match &self.transport {
            Transport::Http(http) => {
                let name_field = match method {
                    "tools/call" | "prompts/get" => Some("name"),
                    "resources/read" => Some("uri"),
                    _ if method.starts_with("tasks/") => Some("taskId"),
                    _ => None,
                };
                let name = name_field.and_then(|field| params.get(field)).and_then(Value::as_str);
                let mut mirrored = Vec::new();
                if let (true, Some(tool), false) = (method == "tools/call", name, http.in_session()) {
                    if !self.tools.known() {
                        Box::pin(self.list_tools()).await?;
                    }
                    mirrored = self.tools.headers(tool, params.get("arguments"))?;
                }
                let wire = http::Wire::Request { method, name, mirrored: &mirrored, authorization: own.authorization };
                let (id, body) = next();
                Ok(http.request(wire, id, body, own.answers, notices).await?.0)
            }
            Transport::Stdio(stdio) => {
                let (id, body) = next();
                stdio.request(id, body, notices.cloned()).await
            }
        }
    }
}

/// Whether `error` refuses the request's protocol version while naming this client's
/// among the supported ones.
fn supports_ours(error: &crate::base::error::Error) -> bool {
    error.code() == crate::base::error::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        && error
            .data()
            .and_then(|data| data.get("supported"))
            .and_then(Value::as_array)
            .is_some_and(|supported| supported.iter().any(|version| version == PROTOCOL_VERSION))
}

/// Arguments as the JSON object a call carries.
fn arguments_of(arguments: impl Serialize) -> Result<Value, ClientError> {
    match serde_json::to_value(arguments) {
        Ok(Value::Null) => Ok(json!({})),
        Ok(object @ Value::Object(_)) => Ok(object),
        Ok(_) => Err(ClientError::Config("arguments must serialize to a JSON object".into())),
        Err(error) => Err(ClientError::Config(format!("the arguments do not serialize: {error}"))),
    }
}

/// A final result read as the type its method returns.
fn decode<T: for<'de> Deserialize<'de>>(result: JsonObject) -> Result<T, ClientError> {
    serde_json::from_value(Value::Object(result))
        .map_err(|error| ClientError::Malformed(format!("the result cannot be read: {error}")))
}
