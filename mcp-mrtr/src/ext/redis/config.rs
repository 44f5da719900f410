//! [`RedisConfig`]: where the Redis is and how to reach it, turned into the stores'
//! [`Link`] once, by [`Redis::connect`](super::Redis::connect).
//!
//! TLS is rustls, always compiled in with the `redis` feature: a `rediss://` URL is all a
//! managed Redis needs (its certificate is checked against the system's roots), and a
//! private CA or a client certificate is one call more. Nothing else to enable.

use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use redis::{ClientTlsConfig, ConnectionAddr, TlsCertificates, TlsMode};

use super::Link;
use crate::ext::tasks::StoreError;

/// How to reach Redis: its URL, the sentinels that name its primary, or a cluster's
/// seed nodes, and for TLS the certificates to trust and to present.
///
/// A `&str` or `String` converts into one, so [`Redis::connect`](super::Redis::connect)
/// takes a URL as it is:
///
/// - `redis://[user:password@]host:port/db` in plain text;
/// - `rediss://[user:password@]host:port/db` over TLS, checking the server's certificate
///   against the system's root certificates, or against
///   [`ca_certificate`](Self::ca_certificate) when set. The host must be a name (or IP
///   address) the certificate is for.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_mrtr::redis::{Redis, RedisConfig};
///
/// let ca = std::fs::read("/etc/redis/ca.pem")?;
/// let (cert, key) = (std::fs::read("/etc/redis/client.pem")?, std::fs::read("/etc/redis/client.key")?);
/// let redis = Redis::connect(
///     RedisConfig::url("rediss://app:secret@redis.internal:6380/0").ca_certificate(ca).client_certificate(cert, key),
/// )
/// .await?;
/// # let _ = redis;
/// # Ok(())
/// # }
/// ```
///
/// Behind Sentinel, name the primary's service and the sentinels, and the ACL user the
/// instances log in to the data nodes as; the stores follow the primary across failovers:
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_mrtr::redis::{Redis, RedisConfig};
///
/// let sentinels = ["10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"];
/// let redis = Redis::connect(RedisConfig::sentinel("mymaster", sentinels).login("app", "secret")).await?;
/// # let _ = redis;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedisConfig {
    place: Place,
    ca: Option<Vec<u8>>,
    client: Option<(Vec<u8>, Vec<u8>)>,
    login: Option<(String, String)>,
}

/// Where the data is.
#[derive(Clone)]
enum Place {
    Url(String),
    Sentinel { master: String, sentinels: Vec<String> },
    Cluster(Vec<String>),
}

impl RedisConfig {
    /// Where this config connects, for an error message: the addresses without a login
    /// (a URL's `user:password@` is left out).
    pub(super) fn whereabouts(&self) -> String {
        let bare = |url: &str| match url.split_once("://") {
            Some((scheme, rest)) => format!("{scheme}://{}", rest.rsplit_once('@').map_or(rest, |(_, host)| host)),
            None => url.rsplit_once('@').map_or(url, |(_, host)| host).to_owned(),
        };
        match &self.place {
            Place::Url(url) => bare(url),
            Place::Sentinel { master, sentinels } => {
                let sentinels: Vec<String> = sentinels.iter().map(|s| bare(s)).collect();
                format!("master {master:?} through the sentinels {}", sentinels.join(", "))
            }
            Place::Cluster(seeds) => {
                let seeds: Vec<String> = seeds.iter().map(|s| bare(s)).collect();
                format!("the cluster at {}", seeds.join(", "))
            }
        }
    }
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password and the key is a secret: neither is printed.
        f.debug_struct("RedisConfig")
            .field("tls", &self.is_tls())
            .field("ca_certificate", &self.ca.is_some())
            .field("client_certificate", &self.client.is_some())
            .finish_non_exhaustive()
    }
}

impl RedisConfig {
    /// A standalone Redis (or a proxy that speaks for one) at `url`; see the type's docs.
    /// The URL carries the login (`user:password@`).
    pub fn url(url: impl Into<String>) -> Self {
        Self { place: Place::Url(url.into()), ca: None, client: None, login: None }
    }

