//! One JSON-RPC request over Streamable HTTP, as a 2026-07-28 client sends it: the MCP
//! headers beside the body (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`, base64-wrapped where a
//! value cannot travel as it is), and the reply read from JSON or from an SSE stream, whose
//! notifications come before the response. In a 2025-11-25 session instead: the session's
//! headers, the server's own requests on a stream answered by POSTs of their own, and a
//! stream cut before its response resumed with `Last-Event-ID`. Bounded as a server's input
//! deserves: the whole exchange in [`ClientLimits::request_timeout`], the body in
//! `max_response_bytes`, the head in `max_header_bytes`; no redirect is followed.

use std::sync::{Mutex, PoisonError, RwLock};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Request, Uri};
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::answers::Answers;
use super::error::{describe, ClientError};
use super::message::{reply, route_of};
use super::sse::Reader;
use super::{ClientLimits, Notices};
use crate::base::header_values::header_text;
use crate::protocol::{JsonObject, PROTOCOL_VERSION};

/// A server's endpoint and how to reach it.
pub(super) struct HttpTransport {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    url: Uri,
    headers: HeaderMap,
    limits: ClientLimits,
    /// The 2025-11-25 session, once `initialize` opened one (`None`: 2026-07-28).
    legacy: RwLock<Option<Legacy>>,
    /// Who hears the notifications of a session's standalone stream.
    watchers: Mutex<Vec<mpsc::Sender<Value>>>,
}

/// What every request of a 2025-11-25 session carries.
#[derive(Clone)]
struct Legacy {
    version: HeaderValue,
    session: Option<HeaderValue>,
}

/// How a request goes on the wire.
#[derive(Clone, Copy)]
pub(super) enum Wire<'a> {
    /// 2026-07-28 (or a session's request, once one is open): the MCP headers, which a
    /// session's requests leave out.
    Request {
        method: &'a str,
        name: Option<&'a str>,
        mirrored: &'a [(HeaderName, HeaderValue)],
        /// This request's `Authorization`, instead of the client's (a gateway's, per caller).
        authorization: Option<&'a HeaderValue>,
    },
    /// The 2025-11-25 `initialize`, before there is a session.
    Initialize,
    /// The client's answer to a session's server, to a request of its own.
    Answer,
}

/// How many of a session server's questions on one stream are answered at once.
const MAX_ANSWERING: usize = 16;

/// How many times a session's response stream is resumed before the request fails.
const MAX_RESUMES: usize = 3;
/// The wait before resuming when the server names none, and the longest one honoured.
const DEFAULT_RETRY: Duration = Duration::from_millis(500);
const MAX_RETRY: Duration = Duration::from_secs(10);

