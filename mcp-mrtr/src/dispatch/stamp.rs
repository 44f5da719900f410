//! Stamping a result body: the members every modern result carries (`resultType`, the
//! caching hints, `serverInfo` in `_meta`) written after the body's own, on its JSON
//! text. A body is serialized once, by whoever made it (a handler's result, or a
//! prepared list shared by many requests), and never turned back into a tree, unless it
//! has a `_meta` of its own for `serverInfo` to join.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{json, Value};

use crate::base::error::Error;
use crate::protocol::CacheHints;
use crate::protocol::{meta_keys, Implementation, JsonObject, ResultJson};
use crate::routes::catalog::PreparedBody;

/// A result body as JSON text (always one object), before stamping.
pub(super) enum Text {
    /// Serialized for this request.
    Written(String),
    /// Shared by every request that sees the same list.
    Prepared(PreparedBody),
}

impl Text {
    /// `result` serialized; an internal error if it is not a JSON object.
    pub(super) fn of<T: Serialize>(result: &T) -> Result<Self, Error> {
        // Most results fit, with their stamps and frame, without growing the buffer; and
        // under 1 KiB, the largest size glibc's per-thread cache serves.
        let mut text = Vec::with_capacity(1000);
        serde_json::to_writer(&mut text, result)
            .map_err(|e| Error::internal(format!("cannot serialize a result: {e}")))?;
        if text.first() != Some(&b'{') {
            return Err(Error::internal("a result must serialize to a JSON object"));
        }
        // serde_json writes UTF-8.
        Ok(Self::Written(String::from_utf8(text).map_err(|_| Error::internal("a result serialized to invalid UTF-8"))?))
    }

    pub(super) fn from_object(object: &JsonObject) -> Self {
        // A JSON object always serializes: its keys are strings.
        Self::Written(serde_json::to_string(object).expect("a JSON object serializes"))
    }

    fn as_str(&self) -> &str {
        match self {
            Self::Written(text) => text,
            Self::Prepared(text) => text,
        }
    }

    /// The body as legacy clients get it: no stamps.
    pub(super) fn unstamped(self) -> ResultJson {
        match self {
            Self::Written(text) => ResultJson::from_text(text),
            Self::Prepared(text) => ResultJson::from_text(text.to_string()),
        }
    }
}

/// What is stamped on one result.
pub(super) struct Stamps<'a> {
    pub(super) result_type: &'static str,
    /// Complete results of cacheable methods only.
    pub(super) hints: Option<CacheHints>,
    pub(super) info: &'a Implementation,
    /// `info` as JSON, written once per server.
    pub(super) info_json: &'a str,
}

/// Room for the stamps, and for the JSON-RPC frame the transport writes around a result.
const STAMPS_ROOM: usize = 256;

