//! The OAuth 2.1 resource server over real HTTP with real JWTs: 401 challenges a client
//! can follow to the protected resource metadata, 403 for missing scopes, the metadata
//! document, and the verified caller binding request states and legacy sessions.

use std::net::SocketAddr;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_mrtr::auth::{JwtKeys, JwtVerifier, ResourceServer};
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::TestClient;
use mcp_mrtr::{
    http::HttpConfig, protocol::Prompt, protocol::ResourceContents, protocol::ResourceTemplate, protocol::Tool,
    ErrorCode,
};
use mcp_mrtr_tests::client::{self, HttpResponse};
use mcp_mrtr_tests::harness::Rpc;
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Value};

const SECRET: &str = "test-secret-of-at-least-32-bytes!";
const ISSUER: &str = "https://auth.test.example";

#[derive(Deserialize, JsonSchema)]
struct Title {
    title: String,
}

/// Says who calls.
#[tool]
async fn whoami(caller: Caller, Extension(claims): Extension<mcp_mrtr::auth::Claims>) -> Result<String, ToolError> {
    let issuer = claims.get("iss").and_then(Value::as_str).unwrap_or("?");
    Ok(format!("{} via {issuer}", caller.id()))
}

/// Writes a note, asking for its title.
#[tool(scopes = ["notes:write"])]
async fn write_note(caller: Caller) -> Result<String, ToolError> {
    let answer: Title = ask!(elicit "Title?")?;
    Ok(format!("{} wrote {}", caller.id(), answer.title))
}

/// Deletes everything.
#[tool(scopes = ["notes:write", "notes:admin"])]
async fn purge() -> Result<String, ToolError> {
    Ok("purged".into())
}

fn server() -> Server {
    Server::new("auth-test", "1")
        .tools(tools![whoami, write_note, purge])
        .prompt(
            Prompt::new("secret_prompt")
                .description("Needs a scope")
                .handler(|_ctx, _args: PromptArgs| async { Ok::<_, ToolError>(vec![PromptMessage::user("hi")]) })
                .requires_scopes(["prompts:read"]),
        )
        .resource(
            ResourceTemplate::new("note://{title}", "note")
                .handler(|_ctx, vars: TitleVar| async move {
                    Ok::<_, ToolError>(ResourceContents::text(format!("note://{}", vars.title), "text/plain", "body"))
                })
                .requires_scopes(["notes:read"]),
        )
        .tool(
            Tool::new("open")
                .description("Needs nothing")
                .handler(|_ctx, _args: PromptArgs| async { Ok::<_, ToolError>("open") }),
        )
}

type PromptArgs = serde_json::Map<String, Value>;

#[derive(Deserialize)]
struct TitleVar {
    title: String,
}

/// A real server on 127.0.0.1 protected by an HS256 JWT verifier, at `path`.
async fn serve(path: &str) -> (SocketAddr, String) {
    serve_server(server(), path).await
}

async fn serve_server(server: Server, path: &str) -> (SocketAddr, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://127.0.0.1:{}{path}", addr.port());
    let verifier = JwtVerifier::new(JwtKeys::hs256(SECRET).unwrap(), ISSUER, &resource);
    let auth = ResourceServer::new(&resource, [ISSUER]).scopes(["notes:read"]).verifier(verifier);
    let app = server.into_router(HttpConfig::default().path(path).auth(auth)).expect("a router");
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, resource)
}

fn now() -> i64 {
    i64::try_from(jsonwebtoken::get_current_timestamp()).unwrap()
}

/// A token for `sub` with `scope`, issued by `ISSUER` for `audience`, valid for a minute.
fn token(sub: &str, scope: &str, audience: &str) -> String {
    mint(&json!({"sub": sub, "scope": scope, "iss": ISSUER, "aud": audience, "exp": now() + 60}))
}

/// Calls with `bad` and expects 401 `invalid_token` whose description says `why`; the
/// challenge's parameters.
async fn refused_as_invalid(addr: SocketAddr, case: &str, bad: &str, why: &str) -> Vec<(String, String)> {
    let response = post(addr, "/mcp", &Rpc::call_tool("whoami", json!({})), Some(bad)).await;
    assert_eq!(response.status, 401, "{case}: {response:?}");
    let params = challenge(&response);
    assert_eq!(param(&params, "error"), Some("invalid_token"), "{case}");
    assert!(param(&params, "error_description").is_some_and(|d| d.contains(why)), "{case}: {params:?}");
    params
}

