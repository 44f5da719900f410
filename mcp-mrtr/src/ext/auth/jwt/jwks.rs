//! Keys fetched from the authorization server, as a production resource server keeps them:
//! found through the server's metadata (RFC 8414, else OpenID Connect discovery), its
//! `jwks_uri` fetched and kept as its HTTP cache headers say, fetched again when a token
//! names a key it does not hold (the server rotated its keys; at most once per
//! [`refetch_keys_at_most_every`](super::JwtVerifier::refetch_keys_at_most_every)), and kept
//! through an outage of the server for as long as
//! [`stale_keys_for`](super::JwtVerifier::stale_keys_for) says.
//!
//! Fetching is bounded as any client input is: HTTPS only (plain HTTP to a loopback host,
//! for development and tests), no redirects, 5 s per request, 256 KiB per document.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{header, HeaderMap, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use serde_json::Value;

use super::JwtKeys;
use crate::ext::auth::TokenError;

/// The longest one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest metadata or JWKS document read.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// How long keys are fresh when the server says nothing (no `Cache-Control: max-age`).
const DEFAULT_FRESH: Duration = Duration::from_secs(5 * 60);

/// The longest keys are kept fresh, whatever the server says.
const MAX_FRESH: Duration = Duration::from_secs(24 * 60 * 60);

/// What [`JwtVerifier::from_issuer`](super::JwtVerifier::from_issuer) keeps: where the keys
/// come from, and the keys as last fetched.
pub(super) struct FetchedKeys {
    issuer: String,
    held: Mutex<Held>,
    /// One fetch at a time: requests that find the keys stale wait for it.
    fetching: tokio::sync::Mutex<()>,
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
}

#[derive(Default)]
struct Held {
    keys: Option<Arc<JwtKeys>>,
    jwks_uri: Option<Uri>,
    fresh_until: Option<Instant>,
    usable_until: Option<Instant>,
    last_fetch: Option<Instant>,
}

impl std::fmt::Debug for FetchedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("FetchedKeys").field("issuer", &self.issuer).field("keys", &held.keys).finish_non_exhaustive()
    }
}

/// How fetched keys are kept.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeepRules {
    /// How long keys past their freshness still verify while fetching fails.
    pub(super) stale_for: Duration,
    /// The least time between two fetches.
    pub(super) refetch_every: Duration,
}

impl Default for KeepRules {
    fn default() -> Self {
        Self { stale_for: Duration::from_secs(60 * 60), refetch_every: Duration::from_secs(10) }
    }
}

/// Why keys are wanted: a verification finds them stale, or a token names a key not held.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    Fresh,
    Kid,
}

impl FetchedKeys {
    pub(super) fn new(issuer: String) -> Self {
        Self {
            issuer,
            held: Mutex::default(),
            fetching: tokio::sync::Mutex::new(()),
            client: Client::builder(hyper_util::rt::TokioExecutor::new()).build(crate::base::https::connector()),
        }
    }

    /// The keys to verify with now: the ones held while fresh; else fetched again (`want`
    /// says why), falling back to the ones held until they are past use.
    pub(super) async fn keys(&self, want: Want, rules: KeepRules) -> Result<Arc<JwtKeys>, TokenError> {
        if let Some(keys) = self.usable(want, Instant::now()) {
            return Ok(keys);
        }
        let _one = self.fetching.lock().await;
        // Another request may have fetched them while this one waited.
        let now = Instant::now();
        if let Some(keys) = self.usable(want, now) {
            return Ok(keys);
        }
        let held = {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            let recent = held.last_fetch.is_some_and(|last| now.duration_since(last) < rules.refetch_every);
            let keys = held.keys.clone().filter(|_| held.usable_until.is_some_and(|until| now < until));
            if recent {
                // Fetched a moment ago: use what is held rather than ask the server again.
                return keys.ok_or_else(unavailable);
            }
            held.last_fetch = Some(now);
            keys
        };
        match self.fetch().await {
            Ok((keys, fresh)) => {
                let keys = Arc::new(keys);
                let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
                held.keys = Some(keys.clone());
                held.fresh_until = Some(now + fresh);
                held.usable_until = Some(now + fresh + rules.stale_for);
                Ok(keys)
            }
            Err(problem) => {
                tracing::warn!(issuer = %self.issuer, %problem, "could not fetch the authorization server's keys");
                held.ok_or_else(unavailable)
            }
        }
    }

    /// The keys held, if `want` is served by them at `now`.
    fn usable(&self, want: Want, now: Instant) -> Option<Arc<JwtKeys>> {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = held.fresh_until.is_some_and(|until| now < until);
        (want == Want::Fresh && fresh).then(|| held.keys.clone()).flatten()
    }

    /// The keys at the server's `jwks_uri` (found once through its metadata), and how long
    /// they are fresh.
    async fn fetch(&self) -> Result<(JwtKeys, Duration), String> {
        let jwks_uri = self.held.lock().unwrap_or_else(PoisonError::into_inner).jwks_uri.clone();
        let jwks_uri = if let Some(uri) = jwks_uri {
            uri
        } else {
            let uri = self.discover().await?;
            self.held.lock().unwrap_or_else(PoisonError::into_inner).jwks_uri = Some(uri.clone());
            uri
        };
        let (headers, body) = self.get(&jwks_uri).await?;
        let text = std::str::from_utf8(&body).map_err(|_| format!("{jwks_uri}: not UTF-8"))?;
        let keys = JwtKeys::jwks(text).map_err(|e| format!("{jwks_uri}: {e}"))?;
        Ok((keys, freshness(&headers)))
    }

