//! [`JwtVerifier`]: checks JWT access tokens (RFC 9068) locally, with keys given or
//! fetched from the authorization server (`jwks`): signature, issuer, audience (this
//! resource, RFC 8707), expiry, and (in `access_token`) the token's type and lifetime.

mod access_token;
mod jwks;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use serde_json::Value;

use self::access_token::{AccessTokenRules, DEFAULT_MAX_LIFETIME};
use self::jwks::{FetchedKeys, KeepRules, Want};
use super::{Claims, TokenError, TokenVerifier, VerifiedToken};
use crate::base::caller::Caller;
use crate::base::error::Chained;
use crate::protocol::JsonObject;

/// Clock skew tolerated on `exp`, `nbf` and `iat`.
const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

/// Shorter HS256 secrets are brute-forceable (RFC 7518 §3.2 wants at least the hash size).
const MIN_SECRET_BYTES: usize = 32;

/// The keys a [`JwtVerifier`] trusts.
#[derive(Clone)]
pub struct JwtKeys {
    keys: Vec<TrustedKey>,
}

#[derive(Clone)]
struct TrustedKey {
    /// The JWKS `kid`; a token naming another id is not checked against this key.
    kid: Option<String>,
    key: DecodingKey,
    /// The algorithms this key may verify: a token may not pick another (no `none`,
    /// no HMAC with a public key).
    algorithms: Vec<Algorithm>,
}

impl JwtKeys {
    /// A shared HS256 secret of at least 32 bytes.
    pub fn hs256(secret: impl AsRef<[u8]>) -> Result<Self, JwtError> {
        let secret = secret.as_ref();
        if secret.len() < MIN_SECRET_BYTES {
            return Err(JwtError::new(format!("an HS256 secret needs at least {MIN_SECRET_BYTES} bytes")));
        }
        let key = DecodingKey::from_secret(secret).map_err(JwtError::from)?;
        Ok(Self::one(key, vec![Algorithm::HS256]))
    }

    /// An RSA public key in PEM (`RS256`/`384`/`512`, `PS256`/`384`/`512`).
    pub fn rsa_pem(pem: impl AsRef<[u8]>) -> Result<Self, JwtError> {
        let key = DecodingKey::from_rsa_pem(pem.as_ref()).map_err(JwtError::from)?;
        Ok(Self::one(key, AlgorithmFamily::Rsa.algorithms().to_vec()))
    }

    /// An EC public key (P-256 or P-384) in PEM (`ES256`, `ES384`).
    pub fn ec_pem(pem: impl AsRef<[u8]>) -> Result<Self, JwtError> {
        let key = DecodingKey::from_ec_pem(pem.as_ref()).map_err(JwtError::from)?;
        Ok(Self::one(key, AlgorithmFamily::Ec.algorithms().to_vec()))
    }

    /// The keys of a JWKS document (`{"keys": [...]}`), as an authorization server
    /// publishes at its `jwks_uri`; a token's `kid` picks the key. To have them fetched,
    /// and fetched again as the server rotates them, use [`JwtVerifier::from_issuer`].
    pub fn jwks(json: &str) -> Result<Self, JwtError> {
        let set: JwkSet = serde_json::from_str(json)
            .map_err(|e| JwtError(Chained::caused_by(format!("not a JWKS document: {e}"), e)))?;
        let keys = set
            .keys
            .iter()
            .map(|jwk| {
                let key = DecodingKey::from_jwk(jwk).map_err(JwtError::from)?;
                let algorithms = match jwk.common.key_algorithm {
                    Some(alg) => vec![Algorithm::try_from(alg).map_err(JwtError::from)?],
                    None => key.family().algorithms().to_vec(),
                };
                Ok(TrustedKey { kid: jwk.common.key_id.clone(), key, algorithms })
            })
            .collect::<Result<Vec<_>, JwtError>>()?;
        if keys.is_empty() {
            return Err(JwtError::new("the JWKS document holds no keys"));
        }
        Ok(Self { keys })
    }

    fn one(key: DecodingKey, algorithms: Vec<Algorithm>) -> Self {
        Self { keys: vec![TrustedKey { kid: None, key, algorithms }] }
    }