impl HttpTransport {
    pub(super) fn new(url: &str, headers: HeaderMap, limits: ClientLimits) -> Result<Self, ClientError> {
        let url: Uri = url.parse().map_err(|error| ClientError::Config(format!("{url:?} is not a URL: {error}")))?;
        if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
            return Err(ClientError::Config(format!("{url} is not an http:// or https:// URL")));
        }
        let client = Client::builder(hyper_util::rt::TokioExecutor::new())
            .http1_max_buf_size(limits.max_header_bytes.max(8192))
            .build(crate::base::https::connector());
        Ok(Self { client, url, headers, limits, legacy: RwLock::new(None), watchers: Mutex::new(Vec::new()) })
    }

    /// From now on, requests belong to the 2025-11-25 session `initialize` opened.
    pub(super) fn open_session(&self, version: &str, session: Option<HeaderValue>) -> Result<(), ClientError> {
        let version = HeaderValue::from_str(version)
            .map_err(|_| ClientError::Malformed(format!("the server chose the version {version:?}")))?;
        *self.legacy.write().unwrap_or_else(PoisonError::into_inner) = Some(Legacy { version, session });
        Ok(())
    }

    /// Whether a 2025-11-25 session is open.
    pub(super) fn in_session(&self) -> bool {
        self.legacy.read().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// Sends a notification of the session, such as `notifications/initialized`.
    pub(super) async fn notify(&self, method: &str) -> Result<(), ClientError> {
        let body = serde_json::to_vec(&serde_json::json!({"jsonrpc": "2.0", "method": method})).expect("JSON");
        self.post_response_body(body).await
    }

    fn session(&self) -> Option<Legacy> {
        self.legacy.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Sends request `id` (its JSON `body`) as `wire` says and returns its result, or the
    /// server's error, and the session id the response named. The notifications on the
    /// response's stream that name `notices`' key go to its sender. In a 2025-11-25 session
    /// the server may ask on that stream before it answers: `answers` answers it.
    pub(super) async fn request(
        &self,
        wire: Wire<'_>,
        id: u64,
        body: Vec<u8>,
        answers: &Answers,
        notices: Option<&Notices>,
    ) -> Result<(JsonObject, Option<HeaderValue>), ClientError> {
        let deadline = Instant::now() + self.limits.request_timeout;
        let timed_out = |waiting_for| ClientError::Timeout { waiting_for, after: self.limits.request_timeout };
        let request = self.build(wire, body)?;
        let response = tokio::time::timeout_at(deadline, self.client.request(request))
            .await
            .map_err(|_| timed_out("the response"))?
            .map_err(|error| ClientError::Connect(describe(&error)))?;
        let status = response.status();
        let session = response.headers().get("mcp-session-id").cloned();
        if status.is_redirection() {
            let location = response.headers().get(header::LOCATION).and_then(|value| value.to_str().ok());
            let detail = format!("redirected to {}; the client follows no redirects", location.unwrap_or("nowhere"));
            return Err(ClientError::Http { status: status.as_u16(), detail });
        }
        let is_sse = is_sse(response.headers());
        let mut reader = Reader::new(response.into_body(), self.limits.max_response_bytes);
        let message = if is_sse {
            tokio::time::timeout_at(deadline, self.stream_reply(&mut reader, id, answers, notices))
                .await
                .map_err(|_| timed_out("the response's stream"))??
        } else {
            let body = tokio::time::timeout_at(deadline, reader.all())
                .await
                .map_err(|_| timed_out("the response's body"))??;
            match serde_json::from_slice::<Value>(body) {
                Ok(message) => message,
                Err(_) if !status.is_success() => {
                    let detail = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
                    return Err(ClientError::Http { status: status.as_u16(), detail });
                }
                Err(error) => return Err(ClientError::Malformed(format!("the body is not JSON: {error}"))),
            }
        };
        Ok((reply(message, id)?, session))
    }

    /// The response to `id` on an SSE stream. Notifications before it go to `notices`
    /// when they name its key (and log messages, which are the request's), and are passed
    /// over otherwise; a session's server may ask
    /// first, and hears the application's answer in a POST of its own.
    async fn stream_reply(
        &self,
        reader: &mut Reader,
        id: u64,
        answers: &Answers,
        notices: Option<&Notices>,
    ) -> Result<Value, ClientError> {
        let mut resumed = 0;
        // The server's questions, each answered and its answer posted while the stream is
        // read on: questions asked together are answered together.
        let mut answering = FuturesUnordered::new();
        loop {
            loop {
                let message = tokio::select! {
                    // Reading a message is cancel-safe: a chunk is taken whole, or not at all.
                    message = reader.next_message() => message?,
                    Some(posted) = answering.next(), if !answering.is_empty() => {
                        posted?;
                        continue;
                    }
                };
                let Some(message) = message else { break };
                match (message.get("method").is_some(), message.get("id")) {
                    (false, Some(replied)) if replied.as_u64() == Some(id) => return Ok(message),
                    (true, Some(_)) if self.session().is_some() => {
                        // At most so many at once: past it, the stream waits for one.
                        if answering.len() >= MAX_ANSWERING {
                            if let Some(posted) = answering.next().await {
                                posted?;
                            }
                        }
                        answering.push(async move {
                            let response = super::legacy::respond(answers, message).await;
                            self.post_response(response).await
                        });
                    }
                    (true, None) => {
                        // A log message on a request's stream is the request's; the others
                        // name the call they belong to.
                        let ours = |key: &u64| {
                            route_of(&message) == Some(*key) || message["method"] == "notifications/message"
                        };
                        if let Some((_, sender)) = notices.filter(|(key, _)| ours(key)) {
                            // Full: the reader is far behind, and the newest is dropped.
                            let _ = sender.try_send(message);
                        }
                    }
                    _ => {}
                }
            }
            // A session's stream that ends early is resumed after its last event, once the
            // server's `retry` has passed (2025-11-25 resumability), a bounded number of times.
            let last = reader.last_event_id().map(str::to_owned);
            let (Some(_), Some(last)) = (self.session(), last) else {
                return Err(ClientError::Malformed("the event stream ended without the response".into()));
            };
            if resumed == MAX_RESUMES {
                return Err(ClientError::Malformed(format!(
                    "the event stream ended {MAX_RESUMES} times without the response"
                )));
            }
            resumed += 1;
            tokio::time::sleep(reader.retry().unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)).await;
            let body = self.get_stream(Some(&last)).await?.ok_or_else(|| {
                ClientError::Malformed("the event stream ended without the response, and cannot be resumed".into())
            })?;
            *reader = Reader::resuming(body, reader);
        }
    }

    /// A session's stream opened with GET: after `last_event_id` (resuming one), or the
    /// standalone stream on which the server sends requests outside any call. `None` when
    /// the server offers none (405).
    pub(super) async fn get_stream(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<Option<hyper::body::Incoming>, ClientError> {
        let mut request = Request::get(self.url.clone()).body(Full::new(Bytes::new())).expect("a GET of a parsed URL");
        let headers = request.headers_mut();
        headers.clone_from(&self.headers);
        headers.insert(header::ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(session) = self.session() {
            headers.insert(HeaderName::from_static("mcp-protocol-version"), session.version);
            if let Some(id) = session.session {
                headers.insert(HeaderName::from_static("mcp-session-id"), id);
            }
        }
        if let Some(last) = last_event_id {
            let last = HeaderValue::from_str(last)
                .map_err(|_| ClientError::Malformed("an event id that cannot be a header".into()))?;
            headers.insert(HeaderName::from_static("last-event-id"), last);
        }
        let response = tokio::time::timeout(self.limits.request_timeout, self.client.request(request))
            .await
            .map_err(|_| ClientError::Timeout { waiting_for: "the event stream", after: self.limits.request_timeout })?
            .map_err(|error| ClientError::Connect(describe(&error)))?;
        if !response.status().is_success() {
            return Ok(None);
        }
        Ok(Some(response.into_body()))
    }

    /// Answers, on a spawned task, the requests the server sends on a session's standalone
    /// stream, for as long as the stream lasts and `answers` is alive.
    pub(super) fn listen(
        self: &std::sync::Arc<Self>,
        body: hyper::body::Incoming,
        answers: std::sync::Weak<Answers>,
    ) -> tokio::task::JoinHandle<()> {
        let transport = std::sync::Arc::downgrade(self);
        let limit = self.limits.max_response_bytes;
        tokio::spawn(async move {
            let mut reader = Reader::lasting(body, limit);
            while let Ok(Some(message)) = reader.next_message().await {
                if message.get("method").is_none() {
                    continue;
                }
                if message.get("id").is_none() {
                    if let Some(transport) = transport.upgrade() {
                        transport.tell_watchers(&message);
                    }
                    continue;
                }
                let (Some(transport), Some(answers)) = (transport.upgrade(), answers.upgrade()) else { return };
                let response = super::legacy::respond(&answers, message).await;
                if let Err(error) = transport.post_response(response).await {
                    tracing::warn!(%error, "answering the server's request on its stream failed");
                }
            }
        })
    }

    /// Watches the notifications of a session's standalone stream (the lists that changed,
    /// the resources updated) from now on.
    pub(super) fn watch(&self, watcher: mpsc::Sender<Value>) {
        lock(&self.watchers).push(watcher);
    }

    /// Hands a notification of the session's standalone stream to every watcher still
    /// watching; one far behind misses it.
    fn tell_watchers(&self, notification: &Value) {
        lock(&self.watchers).retain(|watcher| match watcher.try_send(notification.clone()) {
            Err(mpsc::error::TrySendError::Closed(_)) => false,
            Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => true,
        });
    }

    /// Sends request `id` (its JSON `body`), whose response is a stream that stays open,
    /// and returns the stream; a response that is not a stream is the server's error.
    pub(super) async fn open_stream(&self, wire: Wire<'_>, id: u64, body: Vec<u8>) -> Result<Reader, ClientError> {
        let request = self.build(wire, body)?;
        let after = self.limits.request_timeout;
        let response = tokio::time::timeout(after, self.client.request(request))
            .await
            .map_err(|_| ClientError::Timeout { waiting_for: "the response", after })?
            .map_err(|error| ClientError::Connect(describe(&error)))?;
        let status = response.status();
        if is_sse(response.headers()) {
            return Ok(Reader::lasting(response.into_body(), self.limits.max_response_bytes));
        }
        let mut reader = Reader::new(response.into_body(), self.limits.max_response_bytes);
        let body = tokio::time::timeout(after, reader.all())
            .await
            .map_err(|_| ClientError::Timeout { waiting_for: "the response's body", after })??;
        match serde_json::from_slice::<Value>(body) {
            Ok(message) => Err(reply(message, id).err().unwrap_or_else(|| {
                ClientError::Malformed("the server answered a request for a stream with a result".into())
            })),
            Err(_) => Err(ClientError::Http {
                status: status.as_u16(),
                detail: String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
            }),
        }
    }

    /// A response to the server's own request, sent in the session.
    async fn post_response(&self, response: Value) -> Result<(), ClientError> {
        self.post_response_body(serde_json::to_vec(&response).expect("a JSON value is JSON")).await
    }

    /// A message that expects no response (an answer, a notification), sent in the
    /// session; the server acknowledges it with a 2xx.
    async fn post_response_body(&self, body: Vec<u8>) -> Result<(), ClientError> {
        let request = self.build(Wire::Answer, body)?;
        let answered = tokio::time::timeout(self.limits.request_timeout, self.client.request(request))
            .await
            .map_err(|_| ClientError::Timeout {
                waiting_for: "the server to take an answer",
                after: self.limits.request_timeout,
            })?
            .map_err(|error| ClientError::Connect(describe(&error)))?;
        if !answered.status().is_success() {
            let detail = format!("the server refused a message of the session with HTTP {}", answered.status());
            return Err(ClientError::Http { status: answered.status().as_u16(), detail });
        }
        Ok(())
    }

    fn build(&self, wire: Wire<'_>, body: Vec<u8>) -> Result<Request<Full<Bytes>>, ClientError> {
        let mut request = Request::post(self.url.clone())
            .body(Full::new(Bytes::from(body)))
            .expect("a POST to a parsed URL is a request");
        let headers = request.headers_mut();
        headers.clone_from(&self.headers);
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        if let Wire::Initialize = wire {
            // `initialize` names no version in a header: the body does.
            return Ok(request);
        }
        if let Wire::Request { authorization: Some(authorization), .. } = wire {
            headers.insert(header::AUTHORIZATION, authorization.clone());
        }
        if let Some(session) = self.session() {
            headers.insert(HeaderName::from_static("mcp-protocol-version"), session.version);
            if let Some(id) = session.session {
                headers.insert(HeaderName::from_static("mcp-session-id"), id);
            }
            return Ok(request);
        }
        let Wire::Request { method, name, mirrored, .. } = wire else { return Ok(request) };
        headers.insert(HeaderName::from_static("mcp-protocol-version"), HeaderValue::from_static(PROTOCOL_VERSION));
        let method = HeaderValue::from_str(method)
            .map_err(|_| ClientError::Config(format!("{method:?} cannot be a method name")))?;
        headers.insert(HeaderName::from_static("mcp-method"), method);
        if let Some(name) = name {
            headers.insert(HeaderName::from_static("mcp-name"), header_value(name));
        }
        for (name, value) in mirrored {
            headers.insert(name.clone(), value.clone());
        }
        Ok(request)
    }
}

/// Whether a response's body is an event stream.
fn is_sse(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A header value carrying `text`: as it is when it can travel as it is, else in the
/// base64 sentinel (`=?base64?…?=`) servers decode before comparing it with the body.
pub(super) fn header_value(text: &str) -> HeaderValue {
    let value = header_text(&Value::String(text.to_owned()));
    HeaderValue::from_str(&value).expect("visible ASCII, or base64 of it, is a header value")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_cannot_travel_as_they_are_are_wrapped() {
        assert_eq!(header_value("get_weather"), "get_weather");
        assert_eq!(header_value("file:///a b.txt"), "file:///a b.txt");
        assert_eq!(header_value(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(header_value("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(header_value("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
    }
}
