//! One JSON-RPC request over Streamable HTTP, as a 2026-07-28 client sends it: the MCP
//! headers beside the body (`Mcp-Method`, `Mcp-Name`, base64-wrapped where a value cannot
//! travel as it is), and the reply read from JSON or from an SSE stream, whose notifications
//! come before the response. Bounded as a server's input deserves: the whole exchange in
//! [`ClientLimits::request_timeout`], the body in `max_response_bytes`, the head in
//! `max_header_bytes`; no redirect is followed.

use axum::body::Bytes;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Request, Uri};
use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use serde_json::Value;
use tokio::time::Instant;

use super::error::ClientError;
use super::message::reply;
use super::ClientLimits;
use crate::protocol::{JsonObject, PROTOCOL_VERSION};

/// A server's endpoint and how to reach it.
pub(super) struct HttpTransport {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    url: Uri,
    headers: HeaderMap,
    limits: ClientLimits,
}

impl HttpTransport {
    pub(super) fn new(url: &str, headers: HeaderMap, limits: ClientLimits) -> Result<Self, ClientError> {
        let url: Uri = url.parse().map_err(|error| ClientError::Config(format!("{url:?} is not a URL: {error}")))?;
        if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
            return Err(ClientError::Config(format!("{url} is not an http:// or https:// URL")));
        }
        let client = Client::builder(hyper_util::rt::TokioExecutor::new())
            .http1_max_buf_size(limits.max_header_bytes.max(8192))
            .build(crate::base::https::connector());
        Ok(Self { client, url, headers, limits })
    }

    /// Sends request `id` (its JSON `body`) and returns its result, or the server's error.
    /// `name` is what `Mcp-Name` carries for the methods that need it; `mirrored` are a
    /// tool call's `Mcp-Param-*` headers.
    pub(super) async fn request(
        &self,
        method: &str,
        name: Option<&str>,
        mirrored: &[(HeaderName, HeaderValue)],
        id: u64,
        body: Vec<u8>,
    ) -> Result<JsonObject, ClientError> {
        let deadline = Instant::now() + self.limits.request_timeout;
        let timed_out = |waiting_for| ClientError::Timeout { waiting_for, after: self.limits.request_timeout };
        let request = self.build(method, name, mirrored, body)?;
        let response = tokio::time::timeout_at(deadline, self.client.request(request))
            .await
            .map_err(|_| timed_out("the response"))?
            .map_err(|error| ClientError::Connect(describe(&error)))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response.headers().get(header::LOCATION).and_then(|value| value.to_str().ok());
            let detail = format!("redirected to {}; the client follows no redirects", location.unwrap_or("nowhere"));
            return Err(ClientError::Http { status: status.as_u16(), detail });
        }
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        let mut reader = Reader { body: response.into_body(), limit: self.limits.max_response_bytes, read: Vec::new() };
        let message = if is_sse {
            tokio::time::timeout_at(deadline, reader.sse_reply(id))
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
        reply(message, id)
    }

    fn build(
        &self,
        method: &str,
        name: Option<&str>,
        mirrored: &[(HeaderName, HeaderValue)],
        body: Vec<u8>,
    ) -> Result<Request<Full<Bytes>>, ClientError> {
        let mut request = Request::post(self.url.clone())
            .body(Full::new(Bytes::from(body)))
            .expect("a POST to a parsed URL is a request");
        let headers = request.headers_mut();
        headers.clone_from(&self.headers);
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
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

/// A header value carrying `text`: as it is when it can travel as it is, else in the
/// base64 sentinel (`=?base64?…?=`) servers decode before comparing it with the body.
pub(super) fn header_value(text: &str) -> HeaderValue {
    let wrap = text.bytes().any(|byte| !(0x20..0x7f).contains(&byte))
        || text.starts_with(' ')
        || text.ends_with(' ')
        || (text.starts_with("=?base64?") && text.ends_with("?="));
    let value = if wrap {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(text))
    } else {
        text.to_owned()
    };
    HeaderValue::from_str(&value).expect("visible ASCII, or base64 of it, is a header value")
}

/// The body of a response, read within a bound.
struct Reader {
    body: hyper::body::Incoming,
    limit: usize,
    read: Vec<u8>,
}

impl Reader {
    /// The next chunk, `None` at the end.
    async fn chunk(&mut self) -> Result<Option<Bytes>, ClientError> {
        loop {
            let Some(frame) = self.body.frame().await else { return Ok(None) };
            let frame = frame.map_err(|error| ClientError::Connect(describe(&error)))?;
            if let Ok(data) = frame.into_data() {
                if self.read.len() + data.len() > self.limit {
                    return Err(ClientError::TooLarge { limit: self.limit });
                }
                return Ok(Some(data));
            }
        }
    }

    async fn all(&mut self) -> Result<&[u8], ClientError> {
        while let Some(data) = self.chunk().await? {
            self.read.extend_from_slice(&data);
        }
        Ok(&self.read)
    }

    /// The response to `id` on an SSE stream: notifications before it are passed over.
    async fn sse_reply(&mut self, id: u64) -> Result<Value, ClientError> {
        let mut scanned = 0;
        loop {
            // Events end at a blank line; a line ends at LF (CR LF and CR alone are folded).
            while let Some(end) = find_event_end(&self.read[scanned..]) {
                let event = &self.read[scanned..scanned + end.0];
                scanned += end.1;
                if let Some(message) = event_data(event) {
                    let message: Value = serde_json::from_str(&message)
                        .map_err(|error| ClientError::Malformed(format!("an event's data is not JSON: {error}")))?;
                    if message.get("id").and_then(Value::as_u64) == Some(id) {
                        return Ok(message);
                    }
                }
            }
            let Some(data) = self.chunk().await? else {
                return Err(ClientError::Malformed("the event stream ended without the response".into()));
            };
            self.read.extend(data.iter().filter(|&&byte| byte != b'\r'));
        }
    }
}

/// Where the first event in `text` ends: the event's length, and how far to skip past it.
fn find_event_end(text: &[u8]) -> Option<(usize, usize)> {
    memchr::memmem::find(text, b"\n\n").map(|at| (at, at + 2))
}

/// The `data` of one event, its lines joined; `None` for an event without data.
fn event_data(event: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(event);
    let mut data: Option<String> = None;
    for line in text.split('\n') {
        let Some(value) = line.strip_prefix("data") else { continue };
        let Some(value) = value.strip_prefix(':').or(value.is_empty().then_some("")) else { continue };
        let value = value.strip_prefix(' ').unwrap_or(value);
        match &mut data {
            Some(data) => {
                data.push('\n');
                data.push_str(value);
            }
            None => data = Some(value.to_owned()),
        }
    }
    data
}

/// An error and its causes, on one line.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
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

    #[test]
    fn an_event_stream_yields_its_data_lines() {
        assert_eq!(event_data(b"event: message\ndata: {\"a\":1}").as_deref(), Some("{\"a\":1}"));
        assert_eq!(event_data(b"data: [1,\ndata: 2]").as_deref(), Some("[1,\n2]"));
        assert_eq!(event_data(b": a comment"), None);
        assert_eq!(find_event_end(b"data: 1\n\ndata: 2"), Some((7, 9)));
    }
}