    /// The `jwks_uri` of the issuer's metadata: RFC 8414's well-known URI, else OpenID
    /// Connect's; the metadata must name this issuer (RFC 8414 §3.3).
    async fn discover(&self) -> Result<Uri, String> {
        let mut problems = Vec::new();
        for url in metadata_urls(&self.issuer)? {
            match self.get(&url).await {
                Ok((_, body)) => {
                    let metadata: Value =
                        serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON metadata: {e}"))?;
                    if metadata["issuer"].as_str() != Some(self.issuer.as_str()) {
                        return Err(format!("{url} names another issuer than {}", self.issuer));
                    }
                    let jwks_uri = metadata["jwks_uri"].as_str().ok_or_else(|| format!("{url} has no jwks_uri"))?;
                    return reachable(jwks_uri);
                }
                Err(problem) => problems.push(problem),
            }
        }
        Err(problems.join("; "))
    }

    /// `GET uri`: its headers and body, when it answers 200 within the bounds.
    async fn get(&self, uri: &Uri) -> Result<(HeaderMap, Bytes), String> {
        let request = Request::get(uri.clone())
            .header(header::ACCEPT, "application/json")
            .body(Empty::new())
            .map_err(|e| format!("{uri}: {e}"))?;
        let fetched = async {
            let response = self.client.request(request).await.map_err(|e| format!("{uri}: {e}"))?;
            if response.status() != StatusCode::OK {
                return Err(format!("{uri} answered {}", response.status()));
            }
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_DOCUMENT_BYTES).collect().await;
            let body = body.map_err(|e| format!("{uri}: {e} (at most {MAX_DOCUMENT_BYTES} bytes are read)"))?;
            Ok((parts.headers, body.to_bytes()))
        };
        tokio::time::timeout(FETCH_TIMEOUT, fetched).await.map_err(|_| format!("{uri} did not answer within 5 s"))?
    }
}

/// What a client is told while no key can be had: try again, not sign in again.
fn unavailable() -> TokenError {
    TokenError::Unavailable("the authorization server's keys could not be fetched".into())
}

/// The metadata URLs of `issuer`, in the order tried: RFC 8414 inserts the well-known
/// segment before the issuer's path; OpenID Connect appends it.
fn metadata_urls(issuer: &str) -> Result<Vec<Uri>, String> {
    let parsed = reachable(issuer)?;
    let path = parsed.path().trim_end_matches('/');
    let origin =
        format!("{}://{}", parsed.scheme_str().unwrap_or("https"), parsed.authority().map_or("", |a| a.as_str()));
    [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
    .iter()
    .map(|url| url.parse::<Uri>().map_err(|e| format!("{url}: {e}")))
    .collect()
}

/// `url` parsed, if keys may be fetched from it: HTTPS, or HTTP to a loopback host.
fn reachable(url: &str) -> Result<Uri, String> {
    let uri: Uri = url.parse().map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let host = uri.host().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match uri.scheme_str() {
        Some("https") => Ok(uri),
        Some("http") if loopback => Ok(uri),
        _ => Err(format!("{url}: keys are fetched over HTTPS only (plain HTTP to a loopback host alone)")),
    }
}

/// How long a response is fresh: its `Cache-Control: max-age`, at most a day; five minutes
/// when it does not say; none for `no-store` or `no-cache`.
fn freshness(headers: &HeaderMap) -> Duration {
    let Some(control) = headers.get(header::CACHE_CONTROL).and_then(|v| v.to_str().ok()) else {
        return DEFAULT_FRESH;
    };
    let mut fresh = DEFAULT_FRESH;
    for directive in control.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return Duration::ZERO;
        }
        if let Some(seconds) = lower.strip_prefix("max-age=").and_then(|s| s.trim_matches('"').parse::<u64>().ok()) {
            fresh = Duration::from_secs(seconds);
        }
    }
    fresh.min(MAX_FRESH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_both_standards_put_it() {
        let urls = metadata_urls("https://auth.example.com/tenant-1").unwrap();
        assert_eq!(urls[0], "https://auth.example.com/.well-known/oauth-authorization-server/tenant-1");
        assert_eq!(urls[1], "https://auth.example.com/tenant-1/.well-known/openid-configuration");
        let root = metadata_urls("https://auth.example.com/").unwrap();
        assert_eq!(root[0], "https://auth.example.com/.well-known/oauth-authorization-server");
    }

    #[test]
    fn keys_come_over_https_or_from_loopback_only() {
        assert!(reachable("https://auth.example.com/jwks").is_ok());
        assert!(reachable("http://127.0.0.1:8080/jwks").is_ok());
        assert!(reachable("http://localhost/jwks").is_ok());
        assert!(reachable("http://[::1]:9/jwks").is_ok());
        assert!(reachable("http://auth.example.com/jwks").is_err());
        assert!(reachable("ftp://auth.example.com/jwks").is_err());
    }

    #[test]
    fn freshness_follows_cache_control_within_a_day() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CACHE_CONTROL, value.parse().unwrap());
            freshness(&headers)
        };
        assert_eq!(freshness(&HeaderMap::new()), DEFAULT_FRESH);
        assert_eq!(with("public, max-age=600"), Duration::from_secs(600));
        assert_eq!(with("max-age=31536000"), MAX_FRESH);
        assert_eq!(with("no-cache"), Duration::ZERO);
    }
}
