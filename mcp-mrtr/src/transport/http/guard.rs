//! DNS-rebinding protection: a local server only answers requests whose `Host` (and
//! `Origin`, when a browser sends one) names an allowed host.

use axum::http::HeaderMap;

/// Which hosts a server answers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HostPolicy {
    /// Only these host names (any port).
    Only(Vec<String>),
    /// Any host: for servers behind a proxy that checks hosts itself.
    Any,
}

impl HostPolicy {
    pub(crate) fn localhost() -> Self {
        Self::Only(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()])
    }

    /// `Err` with the reason when the request must be refused (403).
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), &'static str> {
        let Self::Only(allowed) = self else { return Ok(()) };
        let allowed = |host: &str| allowed.iter().any(|a| a.eq_ignore_ascii_case(host));
        if let Some(origin) = headers.get(axum::http::header::ORIGIN) {
            let host = origin.to_str().ok().and_then(origin_host);
            if !host.is_some_and(allowed) {
                return Err("Origin not allowed");
            }
        }
        match headers.get(axum::http::header::HOST).and_then(|h| h.to_str().ok()) {
            Some(host) if allowed(strip_port(host)) => Ok(()),
            _ => Err("Host not allowed"),
        }
    }
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
        let policy = HostPolicy::localhost();
        assert!(policy.check(&headers("localhost:3000", None)).is_ok());
        assert!(policy.check(&headers("127.0.0.1:3000", Some("http://localhost:3000"))).is_ok());
        assert!(policy.check(&headers("[::1]:3000", Some("https://[::1]"))).is_ok());
        assert!(policy.check(&headers("evil.example.com", None)).is_err());
        assert!(policy.check(&headers("localhost:3000", Some("http://evil.example.com"))).is_err());
        assert!(policy.check(&headers("localhost", Some("null"))).is_err());
        assert!(policy.check(&HeaderMap::new()).is_err());
        assert!(HostPolicy::Any.check(&headers("evil.example.com", Some("http://evil.example.com"))).is_ok());
    }
}