/// `body` with the stamps appended: spliced before its closing brace (in place, for a body
/// written for this request), or, when the body may carry a `_meta` of its own, merged
/// into its tree.
pub(super) fn stamp(body: Text, stamps: &Stamps<'_>) -> ResultJson {
    // A conservative test: `"_meta"` anywhere (a content item's, say) takes the slow path.
    // A prepared body is a list page or the discover result, which have no `_meta` of
    // their own (one inside is an entry's, such as an app tool's `_meta.ui`): it is only
    // ever appended to, never scanned nor parsed again on each request.
    let own_meta = match &body {
        Text::Written(text) => text.contains(r#""_meta""#),
        Text::Prepared(_) => false,
    };
    if own_meta {
        return merged(body.as_str(), stamps);
    }
    let mut out = match body {
        Text::Written(text) => text,
        Text::Prepared(text) => {
            let mut out = String::with_capacity(text.len() + STAMPS_ROOM);
            out.push_str(&text);
            out
        }
    };
    let open = out.trim_end().strip_suffix('}').map_or(out.len(), str::len);
    out.truncate(open);
    out.reserve(STAMPS_ROOM + stamps.info_json.len());
    if out.trim_end() != "{" {
        out.push(',');
    }
    // Pieces pushed, not formatted: this runs for every result (formatting was most of it).
    out.push_str(r#""resultType":""#);
    out.push_str(stamps.result_type);
    out.push('"');
    if let Some(hints) = stamps.hints {
        // Writing to a String cannot fail.
        let _ = write!(out, r#","ttlMs":{},"cacheScope":"{}""#, hints.ttl_ms, hints.scope.as_str());
    }
    out.push_str(r#","_meta":{""#);
    out.push_str(meta_keys::SERVER_INFO);
    out.push_str(r#"":"#);
    out.push_str(stamps.info_json);
    out.push_str("}}");
    ResultJson::from_text(out)
}

/// The stamps merged into the body's tree, its own `_meta` kept.
fn merged(text: &str, stamps: &Stamps<'_>) -> ResultJson {
    let mut body: JsonObject = serde_json::from_str(text).unwrap_or_default();
    body.insert("resultType".into(), json!(stamps.result_type));
    if let Some(hints) = stamps.hints {
        body.insert("ttlMs".into(), json!(hints.ttl_ms));
        body.insert("cacheScope".into(), json!(hints.scope.as_str()));
    }
    let meta = body.entry("_meta").or_insert_with(|| json!({}));
    if let Value::Object(meta) = meta {
        meta.insert(meta_keys::SERVER_INFO.into(), json!(stamps.info));
    }
    ResultJson::from_value(&Value::Object(body))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::protocol::CacheScope;

    fn stamped(body: &str, hints: Option<CacheHints>) -> Value {
        let info = Implementation::new("s", "1");
        let info_json = serde_json::to_string(&info).unwrap();
        let stamps = Stamps { result_type: "complete", hints, info: &info, info_json: &info_json };
        serde_json::from_str(stamp(Text::Written(body.into()), &stamps).as_str()).expect("a stamped body is JSON")
    }

    #[test]
    fn a_prepared_list_with_an_entry_s_meta_is_appended_to_and_the_entry_keeps_it() {
        let info = Implementation::new("s", "1");
        let info_json = serde_json::to_string(&info).unwrap();
        let stamps = Stamps { result_type: "complete", hints: None, info: &info, info_json: &info_json };
        let page = r#"{"tools":[{"name":"a","_meta":{"ui":{"resourceUri":"ui://a"}}}]}"#;
        let stamped = stamp(Text::Prepared(page.into()), &stamps);
        // Appended: the page's text is untouched up to its closing brace.
        assert!(stamped.as_str().starts_with(&page[..page.len() - 1]), "{}", stamped.as_str());
        let stamped: Value = serde_json::from_str(stamped.as_str()).unwrap();
        assert_eq!(stamped["tools"][0]["_meta"], json!({ "ui": { "resourceUri": "ui://a" } }));
        assert_eq!(stamped["_meta"][meta_keys::SERVER_INFO]["name"], "s");
        assert_eq!(stamped["resultType"], "complete");
    }

    #[test]
    fn stamps_follow_the_body_members() {
        let hints = CacheHints { ttl_ms: 5, scope: CacheScope::Private };
        assert_eq!(
            stamped(r#"{"tools":[{"name":"a"}]}"#, Some(hints)),
            json!({"tools": [{"name": "a"}], "resultType": "complete", "ttlMs": 5, "cacheScope": "private",
                   "_meta": {meta_keys::SERVER_INFO: {"name": "s", "version": "1"}}})
        );
        let empty = stamped("{}", None);
        assert_eq!(empty["resultType"], "complete");
        assert!(empty.get("ttlMs").is_none());
    }

    #[test]
    fn a_body_with_its_own_meta_keeps_it() {
        let body = stamped(r#"{"content":[{"type":"text","text":"x","_meta":{"k":1}}],"_meta":{"mine":true}}"#, None);
        assert_eq!(body["_meta"]["mine"], true);
        assert_eq!(body["_meta"][meta_keys::SERVER_INFO]["name"], "s");
        assert_eq!(body["content"][0]["_meta"]["k"], 1);
        assert_eq!(body.as_object().unwrap().keys().filter(|k| *k == "_meta").count(), 1);
    }
}
