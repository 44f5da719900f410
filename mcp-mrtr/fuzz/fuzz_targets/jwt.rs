#![no_main]
//! Bearer tokens (the `jwt` feature). As given: the `Authorization` header of a request
//! to the fixture behind the OAuth gate, and a token for `JwtVerifier`. After `claims:`,
//! a `typ` line and a claims object, signed with the trusted key, so the claim checks run
//! on what the fuzzer writes: the gate must admit exactly what the verifier accepts.

use std::future::Future as _;
use std::pin::pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use axum::http::StatusCode;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use libfuzzer_sys::fuzz_target;
use mcp_mrtr::auth::{JwtKeys, JwtVerifier, TokenError, TokenVerifier as _, VerifiedToken};
use mcp_mrtr_fuzz::{auth_router, post, send, ISSUER, RESOURCE, SECRET};

/// A `tools/list` with every MCP header, so a request the gate admits is answered.
const BODY: &[u8] = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"#,
    r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
)
.as_bytes();
const HEAD: &str = concat!(
    "Host: 127.0.0.1\nContent-Type: application/json\nAccept: application/json, text/event-stream\n",
    "MCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/list",
);

fn verifier() -> &'static JwtVerifier {
    static VERIFIER: OnceLock<JwtVerifier> = OnceLock::new();
    VERIFIER.get_or_init(|| JwtVerifier::new(JwtKeys::hs256(SECRET).expect("a long secret"), ISSUER, RESOURCE))
}

/// The verifier checks locally: its future is ready at once.
fn verify(token: &str) -> Result<VerifiedToken, TokenError> {
    match pin!(verifier().verify(token)).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(verified) => verified,
        Poll::Pending => panic!("JwtVerifier waited on something"),
    }
}

fn gate_status(authorization: &[u8]) -> StatusCode {
    let mut head = HEAD.as_bytes().to_vec();
    head.extend_from_slice(b"\nAuthorization: ");
    head.extend_from_slice(authorization);
    send(auth_router(), post(&head, BODY)).status()
}

/// Dates written `"now"`, `"now+600"` or `"now-60"` become the unix time they name: a seed
/// stays a token that verifies, whenever it runs.
fn with_dates(claims: &mut serde_json::Map<String, serde_json::Value>) {
    let now = jsonwebtoken::get_current_timestamp();
    for name in ["exp", "nbf", "iat"] {
        let Some(text) = claims.get(name).and_then(|v| v.as_str()).and_then(|t| t.strip_prefix("now")) else {
            continue;
        };
        let date = match (text.strip_prefix('+'), text.strip_prefix('-')) {
            (Some(after), _) => after.parse().ok().and_then(|s| now.checked_add(s)),
            (_, Some(before)) => before.parse().ok().and_then(|s| now.checked_sub(s)),
            _ => text.is_empty().then_some(now),
        };
        if let Some(date) = date {
            claims.insert(name.to_owned(), date.into());
        }
    }
}

fuzz_target!(|bytes: &[u8]| {
    if let Some(signed) = bytes.strip_prefix(b"claims:") {
        let (typ, claims) = signed.split_at(signed.iter().position(|b| *b == b'\n').unwrap_or(signed.len()));
        let Ok(mut claims) = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(claims) else {
            return;
        };
        with_dates(&mut claims);
        let mut header = Header::new(Algorithm::HS256);
        header.typ = (!typ.is_empty()).then(|| String::from_utf8_lossy(typ).into_owned());
        let key = EncodingKey::from_secret(SECRET).expect("an HMAC key");
        let token = jsonwebtoken::encode(&header, &claims, &key).expect("claims sign");
        let verified = verify(&token);
        if let Ok(verified) = &verified {
            assert_eq!(Some(verified.caller.id()), claims.get("sub").and_then(|s| s.as_str()), "the caller is `sub`");
            assert_eq!(verified.claims.as_object(), &claims, "the claims are the token's");
        }
        let status = gate_status(format!("Bearer {token}").as_bytes());
        assert_eq!(
            status == StatusCode::UNAUTHORIZED,
            verified.is_err(),
            "the gate disagrees ({status}): {verified:?}"
        );
        return;
    }
    let _ = verify(&String::from_utf8_lossy(bytes));
    let status = gate_status(bytes);
    assert_ne!(status, StatusCode::OK, "a token the fuzzer wrote was admitted: {:?}", String::from_utf8_lossy(bytes));
});
