//! Regressions of the 2026-12-01 audit found on the wire, over real HTTP on 127.0.0.1:
//! the bearer token kept from handlers and visibility filters unless asked for (B8), a
//! 2025-11-25 session's `GET`/`DELETE` open to its owner only (B9), and repeated MCP
//! headers refused rather than checked by their first value (B10).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use jsonwebtoken::{EncodingKey, Header};
use mcp_mrtr::auth::{AccessToken, JwtKeys, JwtVerifier, ResourceServer};
use mcp_mrtr::prelude::*;
use mcp_mrtr::{catalog::Item, http::HttpConfig, protocol::Tool};
use mcp_mrtr_tests::client::{self, HttpResponse};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Map, Value};

const SECRET: &str = "audit-http-secret-of-32-bytes-or-more";
const ISSUER: &str = "https://auth.audit.example";

/// A server on 127.0.0.1 behind an HS256 resource server, as `configure` sets it up.
async fn serve_with_auth(server: Server, configure: fn(ResourceServer) -> ResourceServer) -> (SocketAddr, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://127.0.0.1:{}/mcp", addr.port());
    let verifier = JwtVerifier::new(JwtKeys::hs256(SECRET).unwrap(), ISSUER, &resource);
    let auth = configure(ResourceServer::new(&resource, [ISSUER]).verifier(verifier));
    let app = server.into_router(HttpConfig::default().auth(auth)).expect("a router");
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, resource)
}

/// A token for `sub`, valid for a minute.
fn token(sub: &str, audience: &str) -> String {
    let now = i64::try_from(jsonwebtoken::get_current_timestamp()).unwrap();
    let claims = json!({"sub": sub, "iss": ISSUER, "aud": audience, "exp": now + 60});
    jsonwebtoken::encode(&Header::default(), &claims, &EncodingKey::from_secret(SECRET.as_bytes()).unwrap()).unwrap()
}

/// Sends `rpc` with `extra` headers after its own (repeats included, as given).
async fn send_with(addr: SocketAddr, rpc: &Rpc, extra: &[(&str, &str)]) -> HttpResponse {
    let own = rpc.headers();
    let mut headers: Vec<(&str, &str)> = own.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    headers.extend_from_slice(extra);
    client::send(addr, "POST", &headers, &rpc.body()).await
}

// B8: the bearer token in `http_headers()`.

/// What a handler and the visibility filter saw of the request's headers.
#[derive(Default)]
struct Seen {
    filter_saw_token: AtomicBool,
    filter_saw_other_headers: AtomicBool,
}

/// A server whose `headers` tool reports what its handler sees, and whose visibility
/// filter records what it sees.
fn header_probe(seen: &Arc<Seen>) -> Server {
    let seen = seen.clone();
    let probe = Tool::new("headers").description("Reports the headers it sees").handler(
        |ctx: Ctx, _args: Map<String, Value>| async move {
            let headers = ctx.http_headers().expect("an HTTP request has headers");
            let token = ctx.extension::<AccessToken>().map(|t| t.secret().to_owned());
            Ok::<_, ToolError>(
                json!({
                    "authorization": headers.get("authorization").and_then(|v| v.to_str().ok()),
                    "x-team": headers.get("x-team").and_then(|v| v.to_str().ok()),
                    "accessToken": token,
                })
                .to_string(),
            )
        },
    );
    Server::new("audit-b8", "0").tool(probe).visible(move |view, _item: Item<'_>| {
        let headers = view.http_headers().expect("an HTTP request has headers");
        if headers.contains_key("authorization") {
            seen.filter_saw_token.store(true, Ordering::SeqCst);
        }
        if headers.contains_key("x-team") {
            seen.filter_saw_other_headers.store(true, Ordering::SeqCst);
        }
        true
    })
}

/// Lists and calls the probe as alice (with `X-Team: red`); the handler's report.
async fn probe_as_alice(addr: SocketAddr, resource: &str) -> (String, Value) {
    let bearer = format!("Bearer {}", token("alice", resource));
    let extra = [("authorization", bearer.as_str()), ("x-team", "red")];
    let listed = send_with(addr, &Rpc::new("tools/list"), &extra).await;
    assert_eq!(listed.status, 200, "{listed:?}");
    let called = send_with(addr, &Rpc::call_tool("headers", json!({})), &extra).await;
    assert_eq!(called.status, 200, "{called:?}");
    let text = called.reply()["result"]["content"][0]["text"].as_str().expect("a text result").to_owned();
    (bearer, serde_json::from_str(&text).unwrap())
}

#[tokio::test]
async fn the_bearer_token_reaches_neither_handlers_nor_visibility_filters_unless_passed() {
    let seen = Arc::new(Seen::default());
    let (addr, resource) = serve_with_auth(header_probe(&seen), |auth| auth).await;
    let (_, report) = probe_as_alice(addr, &resource).await;
    assert_eq!(report["authorization"], Value::Null, "the handler read the raw token: {report}");
    assert_eq!(report["accessToken"], Value::Null, "{report}");
    assert!(!seen.filter_saw_token.load(Ordering::SeqCst), "the visibility filter read the raw token");
    // Only the token is withheld: the request's other headers are still there.
    assert_eq!(report["x-team"], "red", "{report}");
    assert!(seen.filter_saw_other_headers.load(Ordering::SeqCst));
}

