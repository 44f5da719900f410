//! The per-request envelope: reading a JSON-RPC message, telling modern (2026-07-28)
//! from legacy (2025-11-25) traffic, and parsing `params._meta`.
//!
//! Entry points: [`read_modern`] for the common case (a well-formed modern request, read
//! straight from the bytes), [`Incoming::from_value`] for the framing of everything else,
//! [`classify`] for the era, [`RequestMeta::parse`] for the envelope and
//! [`check_version`] for the version.

mod fast;
pub(crate) mod size;
mod trace;

use serde::Deserialize as _;
use serde_json::Value;

pub(crate) use self::fast::read_modern;
pub use self::trace::{TraceContext, TraceParent};
use crate::base::error::Error;
use crate::protocol::{meta_keys, ClientCapabilities, Implementation, JsonObject, LoggingLevel, Method, RequestId};

pub(crate) use crate::protocol::PROTOCOL_VERSION;

/// Versions a modern request may name in `_meta`.
pub(crate) const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION];

/// Versions that select the legacy, session-based lifecycle.
pub(crate) const LEGACY_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// A JSON-RPC request the server must answer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Request {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    /// `method` in the protocol's table, looked up once when the request is read; `None`
    /// for a method of the server's own, or one nobody serves.
    pub(crate) known: Option<Method>,
    pub(crate) params: Option<Value>,
}

impl Request {
    pub(crate) fn new(id: RequestId, method: String, params: Option<Value>) -> Self {
        let known = Method::parse(&method);
        Self { id, method, known, params }
    }
}

/// What one JSON-RPC message from a client turned out to be.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Incoming {
    Request(Request),
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// A client's answer to a server-to-client request (legacy sessions only).
    Response {
        id: RequestId,
        outcome: Result<Value, Value>,
    },
}

impl Incoming {
    /// Reads the JSON-RPC framing. On failure, returns the id when it could be read, so
    /// the error can echo it.
    pub(crate) fn from_value(value: Value) -> Result<Self, (Option<RequestId>, Error)> {
        let Value::Object(mut object) = value else {
            let what = if value.is_array() { "batches are not supported" } else { "not an object" };
            return Err((None, Error::invalid_request(format!("Invalid request: {what}"))));
        };
        let id = match object.get("id") {
            None => None,
            Some(raw) => match RequestId::from_value(raw) {
                Some(id) => Some(id),
                None => return Err((None, Error::invalid_request("Invalid request: id must be a string or a number"))),
            },
        };
        let invalid = |detail: &'static str| Err((id.clone(), Error::invalid_request(detail)));
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return invalid("Invalid request: jsonrpc must be \"2.0\"");
        }
        let method = match object.remove("method") {
            Some(Value::String(method)) => method,
            Some(_) => return invalid("Invalid request: method must be a string"),
            None => return response(id, object),
        };
        let params = object.remove("params");
        if params.as_ref().is_some_and(|p| !p.is_object()) {
            return invalid("Invalid request: params must be an object");
        }
        Ok(match id {
            Some(id) => Self::Request(Request::new(id, method, params)),
            None => Self::Notification { method, params },
        })
    }
}

/// A message without a method: a response to one of our requests, or nothing valid.
fn response(
    id: Option<RequestId>,
    mut object: serde_json::Map<String, Value>,
) -> Result<Incoming, (Option<RequestId>, Error)> {
    let outcome = match (object.remove("result"), object.remove("error")) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(error),
        _ => return Err((id, Error::invalid_request("Invalid request: missing method"))),
    };
    match id {
        Some(id) => Ok(Incoming::Response { id, outcome }),
        None => Err((None, Error::invalid_request("Invalid response: missing id"))),
    }
}

/// Not part of the API: lets `benches/envelope.rs` time reading a request's envelope by
/// the fast path or by the general one. Whether a modern request with its envelope came out.
#[doc(hidden)]
pub fn bench_read_envelope(body: &[u8], fast: bool) -> bool {
    if fast {
        return read_modern(body).is_some();
    }
    let Ok(value) = serde_json::from_slice(body) else { return false };
    match Incoming::from_value(value) {
        Ok(Incoming::Request(request)) => RequestMeta::parse(request.params.as_ref()).is_ok(),
        _ => false,
    }
}

pub(crate) use crate::protocol::Era;

/// Which lifecycle a request belongs to: 2026-07-28, where every request carries its own
/// `_meta` envelope, or 2025-11-25 (and earlier), with `initialize` and a session; `None`
/// without a clue either way (no `_meta` version, no version header, not `initialize`).
/// The modern envelope wins over everything (spec digest §1.2).
pub(crate) fn classify(request: &Request, header_version: Option<&str>, has_session: bool) -> Option<Era> {
    let body_version =
        request.params.as_ref().and_then(|p| p.get("_meta")).and_then(|m| m.get(meta_keys::PROTOCOL_VERSION));
    if body_version.is_some() {
        return Some(Era::Modern);
    }
    match header_version {
        _ if names_modern(header_version) => Some(Era::Modern),
        Some(_) => Some(Era::Legacy),
        None if has_session || request.known == Some(Method::Initialize) => Some(Era::Legacy),
        None => None,
    }
}

