//! The MCP request headers of Streamable HTTP (SEP-2243): `MCP-Protocol-Version`,
//! `Mcp-Method` and `Mcp-Name` must be present and agree with the body. The `Mcp-Param-*`
//! headers of a tool's mirrored parameters are checked by dispatch (see `param_headers`),
//! once it knows the caller may reach the tool: a hidden tool's rules must not show here.
//!
//! Order of checks, chosen so each error names the first real problem (spec digest
//! §1.3): none repeated, presence, then support of the header's version, then equality
//! with the body.
//!
//! A repeated MCP header is refused, not read by its first value: a proxy in front may
//! route or authorize on the last value, or on the values joined, and so act on a
//! request other than the one the server checked.

use axum::http::header::{AsHeaderName, HeaderName};
use axum::http::HeaderMap;
use serde_json::Value;

use crate::base::error::shown;
use crate::base::error::Error;
use crate::base::header_values::decode_value;
use crate::intake::envelope::{check_version, Request, RequestMeta};
use crate::intake::param_headers::refuse_repeated;
use crate::protocol::Method;

// Names, not strings: a lookup by string parses and checks the name every time.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const METHOD: HeaderName = HeaderName::from_static("mcp-method");
const NAME: HeaderName = HeaderName::from_static("mcp-name");

/// A header's value with optional whitespace trimmed (RFC 9110); `None` when absent.
/// A value that is not visible ASCII is treated as present but unreadable.
pub(crate) fn header(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    headers.get(name).map(|v| v.to_str().map_or("\u{fffd}", str::trim))
}

/// Validates the MCP headers of a modern request against its parsed envelope.
pub(crate) fn check(headers: &HeaderMap, request: &Request, meta: &RequestMeta) -> Result<(), Error> {
    refuse_repeated(headers, PROTOCOL_VERSION, "MCP-Protocol-Version")?;
    refuse_repeated(headers, METHOD, "Mcp-Method")?;
    refuse_repeated(headers, NAME, "Mcp-Name")?;
    // Each error says what to send: a client written by hand learns the header's value
    // from the error, not from the spec.
    let version = header(headers, PROTOCOL_VERSION).ok_or_else(|| {
        Error::header_mismatch(format!(
            "missing MCP-Protocol-Version header: send `MCP-Protocol-Version: {}` (the version in _meta)",
            shown(&meta.protocol_version)
        ))
    })?;
    let method = header(headers, METHOD).ok_or_else(|| {
        Error::header_mismatch(format!("missing Mcp-Method header: send `Mcp-Method: {}`", shown(&request.method)))
    })?;
    // Before Mcp-Name: which name the method needs depends on the method.
    if method != request.method {
        return Err(Error::header_mismatch(format!(
            "Mcp-Method header {:?} does not match method {:?}: send `Mcp-Method: {}`",
            shown(method),
            shown(&request.method),
            shown(&request.method)
        )));
    }
    let name_source = request.known.and_then(Method::name_field);
    let name = match name_source {
        Some(field) => Some(header(headers, NAME).ok_or_else(|| {
            Error::header_mismatch(format!(
                "missing Mcp-Name header: {} needs `Mcp-Name: {}` (its params.{field}; base64 as \
                 `=?base64?…?=` when it is not plain header text)",
                request.method,
                shown(param(request, field).unwrap_or("…")),
            ))
        })?),
        None => None,
    };
    check_version(version)?;
    if version != meta.protocol_version {
        return Err(Error::header_mismatch(format!(
            "MCP-Protocol-Version header {:?} does not match _meta protocolVersion {:?}: send the same in both",
            shown(version),
            shown(&meta.protocol_version)
        )));
    }
    if let (Some(field), Some(name)) = (name_source, name) {
        let name = decode_value(name)?;
        let body = param(request, field);
        if body != Some(name.as_str()) {
            return Err(Error::header_mismatch(format!(
                "Mcp-Name header {:?} does not match params.{field}: send `Mcp-Name: {}`",
                shown(&name),
                shown(body.unwrap_or("…")),
            )));
        }
    }
    Ok(())
}

/// The string param `field` of `request`.
fn param<'r>(request: &'r Request, field: &str) -> Option<&'r str> {
    request.params.as_ref().and_then(|p| p.get(field)).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_base64_sentinel_only() {
        assert_eq!(decode_value("=?base64?aGVsbG8=?=").unwrap(), "hello");
        assert_eq!(decode_value("plain").unwrap(), "plain");
        assert_eq!(decode_value("=?base64?aGVsbG8=").unwrap(), "=?base64?aGVsbG8=");
        assert!(decode_value("=?base64?aGVsbG8?=").is_err());
        assert!(decode_value("=?base64?!!!!?=").is_err());
    }
}