    /// The key for a token's `kid`: the one with that id, or the only key there is.
    fn pick(&self, kid: Option<&str>) -> Option<&TrustedKey> {
        match (kid, self.keys.as_slice()) {
            (Some(kid), keys) if keys.iter().any(|k| k.kid.is_some()) => {
                keys.iter().find(|k| k.kid.as_deref() == Some(kid))
            }
            (_, [only]) => Some(only),
            _ => None,
        }
    }
}

impl fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<_> = self.keys.iter().map(|k| k.kid.as_deref().unwrap_or("-")).collect();
        f.debug_struct("JwtKeys").field("kids", &ids).finish_non_exhaustive()
    }
}

/// A key or JWKS document that could not be used. It keeps what caused it
/// ([`source`](std::error::Error::source)): the JWT library's or the JSON parser's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtError(Chained);

impl JwtError {
    fn new(message: impl Into<String>) -> Self {
        Self(Chained::new(message))
    }
}

impl From<jsonwebtoken::errors::Error> for JwtError {
    fn from(error: jsonwebtoken::errors::Error) -> Self {
        Self(Chained::caused_by(format!("unusable key: {error}"), error))
    }
}

impl fmt::Display for JwtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.message())
    }
}

impl std::error::Error for JwtError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.cause()
    }
}

/// Verifies JWT access tokens with configured keys.
///
/// A token is accepted when:
///
/// - its signature checks with a trusted key;
/// - its `typ` is `at+jwt` (RFC 9068 §4), `JWT` or absent (see
///   [`require_at_jwt`](Self::require_at_jwt)): a DPoP proof, an ID token or a logout
///   token is refused even when signed by the same issuer;
/// - `iss` is the issuer, as one string;
/// - `aud` names this resource;
/// - `exp` has not passed and `nbf`, if present, has (30 s of leeway by default);
/// - `iat`, if present, is not in the future, and the token is valid for at most
///   [`max_lifetime`](Self::max_lifetime) (24 h by default) from `iat`, or from now
///   without one.
///
/// `sub` becomes the [`Caller`]'s id, and `scope` (space-separated) or `scp` (an array)
/// its scopes.
///
/// One verifier trusts one issuer, so the caller's id is the bare `sub`: subjects are
/// unique within their issuer (RFC 7519 §4.1.2), and applications key their data by
/// [`Caller::id`]. A [`TokenVerifier`] that combines verifiers for several issuers must
/// make the id unique across them itself (say, `iss` and `sub` together): two issuers
/// may both have a user called `alice`.
///
/// ```
/// use mcp_mrtr::auth::{JwtKeys, JwtVerifier, ResourceServer};
///
/// let resource = "https://notes.example.com/mcp";
/// let keys = JwtKeys::hs256("a development secret of 32+ bytes!").unwrap();
/// let server = ResourceServer::new(resource, ["https://auth.example.com"])
///     .verifier(JwtVerifier::new(keys, "https://auth.example.com", resource));
/// # let _ = server;
/// ```
#[derive(Clone, Debug)]
pub struct JwtVerifier {
    keys: KeySource,
    issuer: String,
    audience: String,
    rules: AccessTokenRules,
}

/// Where a verifier's keys come from.
#[derive(Clone, Debug)]
enum KeySource {
    Given(JwtKeys),
    Fetched(Arc<FetchedKeys>, KeepRules),
}

impl JwtVerifier {
    /// Accepts tokens signed with `keys`, issued by `issuer` for `audience` (the
    /// resource's canonical URI).
    pub fn new(keys: JwtKeys, issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        let rules =
            AccessTokenRules { require_at_jwt: false, max_lifetime: DEFAULT_MAX_LIFETIME, leeway: DEFAULT_LEEWAY };
        Self { keys: KeySource::Given(keys), issuer: issuer.into(), audience: audience.into(), rules }
    }

