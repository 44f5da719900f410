//! The one way the crate makes outgoing HTTP requests (the `jwt` feature's key fetches,
//! the `client` feature's MCP client): HTTP/1 over plain TCP or rustls with *ring* (the
//! `redis` feature's TLS too), trusting the system's root certificates.

use std::sync::Arc;

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;

/// HTTPS with the system's roots, or plain HTTP where the caller allows it. Without system
/// roots, HTTPS fails at its handshake, naming why, and plain HTTP still works.
pub(crate) fn connector() -> HttpsConnector<HttpConnector> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = hyper_rustls::HttpsConnectorBuilder::new();
    let builder = match builder.with_provider_and_native_roots(provider.clone()) {
        Ok(builder) => builder,
        Err(error) => {
            tracing::warn!(%error, "no system root certificates: HTTPS requests will fail; plain HTTP still works");
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("ring supports the default protocol versions")
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config)
        }
    };
    builder.https_or_http().enable_http1().build()
}