/// `claims` signed with the test secret under `algorithm` (the server trusts HS256 only).
fn signed_with(algorithm: Algorithm, claims: &Value) -> String {
    let key = EncodingKey::from_secret(SECRET.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::new(algorithm), claims, &key).unwrap()
}

/// `claims` as an `alg: none` token: no signature at all.
fn unsigned(claims: &Value) -> String {
    use base64::Engine as _;
    let encode = |part: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(part.to_string());
    format!("{}.{}.", encode(&json!({"alg": "none", "typ": "JWT"})), encode(claims))
}

/// `base` with `key` set to `value`, minted.
fn minted_with(base: &Value, key: &str, value: Value) -> String {
    let mut claims = base.clone();
    claims[key] = value;
    mint(&claims)
}

fn mint(claims: &Value) -> String {
    jsonwebtoken::encode(&Header::default(), claims, &EncodingKey::from_secret(SECRET.as_bytes()).unwrap()).unwrap()
}

async fn post(addr: SocketAddr, path: &str, rpc: &Rpc, bearer: Option<&str>) -> HttpResponse {
    let authorization = bearer.map(|t| format!("Bearer {t}"));
    let mut headers = rpc.headers();
    headers.extend(authorization.map(|a| ("authorization".to_owned(), a)));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    client::send_to(addr, "POST", path, &headers, &rpc.body()).await
}

/// The `key="value"` parameters of a `Bearer` challenge.
fn challenge(response: &HttpResponse) -> Vec<(String, String)> {
    let header = response.header("www-authenticate").unwrap_or_else(|| panic!("no challenge: {response:?}"));
    let params = header.strip_prefix("Bearer ").expect("a Bearer challenge");
    params
        .split("\", ")
        .filter_map(|p| p.split_once("=\""))
        .map(|(k, v)| (k.to_owned(), v.trim_end_matches('"').to_owned()))
        .collect()
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// Follows a challenge's `resource_metadata` to the document, as a client would.
async fn follow(addr: SocketAddr, params: &[(String, String)]) -> Value {
    let url = param(params, "resource_metadata").expect("resource_metadata");
    let origin = format!("http://127.0.0.1:{}", addr.port());
    let path = url.strip_prefix(&origin).unwrap_or_else(|| panic!("{url} is not on this server"));
    let response = client::send_to(addr, "GET", path, &[], b"").await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.header("content-type"), Some("application/json"));
    serde_json::from_str(&response.body).unwrap()
}

#[tokio::test]
async fn a_request_without_a_token_gets_a_challenge_leading_to_the_metadata() {
    let (addr, resource) = serve("/mcp").await;
    let response = post(addr, "/mcp", &Rpc::call_tool("whoami", json!({})), None).await;
    assert_eq!(response.status, 401, "{response:?}");
    let params = challenge(&response);
    assert_eq!(param(&params, "scope"), Some("notes:read"));
    assert_eq!(param(&params, "error"), None, "no token was presented");
    let document = follow(addr, &params).await;
    assert_eq!(document["resource"], json!(resource));
    assert_eq!(document["authorization_servers"], json!([ISSUER]));
    assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    // The configured scope first, then those the handlers declare.
    assert_eq!(document["scopes_supported"], json!(["notes:read", "notes:write", "notes:admin", "prompts:read"]));
}

#[tokio::test]
async fn malformed_expired_and_foreign_tokens_get_invalid_token() {
    let (addr, resource) = serve("/mcp").await;
    let base = json!({"sub": "alice", "scope": "notes:read", "iss": ISSUER, "aud": resource, "exp": now() + 60});
    let with = |key: &str, value: Value| minted_with(&base, key, value);
    let cases = [
        ("malformed", "not-a-jwt".to_owned(), "malformed"),
        ("expired", with("exp", json!(now() - 3600)), "expired"),
        ("wrong audience", with("aud", json!("http://127.0.0.1:1/other")), "not issued for this resource"),
        ("wrong issuer", with("iss", json!("https://evil.example")), "issuer"),
        ("no algorithm", unsigned(&base), "malformed"),
        ("another algorithm", signed_with(Algorithm::HS512, &base), "algorithm"),
        ("a not-before in words", with("nbf", json!("yesterday")), "malformed"),
    ];
    for (case, bad, why) in cases {
        let params = refused_as_invalid(addr, case, &bad, why).await;
        assert_eq!(follow(addr, &params).await["resource"], json!(resource), "{case}");
    }
    let good = post(addr, "/mcp", &Rpc::call_tool("whoami", json!({})), Some(&mint(&base))).await;
    assert_eq!(good.status, 200, "{good:?}");
    assert_eq!(good.reply()["result"]["content"][0]["text"], format!("alice via {ISSUER}"));
}

