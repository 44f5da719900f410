//! The common case, read without a tree for the envelope: a well-formed 2026-07-28
//! request, its `_meta` read straight into a [`RequestMeta`] (once per distinct text: a
//! client sends the same one every time) and the rest of its params into a tree without it.
//!
//! This path only ever accepts what the general path (`Incoming::from_value`, [`classify`],
//! [`RequestMeta::parse`]) accepts, and reads it the same: a repeated key counts once, the
//! last time, as in a tree. For anything else (a malformed message, a notification, a
//! response, a legacy request, a `_meta` the general path would refuse) it steps aside
//! with `None`: the general path then reads the message, words the error and decides. So
//! no error is ever worded twice. Keys are compared where they lie in the body, not copied.
//!
//! [`classify`]: super::classify

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::{self, value::MapAccessDeserializer, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{Request, RequestMeta};
use crate::protocol::{meta_keys, ClientCapabilities, JsonObject, RequestId};

/// A modern request and its envelope, or `None` when the general path must read it.
pub(crate) fn read_modern(bytes: &[u8]) -> Option<(Request, Arc<RequestMeta>)> {
    // Checked once as a whole, rather than string by string as `from_slice` would.
    let text = std::str::from_utf8(bytes).ok()?;
    let frame: Frame<'_> = serde_json::from_str(text).ok()?;
    if frame.jsonrpc != "2.0" {
        return None;
    }
    let Params { meta, rest } = frame.params;
    let request = Request::new(frame.id.0, frame.method, Some(Value::Object(rest)));
    Some((request, meta))
}

/// A request's framing. Fields the general path ignores are ignored here too.
#[derive(Deserialize)]
struct Frame<'a> {
    /// Borrowed: an escaped `"2.0"` (legal, never seen) takes the general path.
    jsonrpc: &'a str,
    id: Id,
    method: String,
    params: Params,
}

/// A string or a number, as the general path reads ids.
struct Id(RequestId);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdVisitor).map(Id)
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = RequestId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or a number")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<RequestId, E> {
        Ok(RequestId::Number(n.into()))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<RequestId, E> {
        Ok(RequestId::Number(n.into()))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<RequestId, E> {
        serde_json::Number::from_f64(n).map(RequestId::Number).ok_or_else(|| E::custom("not a JSON number"))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<RequestId, E> {
        Ok(RequestId::String(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<RequestId, E> {
        Ok(RequestId::String(s))
    }
}

/// The params: `_meta` typed, every other member as a tree.
struct Params {
    meta: Arc<RequestMeta>,
    rest: JsonObject,
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ParamsVisitor)
    }
}

struct ParamsVisitor;

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = Params;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("params with a _meta")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
        let mut meta = None;
        // Room for the members a call has (`name`, `arguments`, `inputResponses`,
        // `requestState`) at once: an ordered map grows by reallocating twice.
        let mut rest = JsonObject::with_capacity(4);
        while let Some(Key(key)) = map.next_key()? {
            if key == "_meta" {
                let raw: &RawValue = map.next_value()?;
                meta = Some(envelope(raw.get()).ok_or_else(|| de::Error::custom("not an envelope"))?);
            } else {
                rest.insert(key.into_owned(), map.next_value()?);
            }
        }
        Ok(Params { meta: meta.ok_or_else(|| de::Error::custom("no _meta"))?, rest })
    }
}

/// Envelopes kept per thread; the list is cleared when full. Few: a server's clients are
/// a handful of programs, each sending one text, and a miss costs a scan of them all.
const ENVELOPES_KEPT: usize = 16;
/// The longest `_meta` kept, in bytes: whatever clients send, the cache stays small.
const LONGEST_KEPT: usize = 1024;

thread_local! {
    /// The envelopes read recently on this thread, by their exact text, newest last. A
    /// client sends the same `_meta` with every request, and reading it was a third of
    /// reading a request. A list rather than a hash map: the text a thread reads next is
    /// nearly always one of the last few, found by comparing lengths and then bytes, where
    /// hashing the whole text cost more than that.
    static ENVELOPES: RefCell<Vec<(Box<str>, Arc<RequestMeta>)>> = const { RefCell::new(Vec::new()) };
}

/// The envelope written as `raw` (a JSON value), read once per distinct text.
fn envelope(raw: &str) -> Option<Arc<RequestMeta>> {
    let kept = raw.len() <= LONGEST_KEPT;
    if kept {
        let known = ENVELOPES.with_borrow(|envelopes| {
            envelopes.iter().rev().find(|(text, _)| **text == *raw).map(|(_, meta)| meta.clone())
        });
        if let Some(meta) = known {
            return Some(meta);
        }
    }
    let mut deserializer = serde_json::Deserializer::from_str(raw);
    let meta = Arc::new(de::DeserializeSeed::deserialize(MetaSeed, &mut deserializer).ok()?);
    if kept {
        ENVELOPES.with_borrow_mut(|envelopes| {
            if envelopes.len() >= ENVELOPES_KEPT {
                envelopes.clear();
            }
            envelopes.push((raw.into(), meta.clone()));
        });
    }
    Some(meta)
}

