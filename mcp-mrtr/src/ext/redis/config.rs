//! [`RedisConfig`]: where the Redis is and how to reach it, turned into the stores'
//! [`Link`] once, by [`Redis::connect`](super::Redis::connect).
//!
//! TLS is rustls, always compiled in with the `redis` feature: a `rediss://` URL is all a
//! managed Redis needs (its certificate is checked against the system's roots), and a
//! private CA or a client certificate is one call more. Nothing else to enable.

use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use redis::ConnectionAddr;

use super::Link;
use crate::ext::tasks::StoreError;

/// How to reach Redis: its URL or the sentinels that name its primary, and for TLS the
/// certificates to trust and to present.
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
    /// `sentinels` (`host:port` each, any one reachable suffices) name it now and after
    /// every failover: when a command fails because the primary is down or became a
    /// replica, the next one goes to the primary the sentinels name then. Plain text.
    pub fn sentinel(master: impl Into<String>, sentinels: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let sentinels = sentinels.into_iter().map(Into::into).collect();
        Self { place: Place::Sentinel { master: master.into(), sentinels }, ca: None, client: None, login: None }
    }

    /// A Redis Cluster, found through `seeds`: URLs of some of its nodes
    /// (`redis://[user:password@]host:port`), any one reachable suffices. Keys carry hash
    /// tags, so each script runs on one shard, and a server's keys spread over 16 slots.
    /// Plain text.
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

    fn is_tls(&self) -> bool {
        matches!(&self.place, Place::Url(url) if url.starts_with("rediss://"))
    }

    /// The stores' connection, or what is wrong with this configuration.
    pub(super) async fn link(&self) -> Result<Link, StoreError> {
        let certificates = self.ca.is_some() || self.client.is_some();
        match &self.place {
            Place::Url(_) if self.login.is_some() => {
                Err(bad("a URL carries its own login: redis://user:password@host/"))
            }
            Place::Url(_) if certificates && !self.is_tls() => {
                Err(bad("certificates were given for a Redis URL without TLS: use rediss://"))
            }
            Place::Url(url) => Link::standalone(self.client(url)?).await.map_err(super::unreachable),
            Place::Sentinel { .. } if certificates => Err(bad("TLS through Sentinel is not supported yet")),
            Place::Cluster(_) if certificates || self.login.is_some() => {
                Err(bad("a cluster's seed URLs carry the login, and TLS to a cluster is not supported yet"))
            }
            Place::Cluster(seeds) if seeds.iter().any(|seed| seed.starts_with("rediss://")) => {
                Err(bad("TLS to a cluster is not supported yet"))
            }
            Place::Cluster(seeds) => Link::cluster(seeds).await.map_err(super::unreachable),
            Place::Sentinel { master, sentinels } => {
                let addresses = sentinels.iter().map(|s| address(s)).collect::<Result<Vec<_>, _>>()?;
                let mut builder = SentinelClientBuilder::new(addresses, master, SentinelServerType::Master)
                    .map_err(|e| bad(&e.to_string()))?;
                if let Some((user, password)) = &self.login {
                    builder = builder.set_client_to_redis_username(user).set_client_to_redis_password(password);
                }
                let sentinel = builder.build().map_err(|e| bad(&e.to_string()))?;
                Link::sentinel(sentinel).await.map_err(super::unreachable)
            }
        }
    }

    /// The client of the standalone Redis at `url`, with this configuration's certificates.
    fn client(&self, url: &str) -> Result<redis::Client, StoreError> {
        if self.is_tls() {
            default_crypto();
        }
        let client = if self.ca.is_some() || self.client.is_some() {
            let (ca, client) = (self.ca.clone(), self.client.clone());
            let client_tls = client.map(|(client_cert, client_key)| redis::ClientTlsConfig { client_cert, client_key });
            redis::Client::build_with_tls(url, redis::TlsCertificates { client_tls, root_cert: ca })
        } else {
            redis::Client::open(url)
        };
        client.map_err(|e| bad(&e.to_string()))
    }
}

fn bad(why: &str) -> StoreError {
    StoreError::new(format!("bad Redis configuration: {why}"))
}

/// A sentinel's `host:port`.
fn address(sentinel: &str) -> Result<ConnectionAddr, StoreError> {
    let parsed = sentinel.rsplit_once(':').and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)));
    match parsed {
        Some((host, port)) if !host.is_empty() => {
            Ok(ConnectionAddr::Tcp(host.trim_matches(['[', ']']).to_owned(), port))
        }
        _ => Err(bad(&format!("a sentinel is host:port, not {sentinel:?}"))),
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
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
