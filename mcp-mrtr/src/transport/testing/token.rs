//! Access tokens for tests of a server behind [`JwtVerifier`](crate::auth::JwtVerifier):
//! HS256 JWTs a verifier built on the same secret accepts.

use std::time::Duration;

use serde_json::{json, Value};

/// An HS256 access token to mint, for tests: the subject, scopes, issuer, audience and
/// lifetime a real authorization server would put in one (RFC 9068 claims, typed
/// `at+jwt`), signed with a shared secret. Pair it with
/// `JwtVerifier::new(JwtKeys::hs256(secret)?, issuer, audience)`.
///
/// ```
/// use mcp_mrtr::auth::{JwtKeys, JwtVerifier};
/// use mcp_mrtr::testing::TestToken;
///
/// const SECRET: &[u8] = b"a test secret of at least 32 bytes!!";
/// let token = TestToken::hs256(SECRET, "https://auth.example", "https://mcp.example/mcp")
///     .subject("alice")
///     .scopes(["notes:read", "notes:write"])
///     .mint();
/// let verifier = JwtVerifier::new(JwtKeys::hs256(SECRET).unwrap(), "https://auth.example", "https://mcp.example/mcp");
/// # let _ = (token, verifier);
/// ```
#[derive(Clone, Debug)]
pub struct TestToken {
    secret: Vec<u8>,
    claims: serde_json::Map<String, Value>,
    lifetime: Duration,
}

impl TestToken {
    /// A token for `audience` (the resource's canonical URI) from `issuer`, signed with
    /// `secret`; subject `test-user`, no scopes, valid for five minutes.
    pub fn hs256(secret: impl AsRef<[u8]>, issuer: &str, audience: &str) -> Self {
        let claims = json!({ "iss": issuer, "aud": audience, "sub": "test-user", "client_id": "mcp-mrtr-tests" });
        let Value::Object(claims) = claims else { unreachable!("a JSON object literal") };
        Self { secret: secret.as_ref().to_vec(), claims, lifetime: Duration::from_secs(300) }
    }

    /// Who the token is for (`sub`): the [`Caller`](crate::Caller)'s id.
    pub fn subject(self, subject: &str) -> Self {
        self.claim("sub", subject)
    }

    /// The scopes it grants (`scope`, space-separated).
    pub fn scopes<S: AsRef<str>>(self, scopes: impl IntoIterator<Item = S>) -> Self {
        let scopes: Vec<String> = scopes.into_iter().map(|s| s.as_ref().to_owned()).collect();
        self.claim("scope", scopes.join(" "))
    }

    /// How long it is valid from now (default five minutes). `Duration::ZERO` mints one
    /// that has expired already, to test refusals.
    pub fn lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// Any other claim.
    pub fn claim(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.claims.insert(name.to_owned(), value.into());
        self
    }

    /// The signed token, for an `Authorization: Bearer …` header.
    ///
    /// # Panics
    ///
    /// If the secret is not a usable HS256 key (it is empty).
    pub fn mint(&self) -> String {
        let now = jsonwebtoken::get_current_timestamp();
        let mut claims = self.claims.clone();
        let expired = self.lifetime.is_zero();
        // An expired token is one whose `exp` passed beyond any verifier's leeway.
        let (iat, exp) = if expired { (now - 3600, now - 1800) } else { (now, now + self.lifetime.as_secs().max(1)) };
        claims.insert("iat".into(), iat.into());
        claims.insert("exp".into(), exp.into());
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.typ = Some("at+jwt".into());
        let key = jsonwebtoken::EncodingKey::from_secret(&self.secret).expect("an HS256 key from the secret");
        jsonwebtoken::encode(&header, &claims, &key).expect("HS256 signing does not fail")
    }
}
