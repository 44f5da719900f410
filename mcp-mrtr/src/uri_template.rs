//! Matching URIs against the simple (level 1) RFC 6570 templates resource templates use:
//! literal text and `{name}` variables, each variable matching one or more characters
//! other than `/`.

use std::fmt;

use serde_json::Value;

use crate::protocol::JsonObject;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
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
            let name = &rest[open + 1..close];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(TemplateError("variables must be non-empty names of [A-Za-z0-9_]"));
            }
            if matches!(parts.last(), Some(Part::Var(_))) {
                return Err(TemplateError("two variables must be separated by literal text"));
            }
            if parts.iter().any(|p| matches!(p, Part::Var(v) if v == name)) {
                return Err(TemplateError("a variable appears twice"));
            }
            parts.push(Part::Var(name.to_owned()));
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
                Part::Var(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    vars.insert(name.clone(), Value::String(value.to_owned()));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
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
    fn rejects_malformed_templates() {
        for bad in ["a{", "a{}", "{a}{b}", "{a}/{a}", "a}", "{a-b}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