    /// Accepts tokens issued by `issuer` for `audience`, signed with the keys `issuer`
    /// publishes: found through its metadata (RFC 8414's
    /// `/.well-known/oauth-authorization-server`, else OpenID Connect's
    /// `/.well-known/openid-configuration`, which must name `issuer`), fetched from its
    /// `jwks_uri` at the first token, and kept as long as the response's `Cache-Control:
    /// max-age` says (five minutes if it does not, a day at most).
    ///
    /// Rotation needs no restart: a token naming a key not held has the keys fetched again
    /// (at most every 10 s: [`refetch_keys_at_most_every`](Self::refetch_keys_at_most_every)).
    /// While the server cannot be reached, the keys held keep verifying for an hour past
    /// their freshness ([`stale_keys_for`](Self::stale_keys_for)); past that, or before any
    /// key was ever fetched, a request is answered `503`, so the client retries rather than
    /// asks its user to sign in again. Keys are fetched over HTTPS (the system's roots),
    /// or plain HTTP to a loopback host, without redirects, within 5 s and 256 KiB.
    pub fn from_issuer(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        let issuer = issuer.into();
        let keys = KeySource::Fetched(Arc::new(FetchedKeys::new(issuer.clone())), KeepRules::default());
        Self { keys, ..Self::new(JwtKeys { keys: Vec::new() }, issuer, audience) }
    }

    /// How long fetched keys keep verifying past their freshness while the authorization
    /// server cannot be reached (default one hour). Only for [`from_issuer`](Self::from_issuer).
    pub fn stale_keys_for(mut self, stale: Duration) -> Self {
        if let KeySource::Fetched(_, rules) = &mut self.keys {
            rules.stale_for = stale;
        }
        self
    }

    /// The least time between two fetches of the keys (default 10 s): a flood of tokens
    /// naming unknown keys costs the authorization server one request per this. Only for
    /// [`from_issuer`](Self::from_issuer).
    pub fn refetch_keys_at_most_every(mut self, every: Duration) -> Self {
        if let KeySource::Fetched(_, rules) = &mut self.keys {
            rules.refetch_every = every;
        }
        self
    }

    /// Clock skew tolerated on `exp`, `nbf` and `iat` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.rules.leeway = leeway;
        self
    }

    /// Accepts only tokens typed `at+jwt` (or `application/at+jwt`), as RFC 9068 §4
    /// requires. By default a `typ` of `JWT`, or none, passes too, because many issuers
    /// mint those; require `at+jwt` when yours types its access tokens.
    pub fn require_at_jwt(mut self) -> Self {
        self.rules.require_at_jwt = true;
        self
    }

    /// The longest a token may be valid: `exp - iat`, or `exp - now` for a token without
    /// `iat` (default 24 hours). A longer-lived token is refused, so a leaked or
    /// mis-issued one is not usable for months or years. Raise it if your issuer's access
    /// tokens legitimately live longer.
    pub fn max_lifetime(mut self, max: Duration) -> Self {
        self.rules.max_lifetime = max;
        self
    }

    /// Checks `token` against keys fetched from the issuer: fetched (again) when stale, or
    /// when they do not hold the token's key.
    async fn verify_fetching(
        &self,
        token: &str,
        fetched: &FetchedKeys,
        rules: KeepRules,
    ) -> Result<VerifiedToken, TokenError> {
        // The header first: a token refused anyway costs the authorization server nothing.
        let header = self.header(token)?;
        let mut keys = fetched.keys(Want::Fresh, rules).await?;
        if keys.pick(header.kid.as_deref()).is_none() {
            keys = fetched.keys(Want::Kid, rules).await?;
        }
        self.check_signed(token, &header, &keys)
    }

    /// Checks `token` against the keys given.
    fn check(&self, token: &str) -> Result<VerifiedToken, TokenError> {
        let KeySource::Given(keys) = &self.keys else {
            return Err(TokenError::Unavailable("the keys are fetched: verify the token".into()));
        };
        let header = self.header(token)?;
        self.check_signed(token, &header, keys)
    }

    /// The token's header, if it types an access token.
    fn header(&self, token: &str) -> Result<jsonwebtoken::Header, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::invalid("malformed token"))?;
        self.rules.check_type(header.typ.as_deref())?;
        Ok(header)
    }

    /// Checks `token`, whose header is `header`, against `keys`.
    fn check_signed(
        &self,
        token: &str,
        header: &jsonwebtoken::Header,
        keys: &JwtKeys,
    ) -> Result<VerifiedToken, TokenError> {
        let trusted = keys
            .pick(header.kid.as_deref())
            .ok_or_else(|| TokenError::invalid("the token is signed with an unknown key"))?;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.algorithms.clone_from(&trusted.algorithms);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.rules.leeway.as_secs();
        let data = jsonwebtoken::decode::<JsonObject>(token, &trusted.key, &validation).map_err(|e| refusal(&e))?;
        let claims = data.claims;
        self.rules.check_claims(&claims, jsonwebtoken::get_current_timestamp())?;
        let subject = claims.get("sub").and_then(Value::as_str).filter(|s| !s.is_empty());
        let subject = subject.ok_or_else(|| TokenError::invalid("the token names no subject"))?;
        let caller = Caller::new(subject).with_scopes(scopes(&claims));
        Ok(VerifiedToken { caller, claims: Claims::new(claims) })
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, TokenError>> {
        match &self.keys {
            KeySource::Given(_) => Box::pin(std::future::ready(self.check(token))),
            KeySource::Fetched(fetched, rules) => Box::pin(self.verify_fetching(token, fetched, *rules)),
        }
    }
}

