//! W3C trace context in a request's `_meta` (SEP-414): `traceparent`, `tracestate` and
//! `baggage`, the only unprefixed keys. They are read as strings and kept only when they
//! follow the W3C formats, within size caps; anything else is as if absent, never an
//! error (a client's tracing must not break its calls). They are client data: the
//! runtime records the trace id on its spans and never decides anything on them.

use std::fmt;

/// The longest `traceparent` and `tracestate` read, and W3C Baggage's limits.
const MAX_TRACEPARENT: usize = 512;
const MAX_TRACESTATE: usize = 512;
const MAX_TRACESTATE_MEMBERS: usize = 32;
const MAX_BAGGAGE: usize = 8192;
const MAX_BAGGAGE_MEMBERS: usize = 64;

/// The trace context a request carried in `_meta`, valid parts only
/// ([`RequestMeta::trace`](crate::context::RequestMeta::trace), [`Ctx::meta`](crate::Ctx::meta)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: Option<TraceParent>,
    tracestate: Option<String>,
    baggage: Option<String>,
}

/// A valid W3C `traceparent`: `{version}-{trace-id}-{parent-id}-{flags}`.
#[derive(Clone, PartialEq, Eq)]
pub struct TraceParent(String);

impl TraceContext {
    /// The context of `traceparent`, `tracestate` and `baggage` as sent (each a string,
    /// or absent): a `tracestate` counts only beside a valid `traceparent`; `baggage`
    /// stands on its own.
    pub(crate) fn read(traceparent: Option<&str>, tracestate: Option<&str>, baggage: Option<&str>) -> Self {
        let traceparent = traceparent.and_then(TraceParent::parse);
        let tracestate =
            tracestate.filter(|_| traceparent.is_some()).filter(|s| valid_tracestate(s)).map(str::to_owned);
        let baggage = baggage.filter(|b| valid_baggage(b)).map(str::to_owned);
        Self { traceparent, tracestate, baggage }
    }

    /// Whether the request carried anything valid.
    pub fn is_empty(&self) -> bool {
        self.traceparent.is_none() && self.baggage.is_none()
    }

    /// The caller's span, when `_meta.traceparent` was valid.
    pub fn traceparent(&self) -> Option<&TraceParent> {
        self.traceparent.as_ref()
    }

    /// `_meta.tracestate`, vendor data for the trace, when it and the `traceparent` were valid.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// `_meta.baggage` as sent, when valid. Client data: never authorize on it.
    pub fn baggage(&self) -> Option<&str> {
        self.baggage.as_deref()
    }

    /// The value of the baggage member `key`, percent-decoded.
    pub fn baggage_value(&self, key: &str) -> Option<String> {
        self.baggage.as_deref()?.split(',').find_map(|member| {
            let (name, rest) = member.split_once('=')?;
            let value = rest.split(';').next().unwrap_or_default().trim();
            (name.trim() == key).then(|| percent_decode(value))
        })
    }
}

impl TraceParent {
    /// The `traceparent` `text`, if valid (its first four fields).
    ///
    /// Every check reads bytes, never a `str` slice: the text is client data, and a
    /// multi-byte character where a field boundary should be must be a mismatch, not a
    /// slice inside a character (audit C1). Only a text found valid, whose first 55 bytes
    /// are then ASCII, is sliced.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        if bytes.len() > MAX_TRACEPARENT || bytes.len() < 55 {
            return None;
        }
        let lower_hex =
            |range: std::ops::Range<usize>| bytes[range].iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let dashes = bytes[2] == b'-' && bytes[35] == b'-' && bytes[52] == b'-';
        let fields = lower_hex(0..2) && lower_hex(3..35) && lower_hex(36..52) && lower_hex(53..55);
        let version = &bytes[..2];
        // Version 00 is exactly 55 characters; a later version may add `-…` fields.
        let length_ok = if version == b"00" { bytes.len() == 55 } else { bytes.len() == 55 || bytes[55] == b'-' };
        let zero = |range: std::ops::Range<usize>| bytes[range].iter().all(|b| *b == b'0');
        let valid = dashes && fields && length_ok && version != b"ff" && !zero(3..35) && !zero(36..52);
        let first_fields = std::str::from_utf8(&bytes[..55]).ok().filter(|_| valid)?;
        Some(Self(first_fields.to_owned()))
    }

    /// The trace's id: 32 lowercase hex digits.
    pub fn trace_id(&self) -> &str {
        &self.0[3..35]
    }

    /// The caller's span id: 16 lowercase hex digits.
    pub fn parent_id(&self) -> &str {
        &self.0[36..52]
    }

    /// The trace flags.
    pub fn flags(&self) -> u8 {
        u8::from_str_radix(&self.0[53..55], 16).unwrap_or(0)
    }

    /// Whether the caller sampled the trace (flag `01`).
    pub fn sampled(&self) -> bool {
        self.flags() & 1 == 1
    }

    /// The `traceparent` as sent (its first four fields).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Up to 32 `key=value` members: keys of `a-z 0-9 _ - * / @`, values printable ASCII