/// Audit B12: a token of another type (RFC 9068 §4), an issuer list, a life of years or
/// an issue time in the future is refused, although signed by the trusted issuer.
#[tokio::test]
async fn tokens_that_are_not_plain_access_tokens_get_invalid_token() {
    let (addr, resource) = serve("/mcp").await;
    let base = json!({"sub": "alice", "scope": "notes:read", "iss": ISSUER, "aud": resource, "exp": now() + 60});
    let with = |key: &str, value: Value| minted_with(&base, key, value);
    let typed = |typ: &str| {
        let header = Header { typ: Some(typ.to_owned()), ..Header::default() };
        jsonwebtoken::encode(&header, &base, &EncodingKey::from_secret(SECRET.as_bytes()).unwrap()).unwrap()
    };
    let cases = [
        ("DPoP proof", typed("dpop+jwt"), "access token"),
        ("ID token", typed("id_token+jwt"), "access token"),
        ("logout token", typed("logout+jwt"), "access token"),
        ("issuer list", with("iss", json!([ISSUER])), "`iss`"),
        ("thirty years", with("exp", json!(now() + 30 * 365 * 24 * 3600)), "longer"),
        ("issued in an hour", with("iat", json!(now() + 3600)), "future"),
    ];
    for (case, bad, why) in cases {
        refused_as_invalid(addr, case, &bad, why).await;
    }
    for typ in ["at+jwt", "application/at+jwt", "JWT"] {
        let response = post(addr, "/mcp", &Rpc::call_tool("whoami", json!({})), Some(&typed(typ))).await;
        assert_eq!(response.status, 200, "{typ}: {response:?}");
    }
}

#[tokio::test]
async fn missing_scopes_get_403_naming_every_scope_the_call_needs() {
    let (addr, resource) = serve("/mcp").await;
    // Without the server's own scope, nothing is reachable.
    let bare = post(addr, "/mcp", &Rpc::call_tool("whoami", json!({})), Some(&token("bob", "", &resource))).await;
    assert_eq!(bare.status, 403, "{bare:?}");
    assert_eq!(param(&challenge(&bare), "scope"), Some("notes:read"));

    let reader = token("bob", "notes:read", &resource);
    let refused = post(addr, "/mcp", &Rpc::call_tool("purge", json!({})), Some(&reader)).await;
    assert_eq!(refused.status, 403, "{refused:?}");
    let params = challenge(&refused);
    assert_eq!(param(&params, "error"), Some("insufficient_scope"));
    assert_eq!(param(&params, "scope"), Some("notes:read notes:write notes:admin"));
    assert_eq!(follow(addr, &params).await["resource"], json!(resource));
    let reply = refused.reply();
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["error"]["data"]["requiredScopes"], json!(["notes:write", "notes:admin"]));

    let writer = token("bob", "notes:read notes:write", &resource);
    let still = post(addr, "/mcp", &Rpc::call_tool("purge", json!({})), Some(&writer)).await;
    assert_eq!(still.status, 403, "one scope of two is not enough");
    let admin = token("bob", "notes:read notes:write notes:admin", &resource);
    let done = post(addr, "/mcp", &Rpc::call_tool("purge", json!({})), Some(&admin)).await;
    assert_eq!(done.reply()["result"]["content"][0]["text"], "purged");
}

#[tokio::test]
async fn a_state_sealed_for_one_user_is_refused_to_another() {
    let (addr, resource) = serve("/mcp").await;
    let alice = token("alice", "notes:read notes:write", &resource);
    let bob = token("bob", "notes:read notes:write", &resource);
    let call = Rpc::call_tool("write_note", json!({}));
    let round1 = post(addr, "/mcp", &call, Some(&alice)).await.reply()["result"].clone();
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    let retry = call
        .param("inputResponses", json!({"answer": {"action": "accept", "content": {"title": "plan"}}}))
        .param("requestState", round1["requestState"].clone());
    let stolen = post(addr, "/mcp", &retry, Some(&bob)).await.reply();
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    let done = post(addr, "/mcp", &retry, Some(&alice)).await.reply();
    assert_eq!(done["result"]["content"][0]["text"], "alice wrote plan");
}

