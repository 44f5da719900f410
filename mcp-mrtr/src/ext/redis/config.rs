//! [`RedisConfig`]: where the Redis is and how to reach it, turned into a
//! [`redis::Client`] once, by [`Redis::connect`](super::Redis::connect).
//!
//! TLS is rustls, always compiled in with the `redis` feature: a `rediss://` URL is all a
//! managed Redis needs (its certificate is checked against the system's roots), and a
//! private CA or a client certificate is one call more. Nothing else to enable.

/// How to reach Redis: its URL, and for TLS the certificates to trust and to present.
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
#[derive(Clone)]
pub struct RedisConfig {
    url: String,
    ca: Option<Vec<u8>>,
    client: Option<(Vec<u8>, Vec<u8>)>,
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
    pub fn url(url: impl Into<String>) -> Self {
        Self { url: url.into(), ca: None, client: None }
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
        self.url.starts_with("rediss://")
    }

    /// The client every connection is made from, or what is wrong with this configuration.
    pub(super) fn client(&self) -> Result<redis::Client, String> {
        let certificates = self.ca.is_some() || self.client.is_some();
        if certificates && !self.is_tls() {
            return Err("certificates were given for a Redis URL without TLS: use rediss://".to_owned());
        }
        if self.is_tls() {
            default_crypto();
        }
        let client = if certificates {
            let (ca, client) = (self.ca.clone(), self.client.clone());
            let client_tls = client.map(|(client_cert, client_key)| redis::ClientTlsConfig { client_cert, client_key });
            redis::Client::build_with_tls(self.url.as_str(), redis::TlsCertificates { client_tls, root_cert: ca })
        } else {
            redis::Client::open(self.url.as_str())
        };
        client.map_err(|e| format!("bad Redis configuration: {e}"))
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