/// `_meta`, read as [`RequestMeta::parse`] reads it: version and capabilities required,
/// the optional members typed when present (`null` included), everything else ignored.
struct MetaSeed;

impl<'de> de::DeserializeSeed<'de> for MetaSeed {
    type Value = RequestMeta;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RequestMeta, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed {
    type Value = RequestMeta;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request envelope")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RequestMeta, A::Error> {
        let (mut version, mut capabilities) = (None, None);
        let (mut traceparent, mut tracestate, mut baggage) = (None, None, None);
        let mut meta = RequestMeta::default();
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                meta_keys::PROTOCOL_VERSION => version = Some(map.next_value::<String>()?),
                meta_keys::CLIENT_CAPABILITIES => capabilities = Some(map.next_value::<Capabilities>()?.0),
                meta_keys::CLIENT_INFO => meta.client_info = Some(map.next_value()?),
                meta_keys::PROGRESS_TOKEN => meta.progress_token = Some(map.next_value::<Id>()?.0),
                meta_keys::LOG_LEVEL => meta.log_level = Some(map.next_value()?),
                // Trace keys are read as strings; anything else is as if absent.
                super::TRACEPARENT => traceparent = map.next_value::<Value>()?.as_str().map(str::to_owned),
                super::TRACESTATE => tracestate = map.next_value::<Value>()?.as_str().map(str::to_owned),
                super::BAGGAGE => baggage = map.next_value::<Value>()?.as_str().map(str::to_owned),
                _ => {
                    let value = map.next_value::<Value>()?;
                    meta.extra.insert(key.into_owned(), value);
                }
            }
        }
        meta.trace = super::TraceContext::read(traceparent.as_deref(), tracestate.as_deref(), baggage.as_deref());
        meta.protocol_version = version.ok_or_else(|| de::Error::custom("no protocol version"))?;
        meta.client_capabilities = capabilities.ok_or_else(|| de::Error::custom("no capabilities"))?;
        Ok(meta)
    }
}

/// Client capabilities, every member an object (as the general path requires).
struct Capabilities(ClientCapabilities);

impl<'de> Deserialize<'de> for Capabilities {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(CapabilitiesVisitor).map(Capabilities)
    }
}

struct CapabilitiesVisitor;

impl<'de> Visitor<'de> for CapabilitiesVisitor {
    type Value = ClientCapabilities;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("client capabilities")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClientCapabilities, A::Error> {
        let mut caps = ClientCapabilities::default();
        while let Some(Key(key)) = map.next_key()? {
            match &*key {
                "experimental" => caps.experimental = Some(map.next_value()?),
                "roots" => caps.roots = Some(map.next_value()?),
                "sampling" => caps.sampling = Some(map.next_value::<Object<_>>()?.0),
                "elicitation" => caps.elicitation = Some(map.next_value::<Object<_>>()?.0),
                "extensions" => caps.extensions = Some(map.next_value()?),
                _ => {
                    map.next_value::<Object<IgnoredAny>>()?;
                }
            }
        }
        Ok(caps)
    }
}

/// An object key: borrowed from the body unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor).map(Key)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(key))
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key.to_owned()))
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key))
    }
}

