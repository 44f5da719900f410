//! The resource server at work on HTTP: [`Gate::admit`] checks a request's bearer token
//! before the MCP pipeline sees it, and answers `401`/`403` with RFC 6750 challenges
//! that point at the metadata document (RFC 9728 §5.1).

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::{metadata, AccessToken, ResourceServer, TokenError, TokenVerifier};
use crate::base::error::Error;

/// A [`ResourceServer`] ready to serve.
pub(crate) struct Gate {
    config: ResourceServer,
    verifier: Arc<dyn TokenVerifier>,
    metadata_path: String,
    metadata_url: String,
}

/// What the HTTP layer attaches to a response refused for insufficient scope, so that
/// [`finish`] can add the challenge: the scopes the call needs.
#[derive(Clone, Debug)]
pub(crate) struct NeedsScopes(pub(crate) Vec<String>);

impl Gate {
    /// The gate of `config`, or why it cannot serve (a bad resource URI, no authorization
    /// server, no verifier).
    pub(crate) fn new(config: &ResourceServer) -> Result<Self, String> {
        if let Some(refused) = &config.refused {
            return Err(refused.clone());
        }
        let verifier = config.verifier.clone().ok_or_else(|| {
            format!(
                "the ResourceServer for {} has no verifier: set a token verifier with .verifier(…)",
                config.resource
            )
        })?;
        Ok(Self {
            verifier,
            metadata_path: metadata::path(&config.resource),
            metadata_url: metadata::url(&config.resource),
            config: config.clone(),
        })
    }

    /// Where the metadata document is served.
    pub(crate) fn metadata_path(&self) -> &str {
        &self.metadata_path
    }

    /// The metadata document, listing the scopes the handlers `declared` now: public,
    /// and readable from browser-based clients.
    pub(crate) fn metadata(&self, method: &Method, declared: &[String]) -> Response {
        if method != Method::GET && method != Method::HEAD {
            return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET")]).into_response();
        }
        let headers = [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")),
        ];
        (StatusCode::OK, headers, metadata::document(&self.config, declared).to_string()).into_response()
    }

    /// Verifies the request's bearer token and attaches what it established (the
    /// [`Caller`](crate::Caller), its [`Claims`](super::Claims)), or answers for it.
    pub(crate) async fn admit(&self, request: &mut Request) -> Result<(), Response> {
        let token = match bearer(request.headers()) {
            Ok(Some(token)) => token.to_owned(),
            Ok(None) => return Err(self.unauthorized(None)),
            Err(()) => return Err(self.unauthorized(Some("the Authorization header is not a bearer token"))),
        };
        let verified = match self.verifier.verify(&token).await {
            Ok(verified) => verified,
            Err(TokenError::Invalid(why)) => {
                tracing::debug!(%why, "refused a bearer token");
                return Err(self.unauthorized(Some(&why)));
            }
            Err(TokenError::Unavailable(why)) => {
                tracing::warn!(%why, "could not verify a bearer token");
                let error = Error::internal("token verification is unavailable; try again later");
                return Err(body(StatusCode::SERVICE_UNAVAILABLE, &error));
            }
        };
        if let Err(error) = crate::base::caller::authorize(&self.config.scopes, Some(&verified.caller)) {
            return Err(self.forbidden(&self.config.scopes, &error));
        }
        let extensions = request.extensions_mut();
        extensions.insert(verified.caller);
        extensions.insert(verified.claims);
        if self.config.pass_token {
            extensions.insert(AccessToken(token));
        } else {
            // Handlers and visibility filters read the request's headers
            // (`Ctx::http_headers`, `RequestView::http_headers`): the token must not
            // reach them that way either.
            request.headers_mut().remove(header::AUTHORIZATION);
        }
        Ok(())
    }

    /// `401`: `error="invalid_token"` (with why) when a token was presented.
    fn unauthorized(&self, invalid: Option<&str>) -> Response {
        let mut params = vec![("resource_metadata", self.metadata_url.clone())];
        if !self.config.scopes.is_empty() {
            params.push(("scope", self.config.scopes.join(" ")));
        }
        let message = match invalid {
            None => "Unauthorized: send an access token for this resource (Authorization: Bearer …)".to_owned(),
            Some(why) => {
                params.push(("error", "invalid_token".into()));
                params.push(("error_description", why.to_owned()));
                format!("Unauthorized: invalid access token: {why}")
            }
        };
        let mut response = body(StatusCode::UNAUTHORIZED, &Error::invalid_request(message));
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(&params));
        response
    }

    /// `403` naming every scope the call needs: the server's own and the route's.
    fn forbidden(&self, needed: &[String], error: &Error) -> Response {
        let mut response = body(StatusCode::FORBIDDEN, error);
        response.headers_mut().insert(header::WWW_AUTHENTICATE, self.scope_challenge(needed));
        response
    }

    fn scope_challenge(&self, needed: &[String]) -> HeaderValue {
        let mut scopes = self.config.scopes.clone();
        scopes.extend(needed.iter().filter(|s| !self.config.scopes.contains(s)).cloned());
        challenge(&[
            ("error", "insufficient_scope".into()),
            ("scope", scopes.join(" ")),
            ("resource_metadata", self.metadata_url.clone()),
        ])
    }
}

