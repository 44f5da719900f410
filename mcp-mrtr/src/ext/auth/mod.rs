//! An OAuth 2.1 resource server for the HTTP transport (MCP basic/authorization).
//!
//! Configure a [`ResourceServer`] with this server's canonical URI, the authorization
//! servers that issue its tokens and a [`TokenVerifier`], and give it to the router with
//! [`HttpConfig::auth`](crate::http::HttpConfig::auth). Then:
//!
//! - the protected resource metadata (RFC 9728) is served, unauthenticated, at the
//!   well-known URI of the resource (`/.well-known/oauth-protected-resource/mcp` for
//!   `https://host/mcp`), listing the configured scopes and every scope a handler requires;
//! - every request to the MCP endpoint needs `Authorization: Bearer <token>`: a missing,
//!   invalid or expired token gets `401` with a `WWW-Authenticate` challenge that names
//!   the metadata document;
//! - a verified token becomes the request's [`Caller`] (and its [`Claims`] an extension):
//!   request states and legacy sessions bind to it, handlers read it;
//! - a tool, prompt or resource declared with required scopes
//!   (`#[tool(scopes = ["notes:write"])]`, [`ToolRoute::requires_scopes`](crate::ToolRoute::requires_scopes))
//!   refuses a caller without them before its handler runs: `403` with an
//!   `insufficient_scope` challenge naming every scope the call needs. The same check
//!   guards every way to a route (`completion/complete` for it, listen subscriptions to a
//!   resource, `tasks/update` of a task running a tool), with the application's
//!   visibility filter before it: one decision, `Engine::access` in `dispatch/access.rs`.
//!
//! ```
//! use mcp_mrtr::auth::{BoxFuture, ResourceServer, TokenError, TokenVerifier, VerifiedToken};
//! use mcp_mrtr::{Caller, http::HttpConfig};
//!
//! /// Accepts one fixed token: a stand-in for introspection or your IdP's SDK.
//! struct Fixed;
//!
//! impl TokenVerifier for Fixed {
//!     fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, TokenError>> {
//!         Box::pin(async move {
//!             match token {
//!                 "let-me-in" => Ok(VerifiedToken::new(Caller::new("alice").with_scopes(["notes:read"]))),
//!                 _ => Err(TokenError::invalid("unknown token")),
//!             }
//!         })
//!     }
//! }
//!
//! let config = HttpConfig::default().auth(
//!     ResourceServer::new("https://notes.example.com/mcp", ["https://auth.example.com"])
//!         .scopes(["notes:read"])
//!         .verifier(Fixed),
//! );
//! # let _ = config;
//! ```
//!
//! With the `jwt` feature, [`JwtVerifier`] checks JWT access tokens locally: signature
//! (HS256 secret, RSA/EC public key, or a JWKS document), issuer (one string), audience
//! (this resource, RFC 8707), expiry, that the token is typed as an access token (RFC 9068;
//! not an ID, DPoP, logout or event token) and that it lives no longer than its maximum
//! lifetime (24 h by default).
//!
//! Scopes are checked against the request's caller, so over stdio (no caller) a route
//! that declares scopes is refused: it is never open to anonymous callers.
//!
//! The raw token is never stored: handlers and visibility filters do not see it unless
//! [`ResourceServer::pass_token_to_handlers`] asks for it (once verified, the
//! `Authorization` header is removed from the request they read), and even then its
//! `Debug` is redacted. Scope hierarchies (a scope that implies others) are the verifier's business:
//! it returns the caller with every scope the token grants, implied ones included.

mod challenge;
#[cfg(feature = "jwt")]
mod jwt;
mod metadata;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

/// The future a [`TokenVerifier`] returns (a re-export of `futures_util`'s).
pub use futures_util::future::BoxFuture;
use serde_json::Value;

pub(crate) use self::challenge::{finish, mark, Gate};
#[cfg(feature = "jwt")]
#[cfg_attr(docsrs, doc(cfg(feature = "jwt")))]
pub use self::jwt::{JwtError, JwtKeys, JwtVerifier};
use crate::base::caller::Caller;
use crate::protocol::JsonObject;
use crate::routes::handler::PromptRoute;
use crate::routes::handler::ResourceRoute;
use crate::routes::handler::ToolRoute;

/// Checks a bearer token and says who presented it. Plug in JWT validation
/// ([`JwtVerifier`] with the `jwt` feature), token introspection (RFC 7662) or your
/// identity provider's SDK.
///
/// A verifier MUST accept only tokens issued for this resource (their audience): the
/// MCP specification forbids accepting, or passing on, tokens meant for anything else.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token`: the caller it belongs to, or why it is refused.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, TokenError>>;
}

impl<T: TokenVerifier + ?Sized> TokenVerifier for Arc<T> {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, TokenError>> {
        (**self).verify(token)
    }
}

/// What a verified token established: the [`Caller`] and the token's claims.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifiedToken {
    /// Who presented the token, with the scopes it grants.
    pub caller: Caller,
    /// The token's claims (empty for opaque tokens); handlers take them as
    /// `Extension<Claims>`.
    pub claims: Claims,
}

impl VerifiedToken {
    /// A verified token with no claims.
    pub fn new(caller: Caller) -> Self {
        Self { caller, claims: Claims::default() }
    }

    /// Attaches the token's claims.
    pub fn with_claims(mut self, claims: Claims) -> Self {
        self.claims = claims;
        self
    }
}

/// The claims of the request's verified access token (a JWT's payload, an introspection
/// response), inserted into the request's extensions: a handler takes them as an
/// `Extension<Claims>` parameter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Claims(JsonObject);