/// A `T` that must be written as a JSON object: a derived struct would also take an array.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor(PhantomData)).map(Object)
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::intake::envelope::{classify, Era, Incoming};

    /// What the general path makes of `body`: the request, its params without `_meta`,
    /// and its envelope, when it is a modern request whose envelope parses.
    fn general(body: &[u8]) -> Option<(Request, RequestMeta)> {
        let value: Value = serde_json::from_slice(body).ok()?;
        let Ok(Incoming::Request(mut request)) = Incoming::from_value(value) else { return None };
        if classify(&request, None, false) != Some(Era::Modern) {
            return None;
        }
        let meta = RequestMeta::parse(request.params.as_ref()).ok()?;
        if let Some(Value::Object(params)) = request.params.as_mut() {
            params.remove("_meta");
        }
        Some((request, meta))
    }

    fn envelope(extra: &Value) -> Value {
        let mut meta = json!({
            meta_keys::PROTOCOL_VERSION: "2026-07-28",
            meta_keys::CLIENT_CAPABILITIES: {"elicitation": {"form": {}}, "roots": {"listChanged": true}},
        });
        for (key, value) in extra.as_object().unwrap() {
            meta[key] = value.clone();
        }
        meta
    }

    /// Every body either steps aside or reads exactly as the general path reads it.
    #[test]
    fn reads_what_the_general_path_reads_or_steps_aside() {
        let mut bodies: Vec<String> = Vec::new();
        let metas = [
            json!({}),
            json!({meta_keys::CLIENT_INFO: {"name": "c", "version": "1"}}),
            json!({meta_keys::CLIENT_INFO: null}),
            json!({meta_keys::CLIENT_INFO: ["c", "1"]}),
            json!({meta_keys::PROGRESS_TOKEN: 7}),
            json!({meta_keys::PROGRESS_TOKEN: "p"}),
            json!({meta_keys::PROGRESS_TOKEN: {}}),
            json!({meta_keys::PROGRESS_TOKEN: null}),
            json!({meta_keys::LOG_LEVEL: "warning"}),
            json!({meta_keys::LOG_LEVEL: "loud"}),
            json!({"vendor/thing": [1, 2]}),
            json!({meta_keys::PROTOCOL_VERSION: 2026}),
            json!({meta_keys::PROTOCOL_VERSION: "2025-11-25"}),
            json!({meta_keys::CLIENT_CAPABILITIES: []}),
            json!({meta_keys::CLIENT_CAPABILITIES: null}),
            json!({meta_keys::CLIENT_CAPABILITIES: {"sampling": []}}),
            json!({meta_keys::CLIENT_CAPABILITIES: {"sampling": {"tools": {}}}}),
            json!({meta_keys::CLIENT_CAPABILITIES: {"roots": null}}),
            json!({meta_keys::CLIENT_CAPABILITIES: {"future": 1}}),
            json!({meta_keys::CLIENT_CAPABILITIES: {"future": {"x": 1}, "extensions": {"e": {}}}}),
        ];
        for extra in &metas {
            let meta = envelope(extra);
            for params in [
                json!({"_meta": meta, "name": "t", "arguments": {"b": 1, "a": [true]}}),
                json!({"_meta": meta, "inputResponses": {"k": {"action": "accept"}}, "requestState": "v2.x"}),
                json!({"_meta": meta}),
                json!({"name": "t"}),
            ] {
                bodies.push(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string());
            }
        }
        let meta = envelope(&json!({})).to_string();
        bodies.extend([
            format!(r#"{{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{{"_meta":{meta}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1.5,"method":"x","params":{{"_meta":{meta}}},"extra":1}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":null,"method":"x","params":{{"_meta":{meta}}}}}"#),
            format!(r#"{{"jsonrpc":"1.0","id":1,"method":"x","params":{{"_meta":{meta}}}}}"#),
            format!(r#"{{"jsonrpc":"2\u002e0","id":1,"method":"x","params":{{"_meta":{meta}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"x","params":{{"_meta":{meta}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":5,"params":{{"_meta":{meta}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":[{meta}]}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","method":"y","params":{{"_meta":{meta}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"_meta":{meta},"a":1,"a":2}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"_meta":{meta},"_meta":{meta}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"_meta":1,"_meta":{meta}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"\u005fmeta":{meta},"n\u0061me":"t"}}}}"#),
            concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"#,
                r#""io.modelcontextprotocol/protocolVersion":"2025-11-25","#,
                r#""io.modelcontextprotocol/clientCapabilities":{"roots":{},"roots":{"listChanged":true},"x":{},"x":{}},"#,
                r#""io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
            )
            .to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#.to_owned(),
            "[1]".to_owned(),
            "{".to_owned(),
        ]);
        let mut fast_reads = 0;
        for body in &bodies {
            let fast = read_modern(body.as_bytes());
            if let Some((request, meta)) = fast {
                fast_reads += 1;
                assert_eq!(Some((request, (*meta).clone())), general(body.as_bytes()), "{body}");
            }
        }
        // The common shapes take the fast path; the test above is not vacuous.
        assert!(fast_reads >= 30, "only {fast_reads} bodies took the fast path");
        let common =
            format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"_meta":{meta},"name":"t"}}}}"#);
        assert!(read_modern(common.as_bytes()).is_some());
    }

    /// A client's envelope is read once: later requests with the same `_meta` text share
    /// it. Different texts are read apart, and the cache stays bounded.
    #[test]
    fn an_envelope_is_read_once_per_text_and_the_cache_stays_bounded() {
        let body = |meta: &Value| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{meta},"name":"t"}}}}"#)
        };
        let meta = envelope(&json!({}));
        let (_, first) = read_modern(body(&meta).as_bytes()).unwrap();
        let (_, again) = read_modern(body(&meta).as_bytes()).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let other = envelope(&json!({meta_keys::LOG_LEVEL: "info"}));
        let (_, different) = read_modern(body(&other).as_bytes()).unwrap();
        assert_eq!(different.log_level, Some(crate::protocol::LoggingLevel::Info));
        assert_eq!(first.log_level, None);
        for n in 0..3 * ENVELOPES_KEPT {
            let meta = envelope(&json!({"vendor/n": n}));
            assert!(read_modern(body(&meta).as_bytes()).is_some());
            assert!(ENVELOPES.with_borrow(Vec::len) <= ENVELOPES_KEPT);
        }
        // An envelope too long to keep is still read, every time.
        let long = envelope(&json!({"vendor/pad": "x".repeat(LONGEST_KEPT)}));
        let (_, read) = read_modern(body(&long).as_bytes()).unwrap();
        let (_, reread) = read_modern(body(&long).as_bytes()).unwrap();
        assert!(!Arc::ptr_eq(&read, &reread));
        assert_eq!(read, reread);
    }
}
