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
//! server over HTTP that speaks only 2025-11-25 gets a session instead (`initialize`), whose
//! questions arrive as the server's own requests and are answered from the same
//! [`Answers`]; the caller's code is the same either way ([`Connect::versions`]). A call the
//! server makes a task (SEP-2663) is polled, its questions answered, until its result
//! ([`Connect::tasks`]).

mod answers;
mod error;
mod http;
mod legacy;
mod message;
mod rounds;
mod sse;
mod stdio;
mod tasks;
mod tools;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use answers::{Answers, FormQuestion, UrlQuestion};
pub use error::{BoxError, ClientError};

use crate::protocol::{
    meta_keys, CallToolResult, DiscoverResult, GetPromptResult, Implementation, JsonObject, Prompt, ReadResourceResult,
    Resource, ResourceTemplate, Tool, PROTOCOL_VERSION,
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

/// The client's bounds on what a server may make it do or read.
///
/// ```
/// use std::time::Duration;
/// use mcp_mrtr::client::ClientLimits;
///
/// let mut limits = ClientLimits::default();
/// limits.request_timeout = Duration::from_secs(30);
/// assert_eq!(limits.max_rounds, 16);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientLimits {
    /// The longest one request may take, answer and all. A 2026-07-28 round's questions
    /// are answered between requests, outside this bound; in a 2025-11-25 session the
    /// server asks while it holds the call's request open, so the time to answer counts.
    /// Default 5 minutes.
    pub request_timeout: Duration,
    /// The largest response body read (an SSE stream whole, or one line over stdio).
    /// Default 16 MiB.
    pub max_response_bytes: usize,
    /// The largest response head (status line and headers) read. Default 64 KiB.
    pub max_header_bytes: usize,
    /// How many `input_required` rounds in a row a call may take before the client gives
    /// up with [`ClientError::TooManyRounds`]. Default 16.
    pub max_rounds: usize,
    /// How many pages a list may span before the client stops following its cursors.
    /// Default 1000.
    pub max_pages: usize,
    /// How long a server run over stdio may take to exit once [`Client::close`] closes
    /// its stdin, before it is killed. Default 2 s.
    pub exit_wait: Duration,
}

impl Default for ClientLimits {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(300),
            max_response_bytes: 16 * 1024 * 1024,
            max_header_bytes: 64 * 1024,
            max_rounds: 16,
            max_pages: 1000,
            exit_wait: stdio::EXIT_WAIT,
        }
    }
}

/// A client being set up; [`connect`](Connect::connect) reaches the server.
#[derive(Debug)]
#[must_use = "a client connects only when `connect` is awaited"]
pub struct Connect {
    target: Target,
    headers: Vec<(String, String)>,
    answers: Answers,
    info: Implementation,
    limits: ClientLimits,
    versions: Vec<String>,
    tasks: bool,
}