/// Whether an `MCP-Protocol-Version` header names a version other than the legacy ones.
pub(crate) fn names_modern(header_version: Option<&str>) -> bool {
    header_version.is_some_and(|v| !LEGACY_VERSIONS.contains(&v))
}

/// Fails with `-32022` unless `version` is one this server speaks.
pub(crate) fn check_version(version: &str) -> Result<(), Error> {
    if SUPPORTED_VERSIONS.contains(&version) {
        Ok(())
    } else {
        Err(Error::unsupported_protocol_version(version, SUPPORTED_VERSIONS))
    }
}

/// The per-request `_meta` envelope of a modern request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`.
    pub protocol_version: String,
    /// `io.modelcontextprotocol/clientCapabilities`: the only source of truth for what
    /// the client can do on this request.
    pub client_capabilities: ClientCapabilities,
    /// `io.modelcontextprotocol/clientInfo`, for display and logs only.
    pub client_info: Option<Implementation>,
    /// `progressToken`: the request opted in to progress notifications.
    pub progress_token: Option<RequestId>,
    /// `io.modelcontextprotocol/logLevel`: the request opted in to log notifications.
    pub log_level: Option<LoggingLevel>,
    /// `traceparent`, `tracestate` and `baggage` (SEP-414), the valid ones.
    pub trace: TraceContext,
    /// Every other member of `_meta`, as sent: keys of the application's own.
    pub extra: JsonObject,
}

/// The `_meta` keys of W3C trace context (SEP-414), unprefixed.
pub(crate) const TRACEPARENT: &str = "traceparent";
pub(crate) const TRACESTATE: &str = "tracestate";
pub(crate) const BAGGAGE: &str = "baggage";

/// Whether `key` is one the envelope reads itself (the rest goes to `extra`).
fn is_envelope_key(key: &str) -> bool {
    matches!(
        key,
        meta_keys::PROTOCOL_VERSION
            | meta_keys::CLIENT_CAPABILITIES
            | meta_keys::CLIENT_INFO
            | meta_keys::PROGRESS_TOKEN
            | meta_keys::LOG_LEVEL
            | TRACEPARENT
            | TRACESTATE
            | BAGGAGE
    )
}

impl RequestMeta {
    /// Parses `params._meta`. Every failure is `-32602` with HTTP 400: a request whose
    /// envelope is incomplete cannot be served at all.
    pub(crate) fn parse(params: Option<&Value>) -> Result<Self, Error> {
        let meta = params.and_then(|p| p.get("_meta")).ok_or_else(|| envelope_error("missing params._meta"))?;
        let Value::Object(meta) = meta else {
            return Err(envelope_error("params._meta must be an object"));
        };
        let protocol_version = match meta.get(meta_keys::PROTOCOL_VERSION) {
            Some(Value::String(v)) => v.clone(),
            Some(_) => return Err(envelope_error("_meta protocolVersion must be a string")),
            None => return Err(envelope_error("missing _meta[\"io.modelcontextprotocol/protocolVersion\"]")),
        };
        let client_capabilities = match meta.get(meta_keys::CLIENT_CAPABILITIES) {
            Some(caps) => parse_capabilities(caps)?,
            None => return Err(envelope_error("missing _meta[\"io.modelcontextprotocol/clientCapabilities\"]")),
        };
        Ok(Self {
            protocol_version,
            client_capabilities,
            client_info: optional(meta, meta_keys::CLIENT_INFO)?,
            progress_token: optional(meta, meta_keys::PROGRESS_TOKEN)?,
            log_level: optional(meta, meta_keys::LOG_LEVEL)?,
            trace: trace_of(meta),
            extra: extra_of(meta),
        })
    }
}

/// The trace context a `_meta` object carries (SEP-414), valid parts only.
pub(crate) fn trace_of(meta: &JsonObject) -> TraceContext {
    let text = |key| meta.get(key).and_then(Value::as_str);
    TraceContext::read(text(TRACEPARENT), text(TRACESTATE), text(BAGGAGE))
}

