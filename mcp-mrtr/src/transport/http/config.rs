//! [`HttpConfig`]: how the HTTP endpoint is mounted (path, body cap), which hosts and
//! origins it answers, its [`HttpLimits`], and the OAuth resource server
//! in front of it.

use std::net::SocketAddr;

use super::cross_site::{CrossSite, HostPolicy};
use super::HttpLimits;
use crate::bounds::lifetime::Lifetime;

/// How the HTTP endpoint is mounted and guarded.
///
/// Give it to [`Http::config`](crate::http::Http::config) or
/// [`Server::into_router`](crate::Server::into_router):
///
/// ```
/// use mcp_mrtr::http::{HttpConfig, HttpLimits};
/// use mcp_mrtr::Server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let config = HttpConfig::default()
///     .path("/api/mcp")
///     // The name clients reach it by; the default answers loopback names only.
///     .allowed_hosts(["mcp.example.com"])
///     // The web app that calls it from the browser.
///     .allowed_origins(["https://app.example.com"])
///     .max_body_bytes(256 * 1024)
///     .limits(HttpLimits::default().max_handlers(64));
/// let router = Server::new("app", "1.0.0").into_router(config).expect("configured");
/// # let _ = router;
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub(super) path: String,
    pub(super) max_body_bytes: usize,
    pub(super) max_json_values: usize,
    pub(super) cross_site: CrossSite,
    pub(super) limits: HttpLimits,
    pub(super) auth: Option<crate::ext::auth::ResourceServer>,
    /// Whether a client's address is the last one in `X-Forwarded-For`.
    pub(super) trust_forwarded_for: bool,
    /// How long the endpoint lives: a process, or one request at a time in a function
    /// (AWS Lambda), where nothing that outlives a request is served.
    pub(crate) lifetime: Lifetime,
}

impl Default for HttpConfig {
    /// `/mcp`, 1 MiB bodies, the hosts the bound address implies (only `localhost`,
    /// `127.0.0.1` and `[::1]` on a loopback address and in a router; any elsewhere),
    /// browser requests only from loopback pages, and the default [`HttpLimits`]: the same
    /// as serving with no config at all.
    fn default() -> Self {
        Self {
            path: "/mcp".into(),
            max_body_bytes: 1024 * 1024,
            max_json_values: crate::intake::envelope::size::MAX_JSON_VALUES,
            cross_site: CrossSite::default(),
            limits: HttpLimits::default(),
            auth: None,
            trust_forwarded_for: false,
            lifetime: Lifetime::Process,
        }
    }
}