impl Claims {
    /// Claims from a JSON object.
    pub fn new(claims: JsonObject) -> Self {
        Self(claims)
    }

    /// One claim.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

    /// All claims.
    pub fn as_object(&self) -> &JsonObject {
        &self.0
    }
}

/// Why a token was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    /// Malformed, forged, expired, or not for this resource: `401` with
    /// `error="invalid_token"`. The description goes to the client, so it must not hold
    /// secrets (nor the token).
    Invalid(String),
    /// The verifier could not decide (the introspection endpoint is down): `503`, so the
    /// client retries instead of asking its user to sign in again.
    Unavailable(String),
}

impl TokenError {
    /// A refused token, with a description for the client.
    pub fn invalid(description: impl Into<String>) -> Self {
        Self::Invalid(description.into())
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(why) => write!(f, "invalid token: {why}"),
            Self::Unavailable(why) => write!(f, "token verification unavailable: {why}"),
        }
    }
}

impl std::error::Error for TokenError {}

/// The request's raw access token, for the rare handler that must present it elsewhere.
/// Only inserted with [`ResourceServer::pass_token_to_handlers`]; its `Debug` is
/// redacted so it never reaches a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken(String);

impl AccessToken {
    /// The token itself.
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccessToken(<redacted>)")
    }
}

/// This server as an OAuth 2.1 protected resource: its identity, who issues its tokens,
/// and how to verify them. Give it to [`HttpConfig::auth`](crate::http::HttpConfig::auth).
#[derive(Clone)]
pub struct ResourceServer {
    resource: String,
    authorization_servers: Vec<String>,
    scopes: Vec<String>,
    resource_name: Option<String>,
    verifier: Option<Arc<dyn TokenVerifier>>,
    pass_token: bool,
    /// Why it cannot serve as built, reported when serving starts.
    refused: Option<String>,
}

impl ResourceServer {
    /// A resource server known as `resource`, its canonical URI (`https://mcp.example.com/mcp`:
    /// the URI clients connect to and the audience its tokens name), whose tokens come
    /// from `authorization_servers` (their issuer URLs, at least one).
    ///
    /// A `resource` that is not an absolute `http`/`https` URI without a query or
    /// fragment, or no authorization server, is a misconfiguration that serving reports:
    /// `serve` and `into_router` return the error, as for every other builder mistake.
    pub fn new<S: Into<String>>(
        resource: impl Into<String>,
        authorization_servers: impl IntoIterator<Item = S>,
    ) -> Self {
        let resource = resource.into();
        let authorization_servers: Vec<String> = authorization_servers.into_iter().map(Into::into).collect();
        let mut refused = metadata::check_resource(&resource)
            .err()
            .map(|problem| format!("ResourceServer: the resource {resource:?} {problem}"));
        if authorization_servers.is_empty() {
            refused.get_or_insert_with(|| "ResourceServer: name at least one authorization server".into());
        }
        Self {
            refused,
            resource,
            authorization_servers,
            scopes: Vec::new(),
            resource_name: None,
            verifier: None,
            pass_token: false,
        }
    }

    /// Scopes every request needs (a token without them gets `403`). They are the
    /// `scope` of the `401` challenge, which tells a client what to ask for first, and
    /// are listed in `scopes_supported` with the scopes handlers require.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// A human-readable name for the metadata's `resource_name`.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// How tokens are checked. Required.
    pub fn verifier(mut self, verifier: impl TokenVerifier) -> Self {
        self.verifier = Some(Arc::new(verifier));
        self
    }

    /// Also inserts the raw token as an [`AccessToken`] extension, and leaves the
    /// `Authorization` header in the headers handlers and visibility filters read. Off by
    /// default (the header is removed once verified): an MCP server must not pass its
    /// client's token on to other services.
    pub fn pass_token_to_handlers(mut self, pass: bool) -> Self {
        self.pass_token = pass;
        self
    }

    /// The canonical resource URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The absolute URL of the protected resource metadata document.
    pub fn metadata_url(&self) -> String {
        metadata::url(&self.resource)
    }
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes", &self.scopes)
            .field("verifier", &self.verifier.as_ref().map(|_| ".."))
            .finish_non_exhaustive()
    }
}

/// Every scope the server's enabled routes declare now (the catalog can change while
/// the server runs), in first-declared order.
///
/// Hidden routes' scopes included: the metadata is public and asked for without a token,
/// and a visibility filter decides per request (its caller, capabilities, headers), so no
/// request here could say whom a route is hidden from, and leaving out what an anonymous
/// request cannot see would hide the scopes a signed-in client must ask for. A scope's
/// name is public; name scopes so they do not describe hidden routes.
pub(crate) fn declared_scopes(server: &crate::dispatch::Engine) -> Vec<String> {
    let catalog = server.catalog();
    let routes = catalog.enabled::<ToolRoute>().map(|t| &t.requires.scopes);
    let routes = routes.chain(catalog.enabled::<PromptRoute>().map(|p| &p.requires.scopes));
    let routes = routes.chain(catalog.enabled::<ResourceRoute>().map(|r| &r.requires.scopes));
    let mut seen = BTreeSet::new();
    routes.flatten().filter(|s| seen.insert(s.as_str())).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_raw_token_never_shows_in_debug() {
        let token = AccessToken("eyJ.secret.sig".into());
        assert!(!format!("{token:?}").contains("secret"));
        assert_eq!(token.secret(), "eyJ.secret.sig");
    }
}