    /// The primary of the service `master` (Sentinel's `monitor` name), as the
    /// `sentinels` (`host:port` each, or `rediss://host:port` when the sentinels and the
    /// data nodes speak TLS; any one reachable suffices) name it now and after every
    /// failover: a link moves when a sentinel announces one, when a periodic check finds
    /// another primary, or when a command fails as it does on a dead or demoted primary.
    pub fn sentinel(master: impl Into<String>, sentinels: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let sentinels = sentinels.into_iter().map(Into::into).collect();
        Self { place: Place::Sentinel { master: master.into(), sentinels }, ca: None, client: None, login: None }
    }

    /// A Redis Cluster, found through `seeds`: URLs of some of its nodes
    /// (`redis://[user:password@]host:port`, `rediss://` for TLS), any one reachable
    /// suffices. Keys carry hash tags, so each script runs on one shard, and a server's
    /// keys spread over 16 slots.
    pub fn cluster(seeds: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let seeds = seeds.into_iter().map(Into::into).collect();
        Self { place: Place::Cluster(seeds), ca: None, client: None, login: None }
    }

    /// Logs in to the data nodes Sentinel names as ACL `user` with `password` (a
    /// `requirepass` password goes with the user `default`). A URL carries its own login.
    pub fn login(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.login = Some((user.into(), password.into()));
        self
    }

    /// Trusts only the CA certificate(s) in `pem` (PEM text, one or more certificates)
    /// for the server's certificate, instead of the system's roots: for a Redis whose
    /// certificate a private CA signed. Needs a `rediss://` URL.
    pub fn ca_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca = Some(pem.into());
        self
    }

    /// Presents a client certificate (`cert`, PEM, its chain after it) with its private
    /// key (`key`, PEM: PKCS#8, PKCS#1 or SEC1), for a Redis that requires one
    /// (`tls-auth-clients yes`). Needs a `rediss://` URL.
    pub fn client_certificate(mut self, cert: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> Self {
        self.client = Some((cert.into(), key.into()));
        self
    }

    /// Whether connections use TLS: a `rediss://` URL, a cluster seed or a sentinel.
    fn is_tls(&self) -> bool {
        let tls = |address: &String| address.starts_with("rediss://");
        match &self.place {
            Place::Url(url) => tls(url),
            Place::Sentinel { sentinels, .. } => sentinels.iter().any(tls),
            Place::Cluster(seeds) => seeds.iter().any(tls),
        }
    }

    /// The certificates to trust and present instead of the system's roots and none.
    fn certificates(&self) -> Option<TlsCertificates> {
        if self.ca.is_none() && self.client.is_none() {
            return None;
        }
        let client_tls =
            self.client.clone().map(|(client_cert, client_key)| ClientTlsConfig { client_cert, client_key });
        Some(TlsCertificates { client_tls, root_cert: self.ca.clone() })
    }

    /// The stores' connection, or what is wrong with this configuration.
    /// [`link`](Self::link) to a single Redis, connected at its first command.
    pub(super) fn lazy_link(&self) -> Result<Link, StoreError> {
        let certificates = self.checked_certificates()?;
        match &self.place {
            Place::Url(url) => Link::standalone_lazily(self.url_client(url, certificates)?).map_err(super::unreachable),
            Place::Cluster(_) | Place::Sentinel { .. } => {
                Err(bad("connect_lazily takes one Redis URL; a cluster or Sentinel connects with Redis::connect"))
            }
        }
    }

    /// The certificates given, if they go with the addresses (TLS ones); the crypto
    /// provider installed when TLS is spoken.
    fn checked_certificates(&self) -> Result<Option<TlsCertificates>, StoreError> {
        let certificates = self.certificates();
        if certificates.is_some() && !self.is_tls() {
            return Err(bad("certificates were given for Redis addresses without TLS: use rediss://"));
        }
        if self.is_tls() {
            default_crypto();
        }
        Ok(certificates)
    }

    /// The client of the one Redis at `url`, whose login it carries.
    fn url_client(&self, url: &str, certificates: Option<TlsCertificates>) -> Result<redis::Client, StoreError> {
        if self.login.is_some() {
            return Err(bad("a URL carries its own login: redis://user:password@host/"));
        }
        let client = match certificates {
            Some(certificates) => redis::Client::build_with_tls(url, certificates),
            None => redis::Client::open(url),
        };
        client.map_err(|e| bad(&e.to_string()))
    }

    pub(super) async fn link(&self) -> Result<Link, StoreError> {
        let certificates = self.checked_certificates()?;
        let unreachable = super::unreachable;
        match &self.place {
            Place::Cluster(_) if self.login.is_some() => {
                Err(bad("a URL carries its own login: redis://user:password@host/"))
            }
            Place::Url(url) => Link::standalone(self.url_client(url, certificates)?).await.map_err(unreachable),
            Place::Cluster(seeds) => Link::cluster(seeds, certificates).await.map_err(unreachable),
            Place::Sentinel { master, sentinels } => {
                let addresses = sentinels.iter().map(|s| address(s, self.is_tls())).collect::<Result<Vec<_>, _>>()?;
                let mut builder = SentinelClientBuilder::new(addresses, master, SentinelServerType::Master)
                    .map_err(|e| bad(&e.to_string()))?;
                if let Some((user, password)) = &self.login {
                    builder = builder.set_client_to_redis_username(user).set_client_to_redis_password(password);
                }
                if self.is_tls() {
                    // The data nodes the sentinels name speak TLS as the sentinels do.
                    builder = builder.set_client_to_redis_tls_mode(TlsMode::Secure);
                }
                if let Some(certificates) = certificates {
                    builder = builder
                        .set_client_to_sentinel_certificates(certificates.clone())
                        .set_client_to_redis_certificates(certificates);
                }
                let sentinel = builder.build().map_err(|e| bad(&e.to_string()))?;
                Link::sentinel(sentinel).await.map_err(unreachable)
            }
        }
    }
}