/// The scopes a token grants: `scope` (RFC 9068, space-separated) or `scp` (an array,
/// as some identity providers send).
fn scopes(claims: &JsonObject) -> Vec<String> {
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => scope.split_whitespace().map(str::to_owned).collect(),
        (_, Some(Value::Array(scp))) => scp.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        (_, Some(Value::String(scp))) => scp.split_whitespace().map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// What the client is told about a refused token: enough to act on, nothing secret.
fn refusal(error: &jsonwebtoken::errors::Error) -> TokenError {
    TokenError::invalid(match error.kind() {
        ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet".to_owned(),
        ErrorKind::InvalidAudience => "the token was not issued for this resource".to_owned(),
        ErrorKind::InvalidIssuer => "the token's issuer is not trusted here".to_owned(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
        ErrorKind::InvalidAlgorithm => "the token's algorithm is not accepted for its key".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        _ => "malformed token".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::{encode, EncodingKey, Header};
    use serde_json::json;

    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";
    const RESOURCE: &str = "https://notes.example.com/mcp";
    const ISSUER: &str = "https://auth.example.com";

    fn verifier() -> JwtVerifier {
        JwtVerifier::new(JwtKeys::hs256(SECRET).unwrap(), ISSUER, RESOURCE)
    }

    #[test]
    fn a_key_error_keeps_its_cause() {
        use std::error::Error as _;
        let bad = JwtKeys::jwks("{ not json").unwrap_err();
        assert!(bad.to_string().starts_with("not a JWKS document"), "{bad}");
        assert!(bad.source().is_some_and(<dyn std::error::Error>::is::<serde_json::Error>), "{bad:?}");
        let short = JwtKeys::hs256("short").unwrap_err();
        assert!(short.source().is_none(), "our own check has no cause");
        let pem = JwtKeys::rsa_pem("not a pem").unwrap_err();
        assert!(pem.source().is_some_and(<dyn std::error::Error>::is::<jsonwebtoken::errors::Error>), "{pem:?}");
    }

    fn now() -> i64 {
        i64::try_from(jsonwebtoken::get_current_timestamp()).unwrap()
    }

    fn token(claims: &Value) -> String {
        encode(&Header::default(), claims, &EncodingKey::from_secret(SECRET.as_bytes()).unwrap()).unwrap()
    }

    fn refused(claims: &Value) -> String {
        match verifier().check(&token(claims)) {
            Err(TokenError::Invalid(why)) => why,
            other => panic!("accepted: {other:?}"),
        }
    }

    #[test]
    fn a_good_token_names_the_caller_and_scopes() {
        let claims = json!({"sub": "alice", "iss": ISSUER, "aud": RESOURCE, "exp": now() + 60, "scope": "a b"});
        let verified = verifier().check(&token(&claims)).unwrap();
        assert_eq!(verified.caller, Caller::new("alice").with_scopes(["a", "b"]));
        assert_eq!(verified.claims.get("sub"), Some(&json!("alice")));
        // An audience list naming this resource among others is fine (RFC 7519 §4.1.3).
        let listed = json!({"sub": "a", "iss": ISSUER, "aud": ["other", RESOURCE], "exp": now() + 60, "scp": ["x"]});
        assert!(verifier().check(&token(&listed)).unwrap().caller.has_scope("x"));
    }

    #[test]
    fn wrong_issuer_audience_expiry_or_subject_are_refused() {
        let base = json!({"sub": "alice", "iss": ISSUER, "aud": RESOURCE, "exp": now() + 60});
        let with = |key: &str, value: Value| {
            let mut claims = base.clone();
            claims[key] = value;
            claims
        };
        assert!(refused(&with("aud", json!("https://other.example.com/mcp"))).contains("not issued for this"));
        assert!(refused(&with("iss", json!("https://evil.example.com"))).contains("issuer"));
        assert!(refused(&with("exp", json!(now() - 3600))).contains("expired"));
        assert!(refused(&with("sub", json!(""))).contains("subject"));
        let mut no_audience = base.clone();
        no_audience.as_object_mut().unwrap().remove("aud");
        assert!(refused(&no_audience).contains("`aud`"));
        // Within the leeway, a just-expired token still passes.
        assert!(verifier().check(&token(&with("exp", json!(now() - 5)))).is_ok());
    }

    #[test]
    fn forged_or_garbled_tokens_are_refused() {
        let claims = json!({"sub": "alice", "iss": ISSUER, "aud": RESOURCE, "exp": now() + 60});
        let forged = encode(&Header::default(), &claims, &EncodingKey::from_secret(&[7; 32]).unwrap()).unwrap();
        assert!(matches!(verifier().check(&forged), Err(TokenError::Invalid(_))));
        for garbage in ["", "abc", "a.b.c", "eyJhbGciOiJub25lIn0.e30."] {
            assert!(matches!(verifier().check(garbage), Err(TokenError::Invalid(_))), "{garbage}");
        }
        assert!(JwtKeys::hs256("short").is_err());
        assert!(JwtKeys::jwks("{\"keys\": []}").is_err());
        assert!(JwtKeys::rsa_pem("not a pem").is_err());
    }

    fn typed(typ: Option<&str>) -> String {
        let claims = json!({"sub": "alice", "iss": ISSUER, "aud": RESOURCE, "exp": now() + 60});
        let header = Header { typ: typ.map(str::to_owned), ..Header::default() };
        encode(&header, &claims, &EncodingKey::from_secret(SECRET.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn tokens_typed_as_something_other_than_an_access_token_are_refused() {
        let strict = verifier().require_at_jwt();
        for typ in ["at+jwt", "application/at+jwt"] {
            assert!(verifier().check(&typed(Some(typ))).is_ok(), "{typ}");
            assert!(strict.check(&typed(Some(typ))).is_ok(), "{typ}");
        }
        for typ in [Some("JWT"), None] {
            assert!(verifier().check(&typed(typ)).is_ok(), "{typ:?}: common issuers mint these");
            assert!(strict.check(&typed(typ)).is_err(), "{typ:?} when at+jwt is required");
        }
        for typ in ["dpop+jwt", "id_token+jwt", "logout+jwt", "secevent+jwt"] {
            let refused = verifier().check(&typed(Some(typ)));
            assert!(matches!(refused, Err(TokenError::Invalid(ref why)) if why.contains("access token")), "{typ}");
        }
    }

    #[test]
    fn issuer_lists_long_lives_and_future_issue_times_are_refused() {
        let year = 365 * 24 * 3600;
        let base = json!({"sub": "alice", "iss": ISSUER, "aud": RESOURCE, "exp": now() + 60, "iat": now()});
        let with = |key: &str, value: Value| {
            let mut claims = base.clone();
            claims[key] = value;
            claims
        };
        assert!(verifier().check(&token(&base)).is_ok());
        assert!(refused(&with("iss", json!([ISSUER]))).contains("`iss`"));
        assert!(refused(&with("exp", json!(now() + 30 * year))).contains("longer"));
        let mut no_iat = with("exp", json!(now() + 30 * year));
        no_iat.as_object_mut().unwrap().remove("iat");
        assert!(refused(&no_iat).contains("longer"));
        assert!(refused(&with("iat", json!(now() + 3600))).contains("future"));
        // A verifier can accept longer lives.
        let week = with("exp", json!(now() + 7 * 24 * 3600));
        assert!(verifier().max_lifetime(Duration::from_secs(8 * 24 * 3600)).check(&token(&week)).is_ok());
    }

    // Key pairs generated for these tests only (openssl), never used anywhere else.
    const EC_PRIVATE: &str = include_str!("testdata/ec-private.pem");
    const EC_PUBLIC: &str = include_str!("testdata/ec-public.pem");
    const RSA_PRIVATE: &str = include_str!("testdata/rsa-private.pem");
    const RSA_PUBLIC: &str = include_str!("testdata/rsa-public.pem");

    fn signed(alg: Algorithm, kid: Option<&str>, key: &EncodingKey) -> String {
        let claims = json!({"sub": "alice", "iss": ISSUER, "aud": RESOURCE, "exp": now() + 60});
        let header = Header { kid: kid.map(str::to_owned), ..Header::new(alg) };
        encode(&header, &claims, key).unwrap()
    }

    #[test]
    fn public_keys_in_pem_verify_their_signatures_only() {
        let rsa = EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap();
        let ec = EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap();
        let rsa_verifier = JwtVerifier::new(JwtKeys::rsa_pem(RSA_PUBLIC).unwrap(), ISSUER, RESOURCE);
        let ec_verifier = JwtVerifier::new(JwtKeys::ec_pem(EC_PUBLIC).unwrap(), ISSUER, RESOURCE);
        assert!(rsa_verifier.check(&signed(Algorithm::RS256, None, &rsa)).is_ok());
        assert!(rsa_verifier.check(&signed(Algorithm::PS384, None, &rsa)).is_ok());
        assert!(ec_verifier.check(&signed(Algorithm::ES256, None, &ec)).is_ok());
        assert!(ec_verifier.check(&signed(Algorithm::RS256, None, &rsa)).is_err());
        // Algorithm confusion: an HMAC token keyed with the public key's text is refused.
        let confused = EncodingKey::from_secret(RSA_PUBLIC.as_bytes()).unwrap();
        assert!(rsa_verifier.check(&signed(Algorithm::HS256, None, &confused)).is_err());
    }

    /// The library also refuses the confusion above, so that assertion alone cannot fail
    /// because of our code: this one checks our own restriction, the algorithms each key
    /// lets a token pick (audit 2026-12-01, test quality).
    #[test]
    fn each_key_lets_a_token_pick_only_algorithms_of_its_own_kind() {
        let family =
            |keys: &JwtKeys| keys.keys.iter().flat_map(|key| key.algorithms.iter().copied()).collect::<Vec<_>>();
        let rsa = family(&JwtKeys::rsa_pem(RSA_PUBLIC).unwrap());
        assert!(!rsa.is_empty() && rsa.iter().all(|alg| AlgorithmFamily::Rsa.algorithms().contains(alg)), "{rsa:?}");
        let ec = family(&JwtKeys::ec_pem(EC_PUBLIC).unwrap());
        assert!(!ec.is_empty() && ec.iter().all(|alg| AlgorithmFamily::Ec.algorithms().contains(alg)), "{ec:?}");
        assert_eq!(family(&JwtKeys::hs256(SECRET).unwrap()), [Algorithm::HS256]);
    }

    #[test]
    fn a_jwks_document_picks_the_key_by_kid() {
        let rsa = EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap();
        let ec = EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap();
        let jwk = |key: &EncodingKey, alg, kid: &str| {
            let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(key, alg).unwrap();
            jwk.common.key_id = Some(kid.to_owned());
            jwk
        };
        let set = json!({"keys": [jwk(&rsa, Algorithm::RS256, "r1"), jwk(&ec, Algorithm::ES256, "e1")]});
        let verifier = JwtVerifier::new(JwtKeys::jwks(&set.to_string()).unwrap(), ISSUER, RESOURCE);
        assert!(verifier.check(&signed(Algorithm::RS256, Some("r1"), &rsa)).is_ok());
        assert!(verifier.check(&signed(Algorithm::ES256, Some("e1"), &ec)).is_ok());
        for (alg, kid, key) in [
            (Algorithm::ES256, Some("r1"), &ec),
            (Algorithm::RS256, Some("nope"), &rsa),
            (Algorithm::RS256, None, &rsa),
            // The JWK says RS256: another algorithm of the family is refused.
            (Algorithm::RS512, Some("r1"), &rsa),
        ] {
            assert!(verifier.check(&signed(alg, kid, key)).is_err(), "{alg:?} {kid:?}");
        }
        let single = json!({"keys": [jwk(&ec, Algorithm::ES256, "only")]});
        let single = JwtVerifier::new(JwtKeys::jwks(&single.to_string()).unwrap(), ISSUER, RESOURCE);
        assert!(single.check(&signed(Algorithm::ES256, None, &ec)).is_ok());
    }
}
