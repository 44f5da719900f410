//! What a request must look like before anything reads its body: DNS-rebinding and
//! cross-site protection from its `Host`, `Origin` and `Content-Type`.
//!
//! - `Origin` is checked on every server, whatever it is bound to: a browser sends it,
//!   and a page from a foreign site must never reach the tools. Loopback origins (a page
//!   served from this machine), origins naming an allowed host, and origins the
//!   application allowed are accepted; `null` and everything else get 403.
//! - `Host` is checked unless the server answers any host (behind a proxy, or on a
//!   non-loopback address, where the names it is reached by are not known).
//! - A POST must say `Content-Type: application/json` (415 otherwise): the
//!   Streamable HTTP transport sends JSON, and a browser can send `text/plain`
//!   cross-site without asking first.

use axum::http::{header, HeaderMap};

/// The names of this machine, accepted as `Host` by default and as `Origin` always.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Which hosts a server answers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HostPolicy {
    /// As the address the server is bound to says (the default): the loopback names on a
    /// loopback address, any host elsewhere, where the names a LAN or container address is
    /// reached by are not known. `Http` decides when it binds (`HttpConfig::for_address`);
    /// a router, whose address is unknown, answers the loopback names.
    ByAddress,
    /// Only these host names (any port).
    Only(Vec<String>),
    /// Any host: for servers behind a proxy that checks hosts itself.
    Any,
}

/// The `Host` and `Origin` rules of one endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CrossSite {
    pub(crate) hosts: HostPolicy,
    /// Further origins a browser may call from, as `scheme://host[:port]`, lower-cased.
    pub(crate) origins: Vec<String>,
}

impl Default for CrossSite {
    fn default() -> Self {
        Self { hosts: HostPolicy::ByAddress, origins: Vec::new() }
    }
}

impl CrossSite {
    /// `Err` with the reason when the request must be refused (403).
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), &'static str> {
        if let Some(origin) = headers.get(header::ORIGIN) {
            if !origin.to_str().is_ok_and(|origin| self.allows_origin(origin)) {
                return Err("Origin not allowed");
            }
        }
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(strip_port);
        let answered = match &self.hosts {
            HostPolicy::Any => true,
            HostPolicy::Only(allowed) => host.is_some_and(|host| is_listed(allowed, host)),
            // Not bound to an address yet (a router): what a loopback address answers.
            HostPolicy::ByAddress => host.is_some_and(|host| is_listed(&LOOPBACK, host)),
        };
        if answered {
            Ok(())
        } else {
            Err("Host not allowed")
        }
    }

    fn allows_origin(&self, origin: &str) -> bool {
        let Some(host) = origin_host(origin) else { return false };
        let named_host = match &self.hosts {
            HostPolicy::Only(allowed) => is_listed(allowed, host),
            HostPolicy::ByAddress | HostPolicy::Any => false,
        };
        named_host
            || is_listed(&LOOPBACK, host)
            || self.origins.iter().any(|allowed| allowed.eq_ignore_ascii_case(origin.trim_end_matches('/')))
    }
}

/// The loopback names, as an allow-list.
pub(crate) fn loopback_names() -> Vec<String> {
    LOOPBACK.map(str::to_owned).to_vec()
}

fn is_listed<S: AsRef<str>>(list: &[S], host: &str) -> bool {
    list.iter().any(|allowed| allowed.as_ref().eq_ignore_ascii_case(host))
}

/// Whether a POST body is declared as JSON (`application/json`, any parameters).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    value.split(';').next().is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// The host of an `Origin` value such as `http://localhost:3000`.
fn origin_host(origin: &str) -> Option<&str> {
    let (scheme, rest) = origin.split_once("://")?;
    matches!(scheme, "http" | "https").then(|| strip_port(rest))
}

/// `localhost:8080` → `localhost`, `[::1]:8080` → `[::1]`.
fn strip_port(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.find(']').map_or(authority, |end| &authority[..=end]);
    }
    authority.split(':').next().unwrap_or(authority)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("host", HeaderValue::from_str(host).unwrap());
        if let Some(origin) = origin {
            h.insert("origin", HeaderValue::from_str(origin).unwrap());
        }
        h
    }

    #[test]
    fn local_policy_refuses_foreign_hosts_and_origins() {
        let policy = CrossSite::default();
        assert!(policy.check(&headers("localhost:3000", None)).is_ok());
        assert!(policy.check(&headers("127.0.0.1:3000", Some("http://localhost:3000"))).is_ok());
        assert!(policy.check(&headers("[::1]:3000", Some("https://[::1]"))).is_ok());
        assert!(policy.check(&headers("evil.example.com", None)).is_err());
        assert!(policy.check(&headers("localhost:3000", Some("http://evil.example.com"))).is_err());
        assert!(policy.check(&headers("localhost", Some("null"))).is_err());
        assert!(policy.check(&HeaderMap::new()).is_err());
    }

    #[test]
    fn any_host_still_refuses_foreign_origins() {
        let any = CrossSite { hosts: HostPolicy::Any, origins: vec!["https://app.example.com".into()] };
        assert!(any.check(&headers("evil.example.com", None)).is_ok(), "no Origin: not a browser");
        assert!(any.check(&headers("10.0.0.5:3000", Some("http://localhost:5173"))).is_ok());
        assert!(any.check(&headers("10.0.0.5:3000", Some("https://APP.example.com/"))).is_ok());
        for foreign in ["http://evil.example.com", "null", "https://app.example.com:8443", "file://", "http://10.0.0.5"]
        {
            assert_eq!(any.check(&headers("evil.example.com", Some(foreign))), Err("Origin not allowed"), "{foreign}");
        }
    }

    #[test]
    fn only_json_bodies_are_json() {
        let with = |value: &str| HeaderMap::from_iter([(header::CONTENT_TYPE, HeaderValue::from_str(value).unwrap())]);
        assert!(is_json(&with("application/json")));
        assert!(is_json(&with("Application/JSON; charset=utf-8")));
        for other in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "application/jsonx"] {
            assert!(!is_json(&with(other)), "{other}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }
}
