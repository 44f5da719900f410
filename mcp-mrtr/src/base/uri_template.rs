//! Matching URIs against the simple RFC 6570 templates resource templates use: literal
//! text, `{name}` variables (level 1: one or more characters other than `/`, decoded),
//! and `{+name}` (level 2, reserved expansion: one or more of any characters, `/`
//! included, kept as written).

use std::fmt;
use std::fmt::Write as _;

use serde_json::Value;

use crate::protocol::JsonObject;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
    /// `{+name}`: may span `/`, and is not decoded.
    Reserved(String),
}

/// A parsed URI template; the default one has no parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

/// Why a template could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TemplateError {
    Unclosed,
    Unopened,
    BadName,
    Adjacent,
    Repeated,
}

impl TemplateError {
    pub(crate) const fn message(self) -> &'static str {
        match self {
            Self::Unclosed => "a `{` is never closed",
            Self::Unopened => "a `}` closes no `{`",
            Self::BadName => "variables are non-empty names of letters, digits and `_`",
            Self::Adjacent => "two variables must be separated by literal text",
            Self::Repeated => "a variable appears twice",
        }
    }
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// One `{name}` or `{+name}` of a template, as byte offsets.
#[derive(Clone, Copy)]
struct Variable {
    open: usize,
    name: (usize, usize),
    reserved: bool,
    close: usize,
}

// The grammar is `const fn`s so that `#[resource]` checks a template at compile time
// with this same code (`__private::check_template`): the macro crate cannot depend on
// this one, but the code it emits can.

/// The first variable at or after `from`, checking the literal text before it.
const fn next_variable(t: &[u8], from: usize) -> Result<Option<Variable>, TemplateError> {
    let mut i = from;
    while i < t.len() {
        match t[i] {
            b'}' => return Err(TemplateError::Unopened),
            b'{' => {
                let reserved = i + 1 < t.len() && t[i + 1] == b'+';
                let start = if reserved { i + 2 } else { i + 1 };
                let mut end = start;
                while end < t.len() && t[end] != b'}' {
                    if !(t[end].is_ascii_alphanumeric() || t[end] == b'_') {
                        return Err(TemplateError::BadName);
                    }
                    end += 1;
                }
                if end >= t.len() {
                    return Err(TemplateError::Unclosed);
                }
                if end == start {
                    return Err(TemplateError::BadName);
                }
                return Ok(Some(Variable { open: i, name: (start, end), reserved, close: end }));
            }
            _ => i += 1,
        }
    }
    Ok(None)
}

const fn same_bytes(a: &[u8], (a_start, a_end): (usize, usize), b: &[u8], (b_start, b_end): (usize, usize)) -> bool {
    if a_end - a_start != b_end - b_start {
        return false;
    }
    let mut i = 0;
    while i < a_end - a_start {
        if a[a_start + i] != b[b_start + i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether the variables of `t` before offset `before` include `name` (a range of `n`).
const fn names_before(t: &[u8], before: usize, n: &[u8], name: (usize, usize)) -> bool {
    let mut from = 0;
    while let Ok(Some(variable)) = next_variable(t, from) {
        if variable.open >= before {
            return false;
        }
        if same_bytes(t, variable.name, n, name) {
            return true;
        }
        from = variable.close + 1;
    }
    false
}

/// Whether `template` is well formed.
pub(crate) const fn check(template: &str) -> Result<(), TemplateError> {
    let t = template.as_bytes();
    let mut from = 0;
    loop {
        let variable = match next_variable(t, from) {
            Ok(Some(variable)) => variable,
            Ok(None) => return Ok(()),
            Err(e) => return Err(e),
        };
        if from > 0 && variable.open == from {
            return Err(TemplateError::Adjacent);
        }
        if names_before(t, variable.open, t, variable.name) {
            return Err(TemplateError::Repeated);
        }
        from = variable.close + 1;
    }
}

/// Whether `name` is a variable of `template` (well formed or not, as far as it reads).
pub(crate) const fn has_variable(template: &str, name: &str) -> bool {
    let n = name.as_bytes();
    names_before(template.as_bytes(), usize::MAX, n, (0, n.len()))
}

impl UriTemplate {
    pub(crate) fn parse(template: &str) -> Result<Self, TemplateError> {
        check(template)?;
        let t = template.as_bytes();
        let text = |(start, end): (usize, usize)| template[start..end].to_owned();
        let mut parts = Vec::new();
        let mut from = 0;
        while let Ok(Some(variable)) = next_variable(t, from) {
            if variable.open > from {
                parts.push(Part::Literal(text((from, variable.open))));
            }
            let name = text(variable.name);
            parts.push(if variable.reserved { Part::Reserved(name) } else { Part::Var(name) });
            from = variable.close + 1;
        }
        if from < template.len() {
            parts.push(Part::Literal(text((from, template.len()))));
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

impl UriTemplate {
    /// The URI the template makes of `vars` (RFC 6570): a `{name}` percent-encoded but
    /// for unreserved characters, a `{+name}` as it is; `None` when a variable has no
    /// string value. What [`matches`](Self::matches) took apart, this puts back together
    /// (a mounted template's reads go to the upstream at the URI asked for).
    #[cfg_attr(not(feature = "client"), allow(dead_code, reason = "the mount is its one user"))]
    pub(crate) fn expand(&self, vars: &JsonObject) -> Option<String> {
        let mut uri = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(literal) => uri.push_str(literal),
                Part::Reserved(name) => uri.push_str(vars.get(name)?.as_str()?),
                Part::Var(name) => {
                    for byte in vars.get(name)?.as_str()?.bytes() {
                        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                            uri.push(char::from(byte));
                        } else {
                            let _ = write!(uri, "%{byte:02X}");
                        }
                    }
                }
            }
        }
        Some(uri)
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
    fn expanding_puts_back_what_matching_took_apart() {
        let t = UriTemplate::parse("note://{title}/{+rest}").unwrap();
        for uri in ["note://standup%20notes/a/b", "note://plain/x%20y", "note://caf%C3%A9/z"] {
            let vars = t.matches(uri).unwrap();
            assert_eq!(t.expand(&vars).as_deref(), Some(uri));
        }
        assert_eq!(t.expand(&JsonObject::new()), None);
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
        for bad in
            ["a{", "a{}", "{a}{b}", "{a}/{a}", "a}", "{a-b}", "x/{+}", "x/{+a}{b}", "x/{a}/{+a}", "x/}{a}", "x/{++a}"]
        {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(UriTemplate::parse("x/{a").unwrap_err(), TemplateError::Unclosed);
        assert_eq!(UriTemplate::parse("{a}{b}").unwrap_err(), TemplateError::Adjacent);
        assert_eq!(UriTemplate::parse("{a}/{+a}").unwrap_err(), TemplateError::Repeated);
    }

    #[test]
    fn finds_variables_by_name() {
        assert!(has_variable("test://t/{id}/data/{part}", "part"));
        assert!(has_variable("skill://{+path}", "path"));
        assert!(!has_variable("test://t/{id}", "i"));
        assert!(!has_variable("test://static", "id"));
    }
}
