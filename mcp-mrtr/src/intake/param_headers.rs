//! Tool parameters mirrored into HTTP headers (SEP-2243): a property of a tool's input
//! schema annotated `"x-mcp-header": "Region"` travels in the body *and* as the header
//! `Mcp-Param-Region`, so proxies can route on it without reading the body.
//!
//! [`declared`](crate::base::header_values::declared) reads the annotations once, when a
//! tool is registered, and rejects the ones the spec forbids; [`check`] compares each
//! declared header of a `tools/call` with its argument.

use axum::http::header::AsHeaderName;
use axum::http::HeaderMap;
use serde_json::Value;

use crate::base::error::Error;
use crate::base::header_values::{decode_value, header_text, ParamHeader};

/// Checks every mirrored parameter of a call: a value in the body needs its header, a
/// header needs its value, and the two must agree (integers numerically); a header sent
/// twice is refused, as the MCP headers are. Any problem is `-32020` with HTTP 400.
pub(crate) fn check(declared: &[ParamHeader], headers: &HeaderMap, arguments: Option<&Value>) -> Result<(), Error> {
    for param in declared {
        let body = arguments.and_then(|args| param.path.iter().try_fold(args, |v, key| v.get(key)));
        let body = body.filter(|v| !v.is_null());
        let name = &param.header;
        refuse_repeated(headers, name.as_str(), name)?;
        let header = headers.get(name.as_str());
        let at = param.path.join(".");
        // Errors say what to send: the argument's value as the header carries it.
        let send = |body: &Value| format!("send `{name}: {}`", crate::base::error::shown(&header_text(body)));
        match (body, header) {
            (None, None) => {}
            (Some(body), None) => {
                return Err(Error::header_mismatch(format!("missing {name} header for arguments.{at}: {}", send(body))))
            }
            (None, Some(_)) => {
                return Err(Error::header_mismatch(format!(
                    "{name} header without arguments.{at}: leave the header out, or pass the argument"
                )))
            }
            (Some(body), Some(header)) => {
                let text = header.to_str().map_err(|_| {
                    Error::header_mismatch(format!(
                        "{name} header has characters headers cannot carry (raw UTF-8): {}",
                        send(body)
                    ))
                })?;
                let decoded = decode_value(text)?;
                if !agrees(body, &decoded) {
                    return Err(Error::header_mismatch(format!(
                        "{name} header does not match arguments.{at}: {}",
                        send(body)
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Whether a decoded header value states the body's value.
fn agrees(body: &Value, header: &str) -> bool {
    match body {
        Value::String(text) => text == header,
        Value::Bool(flag) => header == if *flag { "true" } else { "false" },
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(n), _) => header.parse::<i64>() == Ok(n),
            (None, Some(n)) => header.parse::<u64>() == Ok(n),
            (None, None) => false,
        },
        _ => false,
    }
}

/// Fails with `-32020`, naming the header as `shown`, when `name` is sent more than once.
pub(crate) fn refuse_repeated(headers: &HeaderMap, name: impl AsHeaderName, shown: &str) -> Result<(), Error> {
    if headers.get_all(name).iter().nth(1).is_some() {
        return Err(Error::header_mismatch(format!("{shown} header sent more than once: send it once")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use serde_json::json;

    use super::*;
    use crate::base::header_values::declared;
    use crate::protocol::JsonObject;

    fn schema(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            other => panic!("not a schema object: {other}"),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn reads_annotations_through_nested_properties() {
        let found = declared(&schema(json!({ "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "limit": { "type": ["integer", "null"], "x-mcp-header": "Limit" },
            "opts": { "type": "object", "properties": { "dry": { "type": "boolean", "x-mcp-header": "Dry" } } },
            "plain": { "type": "string" },
        }})))
        .unwrap();
        let names: Vec<&str> = found.iter().map(|p| p.header.as_str()).collect();
        // In the order the schema declares them.
        assert_eq!(names, ["Mcp-Param-Region", "Mcp-Param-Limit", "Mcp-Param-Dry"]);
        assert_eq!(found[2].path, ["opts", "dry"]);
    }

    #[test]
    fn rejects_what_the_spec_forbids() {
        for bad in [
            json!({ "properties": { "a": { "type": "number", "x-mcp-header": "A" } } }),
            json!({ "properties": { "a": { "type": "object", "x-mcp-header": "A" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "Has Space" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": 7 } } }),
            json!({ "properties": {
                "a": { "type": "string", "x-mcp-header": "Same" },
                "b": { "type": "string", "x-mcp-header": "same" },
            } }),
        ] {
            assert!(declared(&schema(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_and_body_must_agree() {
        let found = declared(&schema(json!({ "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "count": { "type": "integer", "x-mcp-header": "Count" },
        }})))
        .unwrap();
        let args = json!({ "region": "Hello", "count": 42 });
        let ok = |pairs: &[(&'static str, &str)]| check(&found, &headers(pairs), Some(&args)).is_ok();
        assert!(ok(&[("mcp-param-region", "Hello"), ("mcp-param-count", "42")]));
        assert!(ok(&[("mcp-param-region", "=?base64?SGVsbG8=?="), ("mcp-param-count", "042")]));
        assert!(!ok(&[("mcp-param-region", "=?base64?SGVsbG8?="), ("mcp-param-count", "42")]));
        assert!(!ok(&[("mcp-param-region", "hello"), ("mcp-param-count", "42")]));
        assert!(!ok(&[("mcp-param-count", "42")]));
        assert!(!ok(&[("mcp-param-region", "Hello"), ("mcp-param-count", "41")]));
        // No value in the body, no header expected; a header without a value is refused.
        let empty = json!({});
        assert!(check(&found, &headers(&[]), Some(&empty)).is_ok());
        assert!(check(&found, &headers(&[("mcp-param-count", "1")]), Some(&empty)).is_err());
        let error = check(&found, &headers(&[]), Some(&args)).unwrap_err();
        assert_eq!((error.code(), error.http_status()), (crate::base::error::ErrorCode::HEADER_MISMATCH, 400));
    }

    /// Found with the fuzz target `headers` (mcp-mrtr/fuzz/regressions/headers): for an
    /// argument that reads as the base64 sentinel, the error said to send it as it is, and
    /// that header was then decoded and refused. What an error says to send is accepted.
    #[test]
    fn the_header_an_error_says_to_send_is_accepted() {
        let found = declared(&schema(json!({ "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
        }})))
        .unwrap();
        for value in ["=?base64?aGk=?=", "plain", " padded", "caf\u{e9}"] {
            let args = json!({ "region": value });
            let advice = check(&found, &headers(&[]), Some(&args)).unwrap_err().message().to_owned();
            let sent = advice.split("send `Mcp-Param-Region: ").nth(1).and_then(|s| s.strip_suffix('`')).unwrap();
            let told = headers(&[("mcp-param-region", sent)]);
            assert!(check(&found, &told, Some(&args)).is_ok(), "{value:?}: {advice}");
        }
    }

    #[test]
    fn a_repeated_header_is_refused_even_when_its_first_value_agrees() {
        let region = json!({ "properties": { "region": { "type": "string", "x-mcp-header": "Region" } } });
        let found = declared(&schema(region)).unwrap();
        let mut twice = headers(&[("mcp-param-region", "eu")]);
        twice.append("mcp-param-region", HeaderValue::from_static("us"));
        let error = check(&found, &twice, Some(&json!({ "region": "eu" }))).unwrap_err();
        assert_eq!(error.code(), crate::base::error::ErrorCode::HEADER_MISMATCH);
        assert!(error.message().contains("Mcp-Param-Region header sent more than once"), "{}", error.message());
    }
}
