//! Keys fetched from the authorization server (issue 60): an authorization server of the
//! test's own on 127.0.0.1 publishes its metadata and JWKS; a resource server built with
//! `JwtVerifier::from_issuer` verifies its tokens over real HTTP. The server rotates its
//! key mid-run (no restart, no failed request), then goes away: the keys held keep working
//! until they are past use, and then requests get 503, not 401.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use base64::Engine as _;
use jsonwebtoken::{EncodingKey, Header};
use mcp_mrtr::auth::{JwtVerifier, ResourceServer};
use mcp_mrtr::http::HttpConfig;
use mcp_mrtr::prelude::*;
use mcp_mrtr_tests::client;
use mcp_mrtr_tests::harness::Rpc;
use serde_json::{json, Value};

/// Says who called.
#[tool]
async fn whoami(caller: Caller) -> Result<String, ToolError> {
    Ok(caller.id().to_owned())
}

/// A key the authorization server publishes: its `kid` and HS256 secret.
type Published = (String, Vec<u8>);

/// The authorization server: its current signing key (a `kid` and an HS256 secret), how
/// long its JWKS is fresh, and how often it was fetched.
#[derive(Clone)]
struct Authority {
    issuer: String,
    keys: Arc<Mutex<Vec<Published>>>,
    jwks_fetches: Arc<AtomicUsize>,
    up: Arc<std::sync::atomic::AtomicBool>,
}

impl Authority {
    fn sign(&self, kid: &str, sub: &str, audience: &str) -> String {
        let keys = self.keys.lock().unwrap();
        let (_, secret) = keys.iter().find(|(id, _)| id == kid).expect("a published key");
        let header = Header { kid: Some(kid.to_owned()), ..Header::default() };
        let now = i64::try_from(jsonwebtoken::get_current_timestamp()).unwrap();
        let claims = json!({ "sub": sub, "iss": self.issuer, "aud": audience, "exp": now + 300, "iat": now });
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(secret).unwrap()).unwrap()
    }

    fn rotate_to(&self, kid: &str, secret: &[u8]) {
        *self.keys.lock().unwrap() = vec![(kid.to_owned(), secret.to_vec())];
    }
}

async fn metadata(State(authority): State<Authority>) -> axum::response::Response {
    if !authority.up.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let jwks_uri = format!("{}/jwks", authority.issuer);
    let body = json!({ "issuer": authority.issuer, "jwks_uri": jwks_uri });
    ([(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

async fn jwks(State(authority): State<Authority>) -> axum::response::Response {
    if !authority.up.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    authority.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    let keys: Vec<Value> = authority
        .keys
        .lock()
        .unwrap()
        .iter()
        .map(|(kid, secret)| {
            let k = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
            json!({ "kty": "oct", "kid": kid, "alg": "HS256", "k": k })
        })
        .collect();
    // Fresh for two seconds: the test outlives it, and the keys must be kept all the same.
    let headers = [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "max-age=2")];
    (headers, json!({ "keys": keys }).to_string()).into_response()
}

async fn start_authority() -> Authority {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let authority = Authority {
        issuer,
        keys: Arc::new(Mutex::new(vec![("k1".to_owned(), b"the first key, 32 bytes or more..".to_vec())])),
        jwks_fetches: Arc::default(),
        up: Arc::new(std::sync::atomic::AtomicBool::new(true)),
    };
    let app = axum::Router::new()
        .route("/.well-known/oauth-authorization-server", axum::routing::get(metadata))
        .route("/jwks", axum::routing::get(jwks))
        .with_state(authority.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    authority
}

/// A resource server trusting `authority`'s keys, with keys kept `stale_for` past fresh.
async fn start_resource(authority: &Authority, stale_for: Duration) -> (SocketAddr, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let verifier = JwtVerifier::from_issuer(&authority.issuer, &resource)
        .stale_keys_for(stale_for)
        .refetch_keys_at_most_every(Duration::from_millis(100));
    let auth = ResourceServer::new(&resource, [authority.issuer.as_str()]).verifier(verifier);
    let app = Server::new("jwks-test", "1").tool(whoami).into_router(HttpConfig::default().auth(auth)).unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, resource)
}

/// The HTTP status of a `tools/call` of `whoami` with `token`, and the caller it names.
async fn call(addr: SocketAddr, token: &str) -> (u16, String) {
    let rpc = Rpc::call_tool("whoami", json!({}));
    let mut headers = rpc.headers();
    headers.push(("authorization".to_owned(), format!("Bearer {token}")));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let response = client::send_to(addr, "POST", "/mcp", &headers, &rpc.body()).await;
    let body: Value = serde_json::from_str(&response.body).unwrap_or(Value::Null);
    let text = body["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    (response.status, text)
}

#[tokio::test]
async fn a_rotated_key_is_fetched_without_a_restart_and_held_keys_outlive_an_outage() {
    let authority = start_authority().await;
    let (addr, resource) = start_resource(&authority, Duration::from_secs(4)).await;

    // The first token: the keys are found through the metadata and fetched.
    assert_eq!(call(addr, &authority.sign("k1", "alice", &resource)).await, (200, "alice".to_owned()));
    assert_eq!(authority.jwks_fetches.load(Ordering::SeqCst), 1);
    // Held while fresh: no fetch per request.
    assert_eq!(call(addr, &authority.sign("k1", "alice", &resource)).await.0, 200);
    assert_eq!(authority.jwks_fetches.load(Ordering::SeqCst), 1);

    // The server rotates; its next token names a key the resource server never saw.
    tokio::time::sleep(Duration::from_millis(150)).await;
    authority.rotate_to("k2", b"the second key, 32 bytes or more.");
    assert_eq!(call(addr, &authority.sign("k2", "bob", &resource)).await, (200, "bob".to_owned()));
    assert_eq!(authority.jwks_fetches.load(Ordering::SeqCst), 2, "fetched again for the new key");

    // The server goes away. Past the keys' two seconds of freshness, the held ones still verify.
    authority.up.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(call(addr, &authority.sign("k2", "bob", &resource)).await, (200, "bob".to_owned()));
    // Past their use (fresh 2 s + stale 4 s), a client is told to retry, not to sign in.
    tokio::time::sleep(Duration::from_millis(4200)).await;
    let (status, _) = call(addr, &authority.sign("k2", "bob", &resource)).await;
    assert_eq!(status, 503);

    // Back: the keys are fetched again and requests pass.
    authority.up.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(call(addr, &authority.sign("k2", "carol", &resource)).await, (200, "carol".to_owned()));
}

#[tokio::test]
async fn a_token_of_a_key_the_server_never_published_is_refused_and_costs_one_fetch() {
    let authority = start_authority().await;
    let (addr, resource) = start_resource(&authority, Duration::from_mins(1)).await;
    assert_eq!(call(addr, &authority.sign("k1", "alice", &resource)).await.0, 200);
    let forged = {
        let header = Header { kid: Some("k9".to_owned()), ..Header::default() };
        let claims = json!({ "sub": "mallory", "iss": authority.issuer, "aud": resource, "exp": 4_000_000_000_i64 });
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(b"mallory's own key, 32 bytes long!").unwrap())
            .unwrap()
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    // A burst of unknown kids: refused, and the server is asked once (the rest wait 100 ms).
    for _ in 0..5 {
        assert_eq!(call(addr, &forged).await.0, 401);
    }
    assert_eq!(authority.jwks_fetches.load(Ordering::SeqCst), 2);
}
