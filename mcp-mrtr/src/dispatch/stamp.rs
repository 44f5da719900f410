//! Stamping a prepared body: the per-request members (`resultType`, the caching hints,
//! `serverInfo` in `_meta`) written after the shared bytes, with no parse of them.

use std::fmt::Write as _;

use crate::protocol::{meta_keys, Implementation, ResultJson};
use crate::server::CacheHints;

/// `body` (one JSON object with no `_meta` of its own, as every prepared body is) with the
/// stamps of a complete result appended.
pub(super) fn prepared(body: &str, hints: Option<CacheHints>, info: &Implementation) -> ResultJson {
    let open = body.strip_suffix('}').unwrap_or(body);
    let mut out = String::with_capacity(body.len() + 200);
    out.push_str(open);
    if open.trim_end() != "{" {
        out.push(',');
    }
    out.push_str(r#""resultType":"complete""#);
    if let Some(hints) = hints {
        // Writing to a String cannot fail.
        let _ = write!(out, r#","ttlMs":{},"cacheScope":"{}""#, hints.ttl_ms, hints.scope.as_str());
    }
    let _ = write!(out, r#","_meta":{{"{}":"#, meta_keys::SERVER_INFO);
    out.push_str(&serde_json::to_string(info).unwrap_or_else(|_| "{}".into()));
    out.push_str("}}");
    ResultJson::from_text(out)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::server::CacheScope;

    fn parse(json: &ResultJson) -> Value {
        serde_json::from_str(json.as_str()).expect("a stamped body is JSON")
    }

    #[test]
    fn stamps_follow_the_prepared_members() {
        let info = Implementation::new("s", "1");
        let hints = CacheHints { ttl_ms: 5, scope: CacheScope::Private };
        let stamped = parse(&prepared(r#"{"tools":[{"name":"a"}]}"#, Some(hints), &info));
        assert_eq!(
            stamped,
            json!({"tools": [{"name": "a"}], "resultType": "complete", "ttlMs": 5, "cacheScope": "private",
                   "_meta": {meta_keys::SERVER_INFO: {"name": "s", "version": "1"}}})
        );
        let empty = parse(&prepared("{}", None, &info));
        assert_eq!(empty["resultType"], "complete");
        assert!(empty.get("ttlMs").is_none());
    }
}