fn bad(why: &str) -> StoreError {
    StoreError::new(format!("bad Redis configuration: {why}"))
}

/// A sentinel's address: `host:port`, or `redis://host:port` (`rediss://` for TLS, which
/// then holds for every sentinel: `tls`).
fn address(sentinel: &str, tls: bool) -> Result<ConnectionAddr, StoreError> {
    let bare = sentinel.strip_prefix("rediss://").or_else(|| sentinel.strip_prefix("redis://")).unwrap_or(sentinel);
    let bare = bare.trim_end_matches('/');
    let parsed = bare.rsplit_once(':').and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)));
    match parsed {
        Some((host, port)) if !host.is_empty() && !host.contains(['@', '/']) => {
            let host = host.trim_matches(['[', ']']).to_owned();
            Ok(if tls {
                ConnectionAddr::TcpTls { host, port, insecure: false, tls_params: None }
            } else {
                ConnectionAddr::Tcp(host, port)
            })
        }
        _ => Err(bad(&format!("a sentinel is host:port or redis[s]://host:port, not {sentinel:?}"))),
    }
}

impl From<&str> for RedisConfig {
    fn from(url: &str) -> Self {
        Self::url(url)
    }
}

impl From<String> for RedisConfig {
    fn from(url: String) -> Self {
        Self::url(url)
    }
}

impl From<&String> for RedisConfig {
    fn from(url: &String) -> Self {
        Self::url(url.as_str())
    }
}

/// rustls needs one process-wide crypto provider. When the application chose none, ours
/// is *ring* (the one the `redis` feature compiles); an application that installed its own
/// keeps it. Without this, a program whose dependencies compile two providers (ring here,
/// aws-lc-rs through another crate) would panic at the first TLS connection.
fn default_crypto() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another installer is fine: a provider is then installed.
        // rustls 0.23.48 deprecates *ring*'s provider for having no post-quantum key
        // exchange; it stays ours because it builds without cmake or a C toolchain beyond
        // cc. An application that wants post-quantum TLS to Redis installs aws-lc-rs's
        // provider before connecting, and this keeps it.
        #[allow(deprecated, reason = "ring is the provider the redis feature compiles; see above")]
        let provider = rustls::crypto::ring::default_provider();
        let _ = provider.install_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_names_where_it_connected_without_the_login() {
        let url = RedisConfig::url("redis://app:s3cret@10.0.0.5:6379/2");
        assert_eq!(url.whereabouts(), "redis://10.0.0.5:6379/2");
        let cluster = RedisConfig::cluster(["rediss://u:p@a:7000", "rediss://b:7001"]);
        assert_eq!(cluster.whereabouts(), "the cluster at rediss://a:7000, rediss://b:7001");
        assert!(!format!("{:?}", url.whereabouts()).contains("s3cret"));
    }
}
