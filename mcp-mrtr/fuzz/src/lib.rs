//! What the fuzz targets that go through HTTP share: the fixture served as an axum router
//! (no socket: each request is a `oneshot` call), and requests written as the fuzzer's
//! bytes, a header a line, an empty line, then the body.

use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, Response};
use axum::Router;
use tower::ServiceExt as _;

/// The audience the JWT target's tokens name, and the issuer it trusts.
pub const RESOURCE: &str = "http://127.0.0.1/mcp";
pub const ISSUER: &str = "https://issuer.example";
/// The HS256 secret the JWT target signs and verifies with.
pub const SECRET: &[u8] = b"a fuzzing secret of at least 32 bytes";

/// One runtime per process for the HTTP targets: a request's work ends with its response,
/// as with a connection.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime"))
}

/// The fixture with the default HTTP configuration (loopback hosts only, no auth).
pub fn open_router() -> &'static Router {
    static ROUTER: OnceLock<Router> = OnceLock::new();
    ROUTER.get_or_init(|| {
        runtime().block_on(async { mcp_mrtr::fuzzing::server(3).into_router(mcp_mrtr::http::HttpConfig::default()).expect("a router") })
    })
}

/// The fixture behind the OAuth gate: HS256 tokens signed with [`SECRET`].
pub fn auth_router() -> &'static Router {
    static ROUTER: OnceLock<Router> = OnceLock::new();
    ROUTER.get_or_init(|| {
        let keys = mcp_mrtr::auth::JwtKeys::hs256(SECRET).expect("the secret is long enough");
        let verifier = mcp_mrtr::auth::JwtVerifier::new(keys, ISSUER, RESOURCE);
        let auth = mcp_mrtr::auth::ResourceServer::new(RESOURCE, [ISSUER]).verifier(verifier);
        let config = mcp_mrtr::http::HttpConfig::default().auth(auth);
        runtime().block_on(async { mcp_mrtr::fuzzing::server(3).into_router(config).expect("a router") })
    })
}

/// A POST to `/mcp` from `head` (a `Name: value` header a line; lines that are no header
/// are skipped) and `body`.
pub fn post(head: &[u8], body: &[u8]) -> Request<Body> {
    let mut request =
        Request::builder().method(Method::POST).uri("/mcp").body(Body::from(body.to_vec())).expect("a request");
    for line in head.split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else { continue };
        let name = HeaderName::from_bytes(line[..colon].trim_ascii());
        let value = HeaderValue::from_bytes(line[colon + 1..].trim_ascii());
        if let (Ok(name), Ok(value)) = (name, value) {
            request.headers_mut().append(name, value);
        }
    }
    request
}

/// Splits the fuzzer's bytes at the first empty line: the head, then the body.
pub fn head_and_body(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&bytes[..at], &bytes[at + 2..]),
        None => (bytes, &[]),
    }
}

/// Sends `request` and checks the answer: a JSON answer is JSON, and a JSON-RPC error in
/// it has a numeric code. Streams are not read (a listen stream never ends by itself).
pub fn send(router: &Router, request: Request<Body>) -> Response<Body> {
    let response = runtime().block_on(router.clone().oneshot(request)).expect("a router never fails");
    let json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"application/json"));
    if !json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = runtime().block_on(axum::body::to_bytes(body, 16 << 20)).expect("a JSON answer is read whole");
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("a JSON answer that is not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
    if let Some(error) = value.get("error") {
        assert!(error["code"].is_i64(), "a JSON-RPC error without a code: {value}");
    }
    Response::from_parts(parts, Body::from(bytes))
}
