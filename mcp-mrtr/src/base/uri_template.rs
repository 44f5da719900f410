//! Matching URIs against the simple RFC 6570 templates resource templates use: literal
//! text, `{name}` variables (level 1: one or more characters other than `/`, decoded),
//! and `{+name}` (level 2, reserved expansion: one or more of any characters, `/`
//! included, kept as written).

use std::fmt;

use serde_json::Value;

use crate::protocol::JsonObject;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
    /// `{+name}`: may span `/`, and is not decoded.
    Reserved(String),
}

/// A parsed URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

/// Why a template could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TemplateError(&'static str);

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl UriTemplate {
    pub(crate) fn parse(template: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..].find('}').ok_or(TemplateError("unclosed `{`"))? + open;
            let (reserved, name) = match rest[open + 1..close].strip_prefix('+') {
                Some(name) => (true, name),
                None => (false, &rest[open + 1..close]),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(TemplateError("variables must be non-empty names of [A-Za-z0-9_]"));
            }
            if matches!(parts.last(), Some(Part::Var(_) | Part::Reserved(_))) {
                return Err(TemplateError("two variables must be separated by literal text"));
            }
            if parts.iter().any(|p| matches!(p, Part::Var(v) | Part::Reserved(v) if v == name)) {
                return Err(TemplateError("a variable appears twice"));
            }
            parts.push(if reserved { Part::Reserved(name.to_owned()) } else { Part::Var(name.to_owned()) });
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err(TemplateError("unmatched `}`"));
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self { parts })
    }

    /// The variables of `uri`, or `None` when it does not match.
    pub(crate) fn matches(&self, uri: &str) -> Option<JsonObject> {
        let mut vars = JsonObject::new();
        let mut rest = uri;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
                Part::Reserved(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    if end == 0 {
                        return None;
                    }
                    vars.insert(name.clone(), Value::String(rest[..end].to_owned()));
                    rest = &rest[end..];
                }
                Part::Var(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    // Level-1 expansion percent-encodes a variable, so decode it back: a
                    // handler gets `standup notes`, not `standup%20notes`.
                    vars.insert(name.clone(), Value::String(percent_decode(value)?));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8, so
/// such a URI matches no template.
fn percent_decode(value: &str) -> Option<String> {
    if !value.contains('%') {
        return Some(value.to_owned());
    }
    let mut bytes = Vec::with_capacity(value.len());
    let mut rest = value.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = tail.get(..2).and_then(|h| std::str::from_utf8(h).ok())?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_variables() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        let vars = t.matches("test://template/123/data").unwrap();
        assert_eq!(vars["id"], "123");
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template/1/datax").is_none());
        assert!(t.matches("test://other/1/data").is_none());
        let tail = UriTemplate::parse("file:///{name}").unwrap();
        assert_eq!(tail.matches("file:///a.txt").unwrap()["name"], "a.txt");
    }

    #[test]
    fn a_reserved_variable_spans_slashes_and_stays_as_written() {
        let t = UriTemplate::parse("skill://{+path}").unwrap();
        assert_eq!(t.matches("skill://acme/refunds/a%20b.md").unwrap()["path"], "acme/refunds/a%20b.md");
        assert!(t.matches("skill://").is_none());
        assert!(t.matches("other://x").is_none());
        assert!(UriTemplate::parse("x://{+a}{b}").is_err());
    }

    #[test]
    fn decodes_percent_encoded_variables() {
        let t = UriTemplate::parse("note://{title}").unwrap();
        assert_eq!(t.matches("note://standup%20notes").unwrap()["title"], "standup notes");
        assert_eq!(t.matches("note://caf%C3%A9%2Fbar").unwrap()["title"], "café/bar");
        assert_eq!(t.matches("note://100%25").unwrap()["title"], "100%");
        for bad in ["note://a%2", "note://a%zz", "note://%FF"] {
            assert!(t.matches(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn rejects_malformed_templates() {
        for bad in ["a{", "a{}", "{a}{b}", "{a}/{a}", "a}", "{a-b}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