#[tokio::test]
async fn a_legacy_session_is_its_opener_s_and_gets_403_for_missing_scopes() {
    let (addr, resource) = serve("/mcp").await;
    let alice = format!("Bearer {}", token("alice", "notes:read", &resource));
    let bob = format!("Bearer {}", token("bob", "notes:read", &resource));
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let headers = [("content-type", "application/json"), ("authorization", alice.as_str())];
    let opened = client::send(addr, "POST", &headers, init.to_string().as_bytes()).await;
    assert_eq!(opened.status, 200, "{opened:?}");
    let session = Legacy { addr, session: opened.header("mcp-session-id").expect("a session").to_owned() };
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let by_bob = client::send(addr, "POST", &on_session(&session, &bob), ping.as_bytes()).await;
    assert_eq!(by_bob.status, 404, "another user must not reach the session: {by_bob:?}");
    let alice_headers = on_session(&session, &alice);
    let by_alice = client::send(addr, "POST", &alice_headers, ping.as_bytes()).await;
    assert_eq!(by_alice.status, 200, "{by_alice:?}");

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "purge", "arguments": {}}});
    let refused = client::send(addr, "POST", &alice_headers, call.to_string().as_bytes()).await;
    assert_eq!(refused.status, 403, "{refused:?}");
    assert_eq!(param(&challenge(&refused), "error"), Some("insufficient_scope"));
    let again = client::send(addr, "POST", &alice_headers, ping.as_bytes()).await;
    assert_eq!(again.status, 200, "the session survives a refusal");
}

/// The headers of a request on `session` sent with `authorization`.
fn on_session<'a>(session: &'a Legacy, authorization: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut headers = session.headers("application/json");
    headers.push(("authorization", authorization));
    headers
}

#[tokio::test]
async fn a_custom_path_gets_its_own_well_known_uri() {
    let (addr, resource) = serve("/v1/mcp").await;
    let response = post(addr, "/v1/mcp", &Rpc::new("server/discover"), None).await;
    assert_eq!(response.status, 401);
    let params = challenge(&response);
    assert!(param(&params, "resource_metadata")
        .is_some_and(|u| u.ends_with("/.well-known/oauth-protected-resource/v1/mcp")));
    assert_eq!(follow(addr, &params).await["resource"], json!(resource));
    let reader = token("carol", "notes:read", &resource);
    let discover = post(addr, "/v1/mcp", &Rpc::new("server/discover"), Some(&reader)).await;
    assert_eq!(discover.status, 200, "{discover:?}");
    // The metadata is read-only.
    let posted = client::send_to(addr, "POST", "/.well-known/oauth-protected-resource/v1/mcp", &[], b"").await;
    assert_eq!(posted.status, 405);
}

/// The `Http` transport serves without a router: it must route as the router does.
#[tokio::test]
async fn the_http_transport_routes_the_endpoint_and_its_metadata_as_the_router_does() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let served = listener.local_addr().unwrap();
    let resource = format!("http://127.0.0.1:{}/v1/mcp", served.port());
    let verifier = JwtVerifier::new(JwtKeys::hs256(SECRET).unwrap(), ISSUER, &resource);
    let auth = ResourceServer::new(&resource, [ISSUER]).scopes(["notes:read"]).verifier(verifier);
    let config = HttpConfig::default().path("/v1/mcp").auth(auth);
    let serving = server().serve(mcp_mrtr::http::Http::listener(listener).config(config));
    tokio::spawn(serving.with_graceful_shutdown(std::future::pending()));
    let (routed, _) = serve("/v1/mcp").await;
    let metadata = "/.well-known/oauth-protected-resource/v1/mcp";
    let mut seen = Vec::new();
    for addr in [served, routed] {
        let unauthorized = post(addr, "/v1/mcp", &Rpc::new("server/discover"), None).await;
        let reader = token("carol", "notes:read", &format!("http://127.0.0.1:{}/v1/mcp", addr.port()));
        let discover = post(addr, "/v1/mcp", &Rpc::new("server/discover"), Some(&reader)).await;
        let document = client::send_to(addr, "GET", metadata, &[], b"").await;
        let posted = client::send_to(addr, "POST", metadata, &[], b"").await;
        let elsewhere = client::send_to(addr, "GET", "/mcp", &[], b"").await;
        let resource = serde_json::from_str::<Value>(&document.body).unwrap()["resource"].clone();
        assert!(resource.as_str().is_some_and(|r| r.ends_with(&format!("{}/v1/mcp", addr.port()))), "{document:?}");
        seen.push([unauthorized.status, discover.status, document.status, posted.status, elsewhere.status]);
    }
    assert_eq!(seen[0], [401, 200, 200, 405, 404]);
    assert_eq!(seen[0], seen[1], "the Http transport and the router answer alike");
}