impl Client {
    /// A client of the server at `url`, over Streamable HTTP (`https://`, or `http://`).
    pub fn http(url: impl Into<String>) -> Connect {
        Connect::new(Target::Http(url.into()))
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
        Connect::new(Target::Stdio(command.into()))
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
    /// warning). The client keeps which parameters each tool mirrors into headers.
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

    /// Calls a tool with `arguments` (any value that serializes to a JSON object), asking
    /// the application's [`Answers`] whatever the tool asks, and returns its result. A tool
    /// that fails returns a result with [`is_error`](CallToolResult::is_error) set, not an
    /// `Err`.
    ///
    /// Over HTTP the arguments a tool mirrors into `Mcp-Param-*` headers are sent in them
    /// too; the client lists the tools first if it has not yet, to know which.
    pub async fn call_tool(&self, name: &str, arguments: impl Serialize) -> Result<CallToolResult, ClientError> {
        let params = json!({"name": name, "arguments": arguments_of(arguments)?});
        decode(self.request("tools/call", params).await?)
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

    /// Any request, by method and params (a JSON object), run to its final result with
    /// every round answered: for methods of the server's own, or fields this client has no
    /// typed call for. The envelope's `_meta` is added to the params' own.
    pub async fn request(&self, method: &str, params: Value) -> Result<JsonObject, ClientError> {
        self.inner.call(method, params).await
    }
}

impl Connect {
    fn new(target: Target) -> Self {
        Self {
            target,
            headers: Vec::new(),
            answers: Answers::new(),
            info: Implementation::new("mcp-mrtr-client", env!("CARGO_PKG_VERSION")),
            limits: ClientLimits::default(),
            versions: vec![PROTOCOL_VERSION.to_owned(), legacy::VERSION.to_owned()],
            tasks: true,
        }
    }

    /// Whether the client declares the tasks extension (SEP-2663; on by default). A server
    /// may then make a long call a task instead of holding the request open; the client
    /// polls it, answers its questions and returns its result, so a call reads the same. A
    /// tool that can only run as a task refuses a client without it (`-32021`).
    pub fn tasks(mut self, declare: bool) -> Self {
        self.tasks = declare;
        self
    }

    /// The protocol versions the client may speak, most preferred first; by default
    /// 2026-07-28, then 2025-11-25 with a server that does not speak it. Over HTTP the
    /// client asks `server/discover` first and opens a 2025-11-25 session with `initialize`
    /// only where that fails; `["2025-11-25"]` opens one at once, `["2026-07-28"]` never
    /// does. Over stdio this release speaks 2026-07-28 only.
    pub fn versions<S: Into<String>>(mut self, preferred: impl IntoIterator<Item = S>) -> Self {
        self.versions = preferred.into_iter().map(Into::into).collect();
        self
    }

    /// A header sent with every HTTP request, such as a gateway's key (over stdio there
    /// are no headers: [`connect`](Self::connect) refuses one).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// `Authorization: Bearer <token>` on every HTTP request.
    pub fn bearer_token(self, token: impl std::fmt::Display) -> Self {
        self.header("authorization", format!("Bearer {token}"))
    }

    /// How the application answers the server's questions; without it, the client
    /// declares no capability and the server asks it nothing.
    pub fn answers(mut self, answers: Answers) -> Self {
        self.answers = answers;
        self
    }

    /// The `clientInfo` sent with every request (by default this crate's name and version).
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// The client's bounds (by default [`ClientLimits::default`]).
    pub fn limits(mut self, limits: ClientLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Reaches the server and returns the client: `server/discover`, or over HTTP the
    /// `initialize` of a 2025-11-25 session where [`versions`](Self::versions) allows it
    /// and the server knows no `server/discover`.
    pub async fn connect(self) -> Result<Client, ClientError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| ClientError::Config(format!("{name:?} is not a header name")))?;
            let value = HeaderValue::try_from(value.as_str())
                .map_err(|_| ClientError::Config(format!("the value of {name} is not a header value")))?;
            headers.append(name, value);
        }
        if let Some(unknown) = self.versions.iter().find(|v| *v != PROTOCOL_VERSION && *v != legacy::VERSION) {
            return Err(ClientError::Config(format!(
                "this client speaks {PROTOCOL_VERSION} and {}, not {unknown}",
                legacy::VERSION
            )));
        }
        let modern = self.versions.first().is_some_and(|v| v == PROTOCOL_VERSION);
        let may_fall_back = self.versions.iter().any(|v| v == legacy::VERSION);
        if !modern && !may_fall_back {
            return Err(ClientError::Config("the client was given no protocol version to speak".into()));
        }
        if let (Target::Stdio(_), false) = (&self.target, self.versions.iter().any(|v| v == PROTOCOL_VERSION)) {
            return Err(ClientError::Config(format!("over stdio this client speaks {PROTOCOL_VERSION} only")));
        }
        let mut meta = JsonObject::new();
        meta.insert(meta_keys::PROTOCOL_VERSION.into(), PROTOCOL_VERSION.into());
        let mut capabilities = self.answers.capabilities();
        if self.tasks {
            capabilities["extensions"] = json!({ tasks::EXTENSION: {} });
        }
        meta.insert(meta_keys::CLIENT_CAPABILITIES.into(), capabilities);
        meta.insert(meta_keys::CLIENT_INFO.into(), json!(self.info));
        let transport = match self.target {
            Target::Http(url) => {
                Transport::Http(Arc::new(http::HttpTransport::new(&url, headers, self.limits.clone())?))
            }
            Target::Stdio(_) if !headers.is_empty() => {
                return Err(ClientError::Config("a server spoken to over stdio takes no HTTP headers".into()));
            }
            Target::Stdio(command) => {
                Transport::Stdio(Box::new(stdio::StdioTransport::spawn(command, self.limits.clone())?))
            }
        };
        let inner = Inner {
            transport,
            answers: Arc::new(self.answers),
            meta,
            limits: self.limits,
            next_id: AtomicU64::new(1),
            tools: tools::KnownTools::default(),
            listening: std::sync::Mutex::new(None),
        };
        let discovered = if modern {
            match inner.call("server/discover", json!({})).await.and_then(decode::<DiscoverResult>) {
                Ok(discovered) if discovered.supported_versions.iter().any(|v| v == PROTOCOL_VERSION) => discovered,
                Ok(discovered) if !may_fall_back => {
                    return Err(ClientError::Version { supported: discovered.supported_versions });
                }
                Err(error) if !may_fall_back || !refuses_the_era(&error) => return Err(error),
                _ => inner.initialize(&self.info).await?,
            }
        } else {
            inner.initialize(&self.info).await?
        };
        Ok(Client { inner: Arc::new(inner), discovered: Arc::new(discovered) })
    }
}

