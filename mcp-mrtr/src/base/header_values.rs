//! What a value looks like in an MCP header (SEP-2243), for the server that checks one and
//! the client that sends one: the tool parameters a schema mirrors into `Mcp-Param-*`
//! headers ([`declared`]), a value as a header carries it ([`header_text`]: plain text, or
//! base64 in the `=?base64?…?=` sentinel where it cannot travel as it is), and that
//! sentinel read back ([`decode_value`]).

use base64::Engine as _;
use serde_json::Value;

use crate::base::error::Error;
use crate::protocol::JsonObject;

/// The schema keyword that names a parameter's header.
const KEYWORD: &str = "x-mcp-header";

/// One parameter mirrored into a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    /// Property names from the arguments object down to the parameter.
    pub(crate) path: Vec<String>,
    /// `Mcp-Param-{name}`, as declared.
    pub(crate) header: String,
}

/// The mirrored parameters of an input schema, or why the annotations are invalid: a
/// name that is empty or not an RFC 9110 token, a name used twice (ignoring case), or an
/// annotation on a property that is not a string, integer or boolean.
pub(crate) fn declared(schema: &JsonObject) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), &mut found)?;
    for (i, a) in found.iter().enumerate() {
        if found[..i].iter().any(|b: &ParamHeader| b.header.eq_ignore_ascii_case(&a.header)) {
            return Err(format!("two parameters are mirrored into the header {}", a.header));
        }
    }
    Ok(found)
}

fn walk(schema: &JsonObject, path: &mut Vec<String>, found: &mut Vec<ParamHeader>) -> Result<(), String> {
    let Some(Value::Object(properties)) = schema.get("properties") else { return Ok(()) };
    for (name, property) in properties {
        let Value::Object(property) = property else { continue };
        path.push(name.clone());
        if let Some(header) = property.get(KEYWORD) {
            let at = path.join(".");
            let header = header.as_str().filter(|h| is_token(h)).ok_or_else(|| {
                format!("{KEYWORD} of {at} must be a non-empty header name token (letters, digits, !#$%&'*+-.^_`|~)")
            })?;
            if !is_primitive(property) {
                return Err(format!("{KEYWORD} of {at} is only allowed on string, integer and boolean parameters"));
            }
            found.push(ParamHeader { path: path.clone(), header: format!("Mcp-Param-{header}") });
        }
        walk(property, path, found)?;
        path.pop();
    }
    Ok(())
}

/// An RFC 9110 `token`.
fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `type` is string, integer or boolean (alone, or with `null` for optional ones).
fn is_primitive(property: &JsonObject) -> bool {
    let primitive = |t: &Value| matches!(t.as_str(), Some("string" | "integer" | "boolean"));
    match property.get("type") {
        Some(Value::Array(types)) => {
            let mut non_null = types.iter().filter(|t| t.as_str() != Some("null"));
            non_null.next().is_some_and(primitive) && non_null.next().is_none()
        }
        Some(single) => primitive(single),
        None => false,
    }
}

/// How a header states `body`: the text itself, `true`/`false`, the number; base64 in the
/// `=?base64?…?=` form where the text is not plain header text.
pub(crate) fn header_text(body: &Value) -> String {
    match body {
        // A text that reads as the sentinel is encoded too, or it would be decoded.
        Value::String(text)
            if text.bytes().all(|b| (0x20..0x7f).contains(&b)) && text.trim() == text && sentinel(text).is_none() =>
        {
            text.clone()
        }
        Value::String(text) => format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(text)),
        other => other.to_string(),
    }
}

/// The base64 inside a value written as the `=?base64?…?=` sentinel.
fn sentinel(value: &str) -> Option<&str> {
    value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?="))
}

/// Decodes the `=?base64?…?=` sentinel clients use for values that are not safe header
/// text; anything else is the literal value.
pub(crate) fn decode_value(value: &str) -> Result<String, Error> {
    let Some(encoded) = sentinel(value) else {
        return Ok(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| Error::header_mismatch(format!("invalid base64 in header value: {e}")))?;
    String::from_utf8(bytes).map_err(|_| Error::header_mismatch("base64 header value is not UTF-8"))
}
