//! What makes a signed, unexpired JWT for this resource an access token we accept,
//! beyond what jsonwebtoken checks: its declared type (RFC 9068 §4), an `iss` that is a
//! single string, and a bounded lifetime.

use std::time::Duration;

use serde_json::Value;

use crate::ext::auth::TokenError;
use crate::protocol::JsonObject;

/// The longest lifetime accepted by default: 24 hours.
///
/// Access tokens usually live minutes to an hour, and the common identity providers'
/// defaults stay within a day. A token valid for years is a mistake or a token meant
/// for something else, and a leaked one would be usable for just as long.
pub(super) const DEFAULT_MAX_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// The checks [`JwtVerifier`](super::JwtVerifier) applies after the signature and the
/// standard claims pass.
#[derive(Clone, Copy, Debug)]
pub(super) struct AccessTokenRules {
    /// Only `at+jwt` passes, not `JWT` or a missing `typ`.
    pub(super) require_at_jwt: bool,
    /// The longest `exp - iat` (or `exp - now` without `iat`).
    pub(super) max_lifetime: Duration,
    /// Clock skew tolerated on `iat`, as on `exp` and `nbf`.
    pub(super) leeway: Duration,
}

impl AccessTokenRules {
    /// Refuses a token whose `typ` says it is something other than an access token.
    ///
    /// RFC 9068 §4 wants `at+jwt`. Many issuers still mint `JWT` or no `typ` at all,
    /// so those pass unless [`require_at_jwt`](Self::require_at_jwt). Every other type
    /// is a token made for another purpose: a DPoP proof (`dpop+jwt`), an ID token, a
    /// logout or security event token. Such a token may carry the right issuer, audience
    /// and subject, but it is not an access token.
    pub(super) fn check_type(&self, typ: Option<&str>) -> Result<(), TokenError> {
        let accepted = match typ.map(media_type) {
            Some(typ) if typ == "at+jwt" => true,
            Some(typ) if typ == "jwt" => !self.require_at_jwt,
            Some(_) => false,
            None => !self.require_at_jwt,
        };
        if accepted {
            Ok(())
        } else {
            // The type is the client's text: it is not echoed back.
            Err(TokenError::invalid("the token is not typed as an access token (at+jwt)"))
        }
    }

    /// Refuses an `iss` other than one string, an `iat` in the future, and a lifetime
    /// past [`max_lifetime`](Self::max_lifetime). `now` is in unix seconds.
    pub(super) fn check_claims(&self, claims: &JsonObject, now: u64) -> Result<(), TokenError> {
        // jsonwebtoken also accepts an array whose members are all trusted issuers.
        if !claims.get("iss").is_some_and(Value::is_string) {
            return Err(TokenError::invalid("the token's `iss` is not a single issuer"));
        }
        let expires =
            numeric_date(claims, "exp")?.ok_or_else(|| TokenError::invalid("the token has no `exp` claim"))?;
        let issued = numeric_date(claims, "iat")?;
        if issued.is_some_and(|issued| issued > now.saturating_add(self.leeway.as_secs())) {
            return Err(TokenError::invalid("the token was issued in the future"));
        }
        // Without `iat`, what is left of its life must fit.
        let lifetime = expires.saturating_sub(issued.unwrap_or(now));
        if lifetime > self.max_lifetime.as_secs() {
            return Err(TokenError::invalid("the token is valid for longer than this resource accepts"));
        }
        Ok(())
    }
}

/// A `typ` compared as RFC 7515 §4.1.9 says: case-insensitively, with the
/// `application/` prefix optional.
fn media_type(typ: &str) -> String {
    let typ = typ.to_ascii_lowercase();
    match typ.strip_prefix("application/") {
        Some(rest) => rest.to_owned(),
        None => typ,
    }
}

/// A NumericDate claim (RFC 7519 §2) in whole seconds: `None` when absent, an error when
/// it is not a non-negative number.
fn numeric_date(claims: &JsonObject, name: &str) -> Result<Option<u64>, TokenError> {
    let Some(value) = claims.get(name) else { return Ok(None) };
    let seconds = value.as_u64().or_else(|| value.as_f64().filter(|s| s.is_finite() && *s >= 0.0).map(whole_seconds));
    seconds.map(Some).ok_or_else(|| TokenError::invalid(format!("the token's `{name}` is not a date")))
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a finite, non-negative float; past u64::MAX it saturates, which is what a date that far wants"
)]
fn whole_seconds(seconds: f64) -> u64 {
    seconds as u64
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn rules() -> AccessTokenRules {
        AccessTokenRules { require_at_jwt: false, max_lifetime: DEFAULT_MAX_LIFETIME, leeway: Duration::from_secs(30) }
    }

    fn claims(value: &Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn access_token_types_pass_and_every_other_type_is_refused() {
        let strict = AccessTokenRules { require_at_jwt: true, ..rules() };
        for typ in ["at+jwt", "AT+JWT", "application/at+jwt", "Application/At+JWT"] {
            assert!(rules().check_type(Some(typ)).is_ok(), "{typ}");
            assert!(strict.check_type(Some(typ)).is_ok(), "{typ}");
        }
        for typ in [Some("JWT"), Some("jwt"), Some("application/jwt"), None] {
            assert!(rules().check_type(typ).is_ok(), "{typ:?}");
            assert!(strict.check_type(typ).is_err(), "{typ:?}");
        }
        let others = ["dpop+jwt", "id_token+jwt", "logout+jwt", "secevent+jwt", "application/dpop+jwt", "JOSE", ""];
        for typ in others {
            assert!(rules().check_type(Some(typ)).is_err(), "{typ}");
        }
    }

    #[test]
    fn lifetimes_are_bounded_from_iat_or_from_now() {
        let day = DEFAULT_MAX_LIFETIME.as_secs();
        let ok = |value: Value| rules().check_claims(&claims(&value), NOW).is_ok();
        assert!(ok(json!({"iss": "i", "exp": NOW + 3600, "iat": NOW})));
        assert!(ok(json!({"iss": "i", "exp": NOW + day, "iat": NOW})));
        assert!(!ok(json!({"iss": "i", "exp": NOW + day + 1, "iat": NOW})));
        assert!(!ok(json!({"iss": "i", "exp": NOW + 30 * 365 * day})), "no iat: measured from now");
        assert!(ok(json!({"iss": "i", "exp": NOW + 60})));
        assert!(ok(json!({"iss": "i", "exp": NOW + 60, "iat": NOW + 30})), "within the leeway");
        assert!(!ok(json!({"iss": "i", "exp": NOW + 600, "iat": NOW + 31})), "issued in the future");
        assert!(ok(json!({"iss": "i", "exp": 1_800_003_600.5, "iat": 1_800_000_000.25})), "fractional dates");
        assert!(!ok(json!({"iss": "i", "exp": NOW + 60, "iat": "yesterday"})));
        let longer = AccessTokenRules { max_lifetime: Duration::from_secs(2 * day), ..rules() };
        assert!(longer.check_claims(&claims(&json!({"iss": "i", "exp": NOW + 2 * day, "iat": NOW})), NOW).is_ok());
    }

    #[test]
    fn an_issuer_must_be_one_string() {
        for iss in [json!(["i"]), json!(["i", "j"]), json!(1), json!(null)] {
            assert!(rules().check_claims(&claims(&json!({"iss": iss, "exp": NOW + 60})), NOW).is_err(), "{iss}");
        }
    }
}
