//! How `notes` checks tokens: HS256 JWTs from a development issuer, configured by
//! environment variables, and the axum app that serves `/mcp` behind them beside
//! `/health`.
//!
//! | variable | default |
//! |---|---|
//! | `NOTES_ISSUER` | `https://issuer.notes.invalid` (no real authorization server: mint tokens with `--mint-token`) |
//! | `NOTES_JWT_SECRET` | none: required (32+ bytes), unless `--dev` asks for the development secret |
//! | `NOTES_RESOURCE` | `http://127.0.0.1:PORT/mcp` |
//!
//! The development secret is published in this repository, so anyone can mint a token
//! it verifies, for any user: [`AuthConfig::from_env`] refuses it, and only
//! [`AuthConfig::dev_from_env`] (`notes --dev`) uses it.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use mcp_mrtr::auth::{JwtKeys, JwtVerifier, ResourceServer};
use mcp_mrtr::http::HttpConfig;
use serde_json::json;

/// The development issuer's default name.
pub const DEV_ISSUER: &str = "https://issuer.notes.invalid";
/// The development signing secret's default: fine on a laptop, never anywhere shared.
pub const DEV_SECRET: &str = "notes-development-secret-change-me!";
/// Scopes a development token gets.
pub const DEV_SCOPES: &str = "notes:read notes:write";
/// How long a minted token lasts: an hour.
const TOKEN_LIFETIME_SECS: u64 = 3600;

/// Who issues tokens, the key they are signed with and the resource they are for.
#[derive(Clone, Debug)]
pub struct AuthConfig {
    /// The issuer (`iss`), also the metadata's authorization server.
    pub issuer: String,
    /// The HS256 secret.
    pub secret: String,
    /// The canonical resource URI: tokens' audience.
    pub resource: String,
}

impl AuthConfig {
    /// The development defaults for a server on 127.0.0.1:`port`.
    pub fn dev(port: u16) -> Self {
        Self { issuer: DEV_ISSUER.into(), secret: DEV_SECRET.into(), resource: format!("http://127.0.0.1:{port}/mcp") }
    }

    /// The configuration for anything shared: the signing secret from
    /// `NOTES_JWT_SECRET`, the rest from `NOTES_ISSUER` and `NOTES_RESOURCE` or the
    /// defaults. Fails, saying what to do, when the secret is unset or is the published
    /// development one.
    pub fn from_env(port: u16) -> anyhow::Result<Self> {
        let config = Self::dev_from_env(port);
        if std::env::var_os("NOTES_JWT_SECRET").is_none() {
            bail!(
                "NOTES_JWT_SECRET is not set: set it to a secret of 32 bytes or more, or pass --dev to sign \
                 with the development secret published in this repository (never for anything shared)"
            );
        }
        if config.is_dev_secret() {
            bail!(
                "NOTES_JWT_SECRET is the development secret published in this repository: anyone can mint \
                 tokens with it. Set a secret of your own, or pass --dev on a machine of your own"
            );
        }
        Ok(config)
    }

    /// The development configuration: `NOTES_ISSUER`, `NOTES_JWT_SECRET` and
    /// `NOTES_RESOURCE` when set, else the defaults, the published secret among them.
    pub fn dev_from_env(port: u16) -> Self {
        let dev = Self::dev(port);
        let var = |name: &str, default: String| std::env::var(name).unwrap_or(default);
        Self {
            issuer: var("NOTES_ISSUER", dev.issuer),
            secret: var("NOTES_JWT_SECRET", dev.secret),
            resource: var("NOTES_RESOURCE", dev.resource),
        }
    }

    /// Whether the signing secret is the public development one.
    pub fn is_dev_secret(&self) -> bool {
        self.secret == DEV_SECRET
    }

    /// The resource server: tokens of this issuer for this resource, with `notes:read`.
    pub fn resource_server(&self) -> anyhow::Result<ResourceServer> {
        let keys = JwtKeys::hs256(&self.secret).context("NOTES_JWT_SECRET")?;
        Ok(ResourceServer::new(&self.resource, [&self.issuer])
            .resource_name("Team notes")
            .scopes(["notes:read"])
            .verifier(JwtVerifier::new(keys, &self.issuer, &self.resource)))
    }

    /// A token for `user` with `scopes` (space-separated), valid for an hour.
    pub fn mint(&self, user: &str, scopes: &str) -> anyhow::Result<String> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let claims = json!({
            "iss": self.issuer, "aud": self.resource, "sub": user, "scope": scopes,
            "iat": now, "exp": now + TOKEN_LIFETIME_SECS,
        });
        let key = jsonwebtoken::EncodingKey::from_secret(self.secret.as_bytes())?;
        Ok(jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key)?)
    }
}

/// The app: the notes server at `/mcp` behind bearer auth (its metadata at the
/// well-known URI), and a public `/health`. Serve it with [`mcp_mrtr::http::serve_router`],
/// so its connections are bounded too and its tasks handed back at shutdown.
pub fn app(config: &AuthConfig) -> anyhow::Result<axum::Router> {
    let http = HttpConfig::default().auth(config.resource_server()?);
    let mcp = super::server().into_router(http)?;
    Ok(axum::Router::new().route("/health", axum::routing::get(|| async { "ok" })).merge(mcp))
}