#[tokio::test]
async fn the_metadata_lists_the_scopes_of_tools_added_while_serving() {
    let server = Server::new("live", "1").tool(whoami);
    let handle = server.catalog();
    let (addr, _) = serve_server(server, "/mcp").await;
    let metadata = || async {
        let response = client::send_to(addr, "GET", "/.well-known/oauth-protected-resource/mcp", &[], b"").await;
        serde_json::from_str::<Value>(&response.body).unwrap()["scopes_supported"].clone()
    };
    assert_eq!(metadata().await, json!(["notes:read"]));
    handle.tools().add(purge).unwrap();
    assert_eq!(metadata().await, json!(["notes:read", "notes:write", "notes:admin"]));
}

#[tokio::test]
async fn scopes_guard_prompts_and_resources_in_process_too() {
    let reader = TestClient::new(server()).as_caller(Caller::new("dan").with_scopes(["notes:read"]));
    let refused = reader.get_prompt("secret_prompt", json!({})).start().await;
    let error = refused.error().expect("refused").clone();
    assert_eq!((error.code(), error.http_status()), (ErrorCode::INVALID_REQUEST, 403));
    assert_eq!(error.data().unwrap()["requiredScopes"], json!(["prompts:read"]));
    assert!(reader.read_resource("note://x").start().await.complete().is_some());
    assert!(reader.call_tool("open", json!({})).start().await.complete().is_some());

    // No caller at all lacks every scope: a scoped route is never open to anonymous calls.
    let anonymous = TestClient::new(server());
    assert!(anonymous.read_resource("note://x").start().await.error().is_some_and(|e| e.http_status() == 403));
    assert!(anonymous.call_tool("open", json!({})).start().await.complete().is_some());
}

#[test]
#[should_panic(expected = "set a token verifier")]
fn a_resource_server_without_a_verifier_is_refused_at_start() {
    let _ = server()
        .into_router(HttpConfig::default().auth(ResourceServer::new("http://127.0.0.1:1/mcp", [ISSUER])))
        .expect("a router");
}

/// A resource server built wrong is reported by serving, as every builder mistake is
/// (issue 50: `ResourceServer::new` panicked).
#[test]
fn a_resource_server_built_wrong_is_refused_by_serving_not_a_panic() {
    for (resource, issuers, says) in [
        ("mcp.example.com/mcp", vec![ISSUER], "ResourceServer: the resource"),
        ("https://mcp.example.com/mcp#top", vec![ISSUER], "must not have a fragment"),
        ("https://mcp.example.com/mcp", vec![], "name at least one authorization server"),
    ] {
        let auth = ResourceServer::new(resource, issuers);
        let refused = server().into_router(HttpConfig::default().auth(auth)).expect_err(resource).to_string();
        assert!(refused.contains(says), "{resource}: {refused}");
    }
}

/// `mcp_mrtr::testing::TestToken` mints what a verifier on the same secret accepts,
/// typed `at+jwt` so a verifier requiring it accepts it too, and an expired one it refuses.
#[tokio::test]
async fn a_minted_test_token_is_accepted_and_its_expired_twin_refused() {
    use mcp_mrtr::testing::TestToken;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://127.0.0.1:{}/mcp", addr.port());
    let verifier = JwtVerifier::new(JwtKeys::hs256(SECRET).unwrap(), ISSUER, &resource).require_at_jwt();
    let auth = ResourceServer::new(&resource, [ISSUER]).verifier(verifier);
    let app = server().into_router(HttpConfig::default().auth(auth)).expect("a router");
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let minted = TestToken::hs256(SECRET, ISSUER, &resource).subject("bob").scopes(["notes:write"]);
    let good = post(addr, "/mcp", &Rpc::call_tool("whoami", json!({})), Some(&minted.mint())).await;
    assert_eq!(good.reply()["result"]["content"][0]["text"], format!("bob via {ISSUER}"), "{good:?}");
    let scoped = post(addr, "/mcp", &Rpc::call_tool("write_note", json!({})), Some(&minted.mint())).await;
    assert_eq!(scoped.reply()["result"]["resultType"], "input_required", "its scopes count: {scoped:?}");

    let expired = minted.lifetime(std::time::Duration::ZERO).mint();
    refused_as_invalid(addr, "expired test token", &expired, "expired").await;
}