/// Marks a response refused for insufficient scope, for [`finish`].
pub(crate) fn mark(response: &mut Response, error: &Error) {
    if let Some(scopes) = crate::base::caller::required_scopes(error) {
        response.extensions_mut().insert(NeedsScopes(scopes));
    }
}

/// Adds the `insufficient_scope` challenge to a response a route refused; with no
/// resource server configured (the app authenticates by itself), without
/// `resource_metadata`.
pub(crate) fn finish(gate: Option<&Gate>, mut response: Response) -> Response {
    let Some(NeedsScopes(needed)) = response.extensions_mut().remove::<NeedsScopes>() else { return response };
    let value = match gate {
        Some(gate) => gate.scope_challenge(&needed),
        None => challenge(&[("error", "insufficient_scope".into()), ("scope", needed.join(" "))]),
    };
    response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    response
}

/// The bearer token of `Authorization`: `Ok(None)` when there is none (or another
/// scheme), `Err` when it is malformed. Tokens in the query string are never read.
fn bearer(headers: &HeaderMap) -> Result<Option<&str>, ()> {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let value = value.to_str().map_err(|_| ())?;
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(None);
    }
    let token = token.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(());
    }
    Ok(Some(token))
}

/// `Bearer k="v", …`, each value a quoted-string holding only characters RFC 6750
/// allows there, so nothing a verifier says can break the header.
fn challenge(params: &[(&str, String)]) -> HeaderValue {
    let quoted = params.iter().map(|(name, value)| {
        let value: String = value.chars().filter(|c| matches!(c, ' '..='~') && !matches!(c, '"' | '\\')).collect();
        format!("{name}=\"{value}\"")
    });
    let text = format!("Bearer {}", quoted.collect::<Vec<_>>().join(", "));
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// An id-less JSON-RPC error as the body, as for the transport's other refusals.
fn body(status: StatusCode, error: &Error) -> Response {
    let headers = [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    (status, headers, error.to_message(None).into_json()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn reads_bearer_tokens_only_from_the_header() {
        assert_eq!(bearer(&HeaderMap::new()), Ok(None));
        assert_eq!(bearer(&auth("Bearer abc.def")), Ok(Some("abc.def")));
        assert_eq!(bearer(&auth("bearer  abc")), Ok(Some("abc")));
        assert_eq!(bearer(&auth("Basic dXNlcg==")), Ok(None));
        assert_eq!(bearer(&auth("Bearer")), Err(()));
        assert_eq!(bearer(&auth("Bearer a b")), Err(()));
    }

    /// Refuses `down`, accepts anything else as `alice`.
    struct Flaky;

    impl TokenVerifier for Flaky {
        fn verify<'a>(
            &'a self,
            token: &'a str,
        ) -> super::super::BoxFuture<'a, Result<super::super::VerifiedToken, TokenError>> {
            let outcome = match token {
                "down" => Err(TokenError::Unavailable("introspection endpoint unreachable".into())),
                _ => Ok(super::super::VerifiedToken::new(crate::base::caller::Caller::new("alice"))),
            };
            Box::pin(std::future::ready(outcome))
        }
    }

    fn request(token: &str) -> Request {
        let mut request = Request::new(axum::body::Body::empty());
        request.headers_mut().insert(header::AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {token}")).unwrap());
        request
    }

    #[tokio::test]
    async fn an_unavailable_verifier_is_503_and_the_token_reaches_handlers_only_on_request() {
        let config = ResourceServer::new("https://h/mcp", ["https://as"]).verifier(Flaky);
        let refused = Gate::new(&config).unwrap().admit(&mut request("down")).await.expect_err("refused");
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(refused.headers().get(header::WWW_AUTHENTICATE).is_none(), "not the client's token's fault");

        let mut admitted = request("t0k3n");
        Gate::new(&config).unwrap().admit(&mut admitted).await.unwrap();
        assert_eq!(
            admitted.extensions().get::<crate::base::caller::Caller>().map(crate::base::caller::Caller::id),
            Some("alice")
        );
        assert!(admitted.extensions().get::<AccessToken>().is_none());
        let mut passed = request("t0k3n");
        Gate::new(&config.pass_token_to_handlers(true)).unwrap().admit(&mut passed).await.unwrap();
        assert_eq!(passed.extensions().get::<AccessToken>().map(AccessToken::secret), Some("t0k3n"));
    }

    #[test]
    fn challenges_quote_values_and_drop_what_would_break_them() {
        let value = challenge(&[("error", "invalid_token".into()), ("error_description", "bad \"sig\"\\\n".into())]);
        assert_eq!(value.to_str().unwrap(), r#"Bearer error="invalid_token", error_description="bad sig""#);
    }
}