#[tokio::test]
async fn pass_token_to_handlers_hands_the_token_over() {
    let seen = Arc::new(Seen::default());
    let (addr, resource) = serve_with_auth(header_probe(&seen), |auth| auth.pass_token_to_handlers(true)).await;
    let (bearer, report) = probe_as_alice(addr, &resource).await;
    assert_eq!(report["authorization"], bearer.as_str(), "{report}");
    assert_eq!(report["accessToken"], bearer.trim_start_matches("Bearer "), "{report}");
    assert!(seen.filter_saw_token.load(Ordering::SeqCst));
}

// B9: `GET` and `DELETE` on someone else's 2025-11-25 session.

/// Opens a 2025-11-25 session as the bearer of `authorization`.
async fn open_session(addr: SocketAddr, authorization: &str) -> Legacy {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let headers = [("content-type", "application/json"), ("authorization", authorization)];
    let opened = client::send(addr, "POST", &headers, init.to_string().as_bytes()).await;
    assert_eq!(opened.status, 200, "{opened:?}");
    Legacy { addr, session: opened.header("mcp-session-id").expect("a session").to_owned() }
}

/// Sends `method` on `session` as the bearer of `authorization`; the status.
async fn on_session(session: &Legacy, authorization: &str, method: &str) -> u16 {
    let mut headers = session.headers("application/json, text/event-stream");
    headers.push(("authorization", authorization));
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let body = if method == "POST" { ping.as_bytes() } else { b"" };
    client::send(session.addr, method, &headers, body).await.status
}

#[tokio::test]
async fn another_caller_can_neither_end_nor_probe_a_legacy_session() {
    let server = Server::new("audit-b9", "0");
    let (addr, resource) = serve_with_auth(server, |auth| auth).await;
    let alice = format!("Bearer {}", token("alice", &resource));
    let bob = format!("Bearer {}", token("bob", &resource));
    let session = open_session(addr, &alice).await;

    assert_eq!(on_session(&session, &bob, "DELETE").await, 404, "bob must not end alice's session");
    assert_eq!(on_session(&session, &bob, "GET").await, 404, "to bob, alice's session does not exist");
    assert_eq!(on_session(&session, &alice, "POST").await, 200, "alice's session survives bob");
    assert_eq!(on_session(&session, &alice, "GET").await, 405, "no standalone stream, for its owner either");

    assert_eq!(on_session(&session, &alice, "DELETE").await, 200, "its owner ends it");
    assert_eq!(on_session(&session, &alice, "POST").await, 404);
}

// B10: repeated MCP headers.

/// Routes a job to a region.
#[tool]
async fn route_job(
    /// Where to run.
    #[mcp(header = "Region")]
    region: String,
) -> Result<String, ToolError> {
    Ok(format!("routed to {region}"))
}

/// Deletes everything.
#[tool]
async fn purge() -> Result<String, ToolError> {
    Ok("purged".into())
}

#[tokio::test]
async fn a_repeated_mcp_header_is_refused_and_named() {
    let server = TestServer::start(Server::new("audit-b10", "0").tools(tools![route_job, purge])).await;
    let call = || Rpc::call_tool("route_job", json!({"region": "eu"})).header("mcp-param-region", Some("eu"));
    let fine = send_with(server.addr, &call(), &[]).await;
    assert_eq!(fine.reply()["result"]["content"][0]["text"], "routed to eu", "{fine:?}");

    let version = mcp_mrtr::protocol::PROTOCOL_VERSION;
    let cases = [
        // What the audit sent: the server checked the first value, a proxy may act on the second.
        ("Mcp-Name", "purge"),
        ("Mcp-Method", "tools/list"),
        ("MCP-Protocol-Version", version),
        ("Mcp-Param-Region", "us"),
        // Even the same value twice: a proxy may read the two as the list `eu, eu`.
        ("mcp-param-region", "eu"),
        ("mcp-name", "route_job"),
    ];
    for (name, value) in cases {
        let response = send_with(server.addr, &call(), &[(name, value)]).await;
        assert_eq!(response.status, 400, "{name}: {response:?}");
        let error = &response.reply()["error"];
        assert_eq!(error["code"], -32020, "{name}: {error}");
        let message = error["message"].as_str().unwrap_or_default().to_ascii_lowercase();
        assert!(message.contains(&name.to_ascii_lowercase()), "{name}: the error should name it: {error}");
        assert!(message.contains("more than once"), "{name}: {error}");
    }
    // A 2025-11-25 request is held to the same rule for the one MCP header it sends.
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let repeated = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let legacy = client::send(server.addr, "POST", &repeated, initialize.to_string().as_bytes()).await;
    assert_eq!(legacy.status, 400, "{legacy:?}");
    assert_eq!(legacy.reply()["error"]["code"], -32020, "{legacy:?}");
    // A tool that mirrors nothing ignores `Mcp-Param-*` headers, repeated or not.
    let unmirrored = [("mcp-param-region", "a"), ("mcp-param-region", "b")];
    let purged = send_with(server.addr, &Rpc::call_tool("purge", json!({})), &unmirrored).await;
    assert_eq!(purged.reply()["result"]["content"][0]["text"], "purged", "{purged:?}");
}