impl HttpConfig {
    /// The endpoint's path (default `/mcp`).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The largest request body accepted (default 1 MiB); larger ones get HTTP 413.
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body_bytes = limit;
        self
    }

    /// How many JSON values one body may hold (default
    /// [`MAX_JSON_VALUES`](crate::stdio::MAX_JSON_VALUES), 100,000: about 7 MiB parsed).
    /// A value takes 72 bytes once parsed however few it took in the body, so a 1 MiB body
    /// of `[0,0,…]` would parse to 36 MiB; past the bound the body gets HTTP 413 and
    /// `-32600`, unparsed. Long text is one value: raise this only for tools that take
    /// large arrays.
    pub fn max_json_values(mut self, max: usize) -> Self {
        self.max_json_values = max;
        self
    }

    /// Answers only requests whose `Host` names one of these hosts (without port), and
    /// browser requests from pages on them, protecting local servers from DNS
    /// rebinding. By default the bound address decides: the loopback names on a
    /// loopback address (and in a router served otherwise), any host elsewhere.
    pub fn allowed_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.cross_site.hosts = HostPolicy::Only(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Answers any `Host`: for servers behind a proxy that checks it, or reached by names
    /// not known in advance. `Origin` is still checked: browser requests are answered
    /// only from loopback pages and [`allowed_origins`](Self::allowed_origins). `false`
    /// goes back to the default: as the bound address says.
    pub fn allow_any_host(mut self, any: bool) -> Self {
        if any {
            self.cross_site.hosts = HostPolicy::Any;
        } else if self.cross_site.hosts == HostPolicy::Any {
            self.cross_site.hosts = CrossSite::default().hosts;
        }
        self
    }

    /// The bounds on requests: bodies, handlers, sessions (see [`HttpLimits`] for the
    /// defaults). The bounds on connections are the listener's:
    /// [`ListenerLimits`](crate::http::ListenerLimits).
    pub fn limits(mut self, limits: HttpLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Also answers browser requests from pages of these origins, written as the browser
    /// sends them: `https://app.example.com`, or with a port, `http://intranet:8080`.
    /// Any other `Origin` gets 403, whatever the `Host` settings. Default: none beyond
    /// the loopback hosts and [`allowed_hosts`](Self::allowed_hosts).
    pub fn allowed_origins<S: Into<String>>(mut self, origins: impl IntoIterator<Item = S>) -> Self {
        let origins = origins.into_iter().map(|o| o.into().trim_end_matches('/').to_ascii_lowercase());
        self.cross_site.origins.extend(origins);
        self
    }

    /// This configuration as [`Http`](crate::http::Http) applies it on `local`: hosts left
    /// to the address are the loopback names on a loopback address, and any host
    /// elsewhere (the names a LAN or container address is reached by are not known), with
    /// the `Origin` check kept. Hosts the application named stay as named.
    pub(super) fn for_address(mut self, local: SocketAddr) -> Self {
        if self.cross_site.hosts == HostPolicy::ByAddress {
            self.cross_site.hosts = if local.ip().is_loopback() {
                HostPolicy::Only(super::cross_site::loopback_names())
            } else {
                tracing::warn!(%local, "serving MCP over HTTP on a non-loopback address: any Host is answered (Origin is still checked)");
                HostPolicy::Any
            };
        }
        self
    }

    /// This configuration for an endpoint that lives for `lifetime`. In a function that
    /// serves one request at a time (AWS Lambda), hosts left to the address are any host
    /// (the function's public name, a Function URL's or a custom domain's, is checked by
    /// the platform that routed the request to it), and nothing that must outlive a
    /// request is served.
    #[cfg_attr(not(feature = "lambda"), allow(dead_code))]
    pub(crate) fn living(mut self, lifetime: Lifetime) -> Self {
        if lifetime == Lifetime::Request && self.cross_site.hosts == HostPolicy::ByAddress {
            self.cross_site.hosts = HostPolicy::Any;
        }
        self.lifetime = lifetime;
        self
    }

    /// Whether [`trust_forwarded_for`](Self::trust_forwarded_for) is on.
    #[cfg(feature = "lambda")]
    pub(crate) fn trusts_forwarded_for(&self) -> bool {
        self.trust_forwarded_for
    }

    /// Takes a client's address from the last entry of `X-Forwarded-For` (the one the
    /// proxy in front of this server appended) instead of the TCP peer. Off by default:
    /// only turn it on behind a proxy that always sets the header, since a client that
    /// reaches the server directly could otherwise claim any address.
    ///
    /// The address is who a client is for every per-client share of [`HttpLimits`] when the
    /// request has no authenticated [`Caller`](crate::Caller). Behind a proxy without this,
    /// every client shares the proxy's address, so the per-client shares act as totals.
    pub fn trust_forwarded_for(mut self, trust: bool) -> Self {
        self.trust_forwarded_for = trust;
        self
    }

    /// Protects the endpoint as an OAuth 2.1 resource server: every request needs a
    /// bearer token the server's verifier accepts, and the protected resource metadata
    /// is served at its well-known URI. See [`crate::auth`].
    pub fn auth(mut self, resource_server: crate::ext::auth::ResourceServer) -> Self {
        self.auth = Some(resource_server);
        self
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{header, HeaderMap};

    use super::*;

    #[test]
    fn only_loopback_addresses_check_hosts_and_every_address_checks_origins() {
        let loopback = HttpConfig::default().for_address("127.0.0.1:3000".parse().unwrap());
        assert_eq!(loopback.cross_site.hosts, HostPolicy::Only(super::super::cross_site::loopback_names()));
        for address in ["0.0.0.0:3000", "192.168.1.5:3000", "[::]:3000"] {
            // A config that changes something else leaves the hosts to the address (issue 50).
            let config = HttpConfig::default().max_body_bytes(1024).for_address(address.parse().unwrap());
            assert_eq!(config.cross_site.hosts, HostPolicy::Any, "{address}");
            let mut foreign = HeaderMap::new();
            foreign.insert(header::HOST, "attacker.example".parse().unwrap());
            foreign.insert(header::ORIGIN, "http://attacker.example".parse().unwrap());
            assert_eq!(config.cross_site.check(&foreign), Err("Origin not allowed"), "{address}");
            let named = HttpConfig::default().allowed_hosts(["mcp.example"]).for_address(address.parse().unwrap());
            assert_eq!(named.cross_site.hosts, HostPolicy::Only(vec!["mcp.example".into()]), "named hosts stay");
        }
    }
}