/// The members of a `_meta` object the envelope does not read itself.
pub(crate) fn extra_of(meta: &JsonObject) -> JsonObject {
    meta.iter().filter(|(key, _)| !is_envelope_key(key)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Capabilities are objects all the way down: serde would also take `[]` for a struct,
/// so the shape is checked before the typed parse.
fn parse_capabilities(caps: &Value) -> Result<ClientCapabilities, Error> {
    let Value::Object(members) = caps else {
        return Err(envelope_error("_meta clientCapabilities must be an object"));
    };
    if let Some((name, _)) = members.iter().find(|(_, v)| !v.is_object()) {
        return Err(envelope_error(format!("client capability {name:?} must be an object")));
    }
    ClientCapabilities::deserialize(caps).map_err(|e| envelope_error(format!("invalid _meta clientCapabilities: {e}")))
}

fn optional<T: serde::de::DeserializeOwned>(
    meta: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<T>, Error> {
    meta.get(key).map(T::deserialize).transpose().map_err(|e| envelope_error(format!("invalid _meta[{key:?}]: {e}")))
}

fn envelope_error(detail: impl std::fmt::Display) -> Error {
    Error::invalid_params(format!("Invalid request envelope: {detail}")).with_status(400)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(params: Value) -> Request {
        Request::new(1.into(), "tools/list".into(), Some(params))
    }

    #[test]
    fn framing_rejects_what_is_not_a_request() {
        for (value, echoed) in [
            (json!([]), None),
            (json!(7), None),
            (json!({"jsonrpc": "2.0", "id": null, "method": "x"}), None),
            (json!({"jsonrpc": "1.0", "id": 3, "method": "x"}), Some(3.into())),
            (json!({"jsonrpc": "2.0", "id": "a"}), Some("a".into())),
            (json!({"jsonrpc": "2.0", "result": {}}), None),
            (json!({"jsonrpc": "2.0", "id": 4, "method": 5}), Some(4.into())),
            (json!({"jsonrpc": "2.0", "id": 5, "method": "x", "params": [1]}), Some(5.into())),
        ] {
            let (id, error) = Incoming::from_value(value.clone()).unwrap_err();
            assert_eq!(id, echoed, "{value}");
            assert_eq!(error.code(), crate::base::error::ErrorCode::INVALID_REQUEST, "{value}");
        }
    }

    #[test]
    fn framing_tells_requests_from_notifications() {
        let request = Incoming::from_value(json!({"jsonrpc": "2.0", "id": 1.5, "method": "m"})).unwrap();
        assert!(matches!(request, Incoming::Request(Request { ref method, .. }) if method == "m"));
        let note = Incoming::from_value(json!({"jsonrpc": "2.0", "method": "n"})).unwrap();
        assert!(matches!(note, Incoming::Notification { .. }));
    }

    #[test]
    fn modern_envelope_wins_over_legacy_clues() {
        let modern = request(json!({"_meta": {meta_keys::PROTOCOL_VERSION: "2026-07-28"}}));
        assert_eq!(classify(&modern, Some("2025-11-25"), true), Some(Era::Modern));
        let bare = request(json!({}));
        assert_eq!(classify(&bare, Some("2026-07-28"), false), Some(Era::Modern));
        assert_eq!(classify(&bare, Some("2025-11-25"), false), Some(Era::Legacy));
        assert_eq!(classify(&bare, None, true), Some(Era::Legacy));
        assert_eq!(classify(&bare, None, false), None);
        let init = Request::new(bare.id.clone(), "initialize".into(), bare.params.clone());
        assert_eq!(classify(&init, None, false), Some(Era::Legacy));
    }

    #[test]
    fn envelope_requires_version_and_capabilities() {
        let version = meta_keys::PROTOCOL_VERSION;
        let caps = meta_keys::CLIENT_CAPABILITIES;
        for params in [
            json!({}),
            json!({"_meta": 1}),
            json!({"_meta": {caps: {}}}),
            json!({"_meta": {version: 2026, caps: {}}}),
            json!({"_meta": {version: "2026-07-28"}}),
            json!({"_meta": {version: "2026-07-28", caps: []}}),
            json!({"_meta": {version: "2026-07-28", caps: {"sampling": true}}}),
            json!({"_meta": {version: "2026-07-28", caps: {}, "io.modelcontextprotocol/logLevel": "loud"}}),
            json!({"_meta": {version: "2026-07-28", caps: {}, "progressToken": {}}}),
        ] {
            let error = RequestMeta::parse(Some(&params)).unwrap_err();
            assert_eq!(
                (error.code(), error.http_status()),
                (crate::base::error::ErrorCode::INVALID_PARAMS, 400),
                "{params}"
            );
        }
    }

    #[test]
    fn envelope_reads_optional_fields() {
        let params = json!({"_meta": {
            meta_keys::PROTOCOL_VERSION: "2026-07-28",
            meta_keys::CLIENT_CAPABILITIES: {"roots": {"listChanged": true}, "elicitation": {}},
            meta_keys::LOG_LEVEL: "warning",
            "progressToken": 9,
        }});
        let meta = RequestMeta::parse(Some(&params)).unwrap();
        assert_eq!(meta.log_level, Some(LoggingLevel::Warning));
        assert_eq!(meta.progress_token, Some(9.into()));
        assert!(meta.client_capabilities.roots.is_some());
        assert!(meta.client_capabilities.elicitation.is_some());
        assert!(meta.client_info.is_none());
    }
}
