//! Handlers reach what `main` built (`State<T>`) and what the app's middleware attached to
//! the request (`Extension<T>`, the authenticated `Caller`), on every round; and the
//! caller binds request states and legacy sessions.

use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TestClient};
use mcp_mrtr_tests::client;
use mcp_mrtr_tests::harness::Rpc;
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Value};

/// What `main` built: counts how often handlers read it.
#[derive(Default)]
struct Store {
    reads: AtomicUsize,
}

/// A tenant, as the app's middleware names it.
#[derive(Clone, Debug)]
struct Tenant(String);

#[derive(Deserialize, JsonSchema)]
struct Title {
    title: String,
}

/// Asks for a title and files it for the caller's tenant.
#[tool]
async fn file_note(
    State(store): State<Store>,
    tenant: Option<Extension<Tenant>>,
    caller: Option<Caller>,
) -> Result<String, ToolError> {
    let reads = store.reads.fetch_add(1, Ordering::SeqCst) + 1;
    let answer: Title = ask!(elicit "Title?")?;
    let tenant = tenant.map_or_else(|| "none".to_owned(), |Extension(t)| t.0);
    let caller = caller.map_or_else(|| "anonymous".to_owned(), |c| c.id().to_owned());
    Ok(format!("{} filed for {caller} of {tenant} (state read {reads} times)", answer.title))
}

/// Needs a caller.
#[tool]
async fn whoami(caller: Caller, ctx: &Ctx) -> Result<String, ToolError> {
    let tenant = ctx.extension::<Tenant>().map_or("none", |t| t.0.as_str());
    Ok(format!("{} ({tenant})", caller.id()))
}

fn server() -> Server {
    Server::new("app", "1").with_state(Store::default()).tool(file_note).tool(whoami)
}

#[tokio::test]
async fn state_extensions_and_the_caller_reach_handlers_on_every_round() {
    let client = TestClient::new(server()).as_caller(Caller::new("alice")).with_extension(Tenant("acme".into()));
    let mut call = client.call_tool("file_note", json!({}));
    assert_eq!(call.start().await.keys(), ["answer"]);
    let done = call.answer([("answer", answer::accept(json!({"title": "standup"})))]).await;
    assert_eq!(done.text().as_deref(), Some("standup filed for alice of acme (state read 2 times)"));
}

#[tokio::test]
async fn without_a_caller_or_extension_optional_parameters_are_none() {
    let client = TestClient::new(server());
    let mut call = client.call_tool("file_note", json!({}));
    call.start().await;
    let done = call.answer([("answer", answer::accept(json!({"title": "t"})))]).await;
    assert_eq!(done.text().as_deref(), Some("t filed for anonymous of none (state read 2 times)"));
    // A required caller that is missing is the server's misconfiguration: -32603.
    let error = client.call_tool("whoami", json!({})).start().await.error().expect("an error").clone();
    assert_eq!(error.code(), mcp_mrtr::ErrorCode::INTERNAL_ERROR);
    assert!(error.message().contains("authenticated caller"), "{}", error.message());
}

#[tokio::test]
#[should_panic(expected = "tool `file_note` takes State<")]
async fn a_handler_wanting_state_the_server_was_never_given_fails_at_start() {
    let _ = TestClient::new(Server::new("app", "1").tool(file_note));
}

#[tokio::test]
async fn serving_refuses_to_start_without_the_state_handlers_take() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let refused = Server::new("app", "1").tool(file_note).serve(mcp_mrtr::http::Http::listener(listener)).await;
    let error = refused.expect_err("serving must not start");
    assert!(error.to_string().contains("Store"), "{error}");
}

#[tokio::test]
async fn a_state_sealed_for_one_caller_does_not_open_for_another() {
    let client = TestClient::new(server()).as_caller(Caller::new("alice"));
    let mut call = client.call_tool("file_note", json!({}));
    call.start().await;
    call.as_caller(Caller::new("mallory"));
    let stolen = call.answer([("answer", answer::accept(json!({"title": "t"})))]).await;
    assert_eq!(stolen.error().map(mcp_mrtr::Error::code), Some(mcp_mrtr::ErrorCode::INVALID_PARAMS));
}

/// The app's own authentication: `Authorization: Bearer <name>` names the caller (a real
/// app verifies a token here), and `X-Tenant` the tenant.
async fn authenticate(mut request: Request, next: Next) -> Response {
    // A block, so no borrow of the (non-Sync) request lives across the await below.
    let (caller, tenant) = {
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        (
            header("authorization").and_then(|v| v.strip_prefix("Bearer ").map(Caller::new)),
            header("x-tenant").map(Tenant),
        )
    };
    if let Some(caller) = caller {
        request.extensions_mut().insert(caller);
    }
    if let Some(tenant) = tenant {
        request.extensions_mut().insert(tenant);
    }
    next.run(request).await
}

async fn serve_behind_auth() -> std::net::SocketAddr {
    let app = server()
        .into_router(mcp_mrtr::http::HttpConfig::default())
        .expect("a router")
        .layer(axum::middleware::from_fn(authenticate));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

async fn send(addr: std::net::SocketAddr, rpc: &Rpc, extra: &[(&str, &str)]) -> Value {
    let mut headers = rpc.headers();
    headers.extend(extra.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let response = client::send(addr, "POST", &headers, &rpc.body()).await;
    assert_eq!(response.status, 200, "{}", response.body);
    response.reply()
}

#[tokio::test]
async fn over_http_middleware_extensions_reach_handlers_and_bind_states() {
    let addr = serve_behind_auth().await;
    let alice = [("authorization", "Bearer alice"), ("x-tenant", "acme")];
    let who = send(addr, &Rpc::call_tool("whoami", json!({})), &alice).await;
    assert_eq!(who["result"]["content"][0]["text"], "alice (acme)");

    let call = Rpc::call_tool("file_note", json!({}));
    let round1 = send(addr, &call, &alice).await["result"].clone();
    let retry = call
        .param("inputResponses", json!({"answer": {"action": "accept", "content": {"title": "plan"}}}))
        .param("requestState", round1["requestState"].clone());
    let stolen = send(addr, &retry, &[("authorization", "Bearer bob"), ("x-tenant", "acme")]).await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    let done = send(addr, &retry, &alice).await;
    // Two reads: round 1 and alice's retry; bob's attempt was refused before the handler ran.
    assert_eq!(done["result"]["content"][0]["text"], "plan filed for alice of acme (state read 2 times)");
}

#[tokio::test]
async fn a_legacy_session_belongs_to_the_caller_who_opened_it() {
    let addr = serve_behind_auth().await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let opened = client::send(
        addr,
        "POST",
        &[("content-type", "application/json"), ("authorization", "Bearer alice")],
        init.to_string().as_bytes(),
    )
    .await;
    let session = Legacy { addr, session: opened.header("mcp-session-id").expect("a session").to_owned() };
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let as_whom = |token: &'static str| {
        let mut headers = session.headers("application/json");
        headers.push(("authorization", token));
        headers
    };
    let bob = client::send(addr, "POST", &as_whom("Bearer bob"), ping.as_bytes()).await;
    assert_eq!(bob.status, 404, "another caller must not reach the session: {}", bob.body);
    let nobody = client::send(addr, "POST", &session.headers("application/json"), ping.as_bytes()).await;
    assert_eq!(nobody.status, 404);
    let alice = client::send(addr, "POST", &as_whom("Bearer alice"), ping.as_bytes()).await;
    assert_eq!((alice.status, alice.reply()["result"].clone()), (200, json!({})));
}
