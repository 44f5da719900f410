//! Setting a client up: where it connects, what it answers, the bounds it keeps, the
//! versions it may speak; and [`Connect::connect`], which reaches the server over HTTP or
//! stdio and learns what it speaks (`server/discover`, or a 2025-11-25 session's
//! `initialize`).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::json;

use super::answers::Answers;
use super::error::ClientError;
use super::{decode, http, legacy, stdio, tasks, tools, Client, Inner, Transport};
use crate::protocol::{meta_keys, DiscoverResult, Implementation, JsonObject, PROTOCOL_VERSION};

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
    /// The largest response body read (an SSE stream whole, or one line over stdio); on a
    /// stream that stays open (a [`listen`](super::Client::listen) subscription, a
    /// 2025-11-25 session's standalone stream), the largest event. Default 16 MiB.
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

impl Connect {
    pub(super) fn new(target: Target) -> Self {
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
    /// does. Over stdio the same: a server that refuses `server/discover` gets
    /// `initialize` (a server that never answers it waits out
    /// [`ClientLimits::request_timeout`] first: name its version here).
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

    /// For a client given to [`Mount`](crate::mount::Mount): declares every kind of
    /// question (forms, URLs, sampling, roots), as the mount puts each of the server's
    /// questions to the caller whose call asked, gated on what that caller declared. A
    /// 2025-11-25 server hears a client's capabilities once, in `initialize`, so mounting
    /// one needs this; a 2026-07-28 server hears each caller's with each request. Replaces
    /// any [`answers`](Self::answers).
    pub fn relaying_questions(mut self) -> Self {
        self.answers = Answers::declaring_every_kind();
        self
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
        let mut meta = JsonObject::new();
        meta.insert(meta_keys::PROTOCOL_VERSION.into(), PROTOCOL_VERSION.into());
        let mut capabilities = self.answers.capabilities();
        if self.tasks {
            capabilities["extensions"] = json!({ tasks::EXTENSION: {} });
        }
        meta.insert(meta_keys::CLIENT_CAPABILITIES.into(), capabilities);
        meta.insert(meta_keys::CLIENT_INFO.into(), json!(self.info));
        let answers = Arc::new(self.answers);
        let transport = match self.target {
            Target::Http(url) => {
                Transport::Http(Arc::new(http::HttpTransport::new(&url, headers, self.limits.clone())?))
            }
            Target::Stdio(_) if !headers.is_empty() => {
                return Err(ClientError::Config("a server spoken to over stdio takes no HTTP headers".into()));
            }
            Target::Stdio(command) => {
                Transport::Stdio(Box::new(stdio::StdioTransport::spawn(command, self.limits.clone(), &answers)?))
            }
        };
        let inner = Inner {
            transport,
            answers,
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
pub(super) enum Target {
    Http(String),
    Stdio(tokio::process::Command),
}

/// Whether `error` is how a server that knows no `server/discover` refuses it: a JSON-RPC
/// error, or an HTTP one (a 2025-11-25 server wants `initialize` first).
fn refuses_the_era(error: &ClientError) -> bool {
    matches!(error, ClientError::Rpc(_))
        || matches!(error, ClientError::Http { status, .. } if (400..500).contains(status))
}