/// without `,` or `=`.
fn valid_tracestate(text: &str) -> bool {
    let members: Vec<&str> = text.split(',').map(trim_ows).filter(|m| !m.is_empty()).collect();
    text.len() <= MAX_TRACESTATE
        && members.len() <= MAX_TRACESTATE_MEMBERS
        && members.iter().all(|member| {
            member.split_once('=').is_some_and(|(key, value)| {
                !key.is_empty()
                    && key.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/' | b'@'))
                    && !value.is_empty()
                    && value.bytes().all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
            })
        })
}

/// Up to 64 members of `key=value(;property)*`, keys HTTP tokens, values without
/// whitespace, commas or semicolons (percent-encoded when needed).
fn valid_baggage(text: &str) -> bool {
    let members: Vec<&str> = text.split(',').map(trim_ows).collect();
    let token =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    let octets = |s: &str| s.bytes().all(|b| (0x21..=0x7e).contains(&b) && !b",;\\\"".contains(&b));
    // `key=value`, then properties: `key` or `key=value`, each checked like the member.
    let pair = |s: &str| s.split_once('=').is_some_and(|(key, value)| token(trim_ows(key)) && octets(trim_ows(value)));
    text.len() <= MAX_BAGGAGE
        && members.len() <= MAX_BAGGAGE_MEMBERS
        && members.iter().all(|member| {
            let mut parts = member.split(';');
            pair(parts.next().unwrap_or_default()) && parts.all(|p| pair(p) || token(trim_ows(p)))
        })
}

/// W3C's optional whitespace: spaces and tabs, never newlines or other Unicode spaces, so
/// what is kept is always header text.
fn trim_ows(text: &str) -> &str {
    text.trim_matches([' ', '\t'])
}

fn percent_decode(value: &str) -> String {
    let mut bytes = Vec::with_capacity(value.len());
    let mut rest = value.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        let hex = tail.get(..2).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        if let (b'%', Some(decoded)) = (byte, hex) {
            bytes.push(decoded);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_read_field_by_field() {
        let trace = TraceContext::read(
            Some(VALID),
            Some("vendor1=value1,vendor2=value2"),
            Some("userId=alice%20b,region=us-east-1;p=1"),
        );
        let parent = trace.traceparent().unwrap();
        assert_eq!(parent.trace_id(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(parent.parent_id(), "00f067aa0ba902b7");
        assert!(parent.sampled());
        assert_eq!(trace.tracestate(), Some("vendor1=value1,vendor2=value2"));
        assert_eq!(trace.baggage_value("userId").as_deref(), Some("alice b"));
        assert_eq!(trace.baggage_value("region").as_deref(), Some("us-east-1"));
        let later = TraceContext::read(Some(&format!("01{}-extra", &VALID[2..])), None, None);
        assert_eq!(later.traceparent().unwrap().as_str(), format!("01{}", &VALID[2..]));
    }

    #[test]
    fn malformed_values_are_ignored_never_errors() {
        // A multi-byte character across a field boundary (audit C1: the first two panicked).
        let multibyte = [
            format!("\u{20ac}{}", "0".repeat(53)),
            format!("0\u{20ac}{}", "0".repeat(52)),
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-0\u{e9}".to_owned(),
            "01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01\u{e9}".to_owned(),
        ];
        for bad in [
            "garbage",
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-extra",
            "01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01x",
        ]
        .into_iter()
        .chain(multibyte.iter().map(String::as_str))
        {
            let trace = TraceContext::read(Some(bad), Some("a=b"), None);
            assert!(trace.traceparent().is_none(), "{bad}");
            assert!(trace.tracestate().is_none(), "tracestate needs a valid traceparent: {bad}");
        }
        assert!(TraceContext::read(Some(VALID), Some("Bad Key=1"), None).tracestate().is_none());
        // Found by the fuzzer (mcp-mrtr/fuzz/regressions/trace_context): properties went
        // unchecked, and trimming took newlines and Unicode spaces, so text that is no
        // header value was kept and handed to the tracer.
        for bad in ["k=v;\r\nX-Injected: 1", "\nk=v", "k1=v1;prop\u{ff}k,k2=%41", "k=v;a b"] {
            assert!(TraceContext::read(None, None, Some(bad)).baggage().is_none(), "{bad:?}");
        }
        assert!(TraceContext::read(Some(VALID), Some("\u{3000}a=b"), None).tracestate().is_none());
        assert_eq!(TraceContext::read(None, None, Some(" k=v;flag;p=1\t")).baggage(), Some(" k=v;flag;p=1\t"));
        assert!(TraceContext::read(None, None, Some("no equals sign")).baggage().is_none());
        assert!(TraceContext::read(None, None, Some(&"k=v,".repeat(65))).baggage().is_none());
        let baggage_alone = TraceContext::read(Some("garbage"), None, Some("userId=bob"));
        assert_eq!(baggage_alone.baggage(), Some("userId=bob"), "baggage stands on its own");
    }
}