/// Where a client being set up will connect.
#[derive(Debug)]
enum Target {
    Http(String),
    Stdio(tokio::process::Command),
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
        let Transport::Http(http) = &self.transport else {
            return Err(ClientError::Config(format!("over stdio this client speaks {PROTOCOL_VERSION} only")));
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let Value::Object(params) = legacy::initialize_params(&self.answers, info) else { unreachable!("an object") };
        let body = message::request(id, "initialize", &params);
        let (result, session) = http.request(http::Wire::Initialize, id, body, &self.answers).await?;
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
        matches!(&self.transport, Transport::Http(http) if http.in_session())
    }

    async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let tools = self.list("tools/list", "tools").await?;
        Ok(self.tools.learn(tools))
    }

    async fn list<T: DeserializeOwned>(&self, method: &str, field: &str) -> Result<Vec<T>, ClientError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..self.limits.max_pages {
            let params = cursor.map_or_else(|| json!({}), |cursor| json!({"cursor": cursor}));
            let mut page = self.call(method, params).await?;
            let listed = page.remove(field).unwrap_or(Value::Null);
            let listed: Vec<T> = serde_json::from_value(listed).map_err(|error| {
                ClientError::Malformed(format!("the {method} result's {field} cannot be read: {error}"))
            })?;
            items.extend(listed);
            match page.remove("nextCursor") {
                Some(Value::String(next)) if !next.is_empty() => cursor = Some(next),
                _ => return Ok(items),
            }
        }
        Err(ClientError::Malformed(format!("{method} went on for more than {} pages", self.limits.max_pages)))
    }

    /// A request with the envelope's `_meta` added to its params' own, run to its final
    /// result.
    async fn call(&self, method: &str, params: Value) -> Result<JsonObject, ClientError> {
        let Value::Object(mut params) = params else {
            return Err(ClientError::Config(format!("the params of {method} must be a JSON object")));
        };
        // A session's requests carry the caller's `_meta` alone: the envelope's keys would
        // make them 2026-07-28 requests.
        if !self.in_session() {
            let meta = match params.remove("_meta") {
                Some(Value::Object(mut own)) => {
                    own.extend(self.meta.clone());
                    own
                }
                _ => self.meta.clone(),
            };
            params.insert("_meta".into(), Value::Object(meta));
        }
        rounds::run(self, method, params).await
    }

    /// One request as it goes on the wire (a round of a call, or all of a call that asks
    /// nothing), and its result.
    ///
    /// A server that refuses the version (`-32022`) while naming this client's among those
    /// it supports is asked once more (a server rolling between releases may say so for a
    /// moment); a refusal that does not name it fails the request.
    async fn send(&self, method: &str, params: &JsonObject) -> Result<JsonObject, ClientError> {
        match self.send_once(method, params).await {
            Err(ClientError::Rpc(refused)) if supports_ours(&refused) => self.send_once(method, params).await,
            sent => sent,
        }
    }

    async fn send_once(&self, method: &str, params: &JsonObject) -> Result<JsonObject, ClientError> {
        // Taken when the request is about to go, after any listing it needs: ids go out in order.
        let next = || {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
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
                let wire = http::Wire::Request { method, name, mirrored: &mirrored };
                let (id, body) = next();
                Ok(http.request(wire, id, body, &self.answers).await?.0)
            }
            Transport::Stdio(stdio) => {
                let (id, body) = next();
                stdio.request(id, body).await
            }
        }
    }
}

/// Whether `error` is how a server that knows no `server/discover` refuses it: a JSON-RPC
/// error, or an HTTP one (a 2025-11-25 server wants `initialize` first).
fn refuses_the_era(error: &ClientError) -> bool {
    matches!(error, ClientError::Rpc(_) | ClientError::Version { .. })
        || matches!(error, ClientError::Http { status, .. } if (400..500).contains(status))
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
