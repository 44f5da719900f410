//! A server's own request methods (`Server::method`) and extensions (`Server::declare_extension`),
//! over real HTTP on both revisions and over stdio: declared in the capabilities, served
//! through the same dispatch (params checked, results stamped, scopes and the visibility
//! filter applied, rounds when the handler asks).

use std::net::SocketAddr;

use jsonwebtoken::{EncodingKey, Header};
use mcp_mrtr::auth::{JwtKeys, JwtVerifier, ResourceServer};
use mcp_mrtr::prelude::*;
use mcp_mrtr::question::Elicit;
use mcp_mrtr::{
    catalog::Item, http::HttpConfig, protocol::CacheHints, protocol::CacheScope, protocol::Tool, MethodRoute,
};
use mcp_mrtr_tests::client;
use mcp_mrtr_tests::harness::{refusal, Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const SECRET: &str = "test-secret-of-at-least-32-bytes!";
const ISSUER: &str = "https://auth.test.example";

#[derive(Deserialize)]
struct Search {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Serialize)]
struct Hits {
    hits: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
struct Scope {
    folder: String,
}

fn server() -> Server {
    Server::new("custom", "1.0.0")
        .declare_extension("com.acme/search", json!({ "fuzzy": true }))
        .method(
            MethodRoute::new("acme/search", |_ctx, params: Search| async move {
                let hits = (0..params.limit.unwrap_or(2)).map(|i| format!("{}#{i}", params.query)).collect();
                Ok::<_, ToolError>(Hits { hits })
            })
            .cache_hints(CacheHints { ttl_ms: 60_000, scope: CacheScope::Public }),
        )
        .method(MethodRoute::new("acme/fail", |_ctx, _params: Value| async move {
            Err::<Hits, _>(ToolError::new("the index is down"))
        }))
        .method(
            MethodRoute::new("acme/secret", |_ctx, _params: Value| async move {
                Ok::<_, ToolError>(json!({ "secret": 42 }))
            })
            .requires_scopes(["acme:secret"]),
        )
        .method(MethodRoute::new("acme/hidden", |_ctx, _params: Value| async move {
            Ok::<_, ToolError>(json!({ "hidden": true }))
        }))
        .method(
            MethodRoute::new("acme/scoped", |ctx: Ctx, params: Search| async move {
                let scope: Scope = ctx.ask("scope", Elicit::new("Search which folder?")).await?;
                Ok::<_, ToolError>(Hits { hits: vec![format!("{} in {}", params.query, scope.folder)] })
            })
            .cache_hints(CacheHints { ttl_ms: 60_000, scope: CacheScope::Public }),
        )
        .visible(|_view, item| !matches!(item, Item::Method("acme/hidden")))
}

#[tokio::test]
async fn declared_extensions_and_methods_answer_on_2026_07_28() {
    let server = TestServer::start(server()).await;
    let discover = server.call(&Rpc::new("server/discover")).await;
    assert_eq!(discover["result"]["capabilities"]["extensions"]["com.acme/search"], json!({ "fuzzy": true }));

    let found = server.call(&Rpc::new("acme/search").param("query", json!("cats")).param("limit", json!(3))).await;
    let result = &found["result"];
    assert_eq!(result["hits"], json!(["cats#0", "cats#1", "cats#2"]));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "custom");
    assert_eq!((result["ttlMs"].clone(), result["cacheScope"].clone()), (json!(60_000), json!("public")));

    let bad = server.call(&Rpc::new("acme/search").param("limit", json!("many"))).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let failed = server.call(&Rpc::new("acme/fail")).await;
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(failed["error"]["message"].as_str().unwrap().contains("the index is down"), "{failed}");
    let unknown = server.send(&Rpc::new("acme/nothing")).await;
    assert_eq!((unknown.status, unknown.reply()["error"]["code"].clone()), (404, json!(-32601)));
    let hidden = server.send(&Rpc::new("acme/hidden")).await;
    assert_eq!(hidden.status, unknown.status, "a hidden method reads as an unknown one");
    assert_eq!(hidden.reply()["error"]["code"], -32601);
    assert_eq!(
        hidden.reply()["error"]["message"],
        unknown.reply()["error"]["message"].as_str().unwrap().replace("acme/nothing", "acme/hidden")
    );
}

#[tokio::test]
async fn a_method_that_asks_runs_in_rounds_and_its_retry_is_never_cached() {
    let server = TestServer::start(server()).await;
    let first = server.call(&Rpc::new("acme/scoped").param("query", json!("cats"))).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(result["inputRequests"]["scope"]["method"], "elicitation/create");
    let state = result["requestState"].as_str().unwrap();

    let answered = Rpc::new("acme/scoped")
        .param("query", json!("cats"))
        .param("inputResponses", json!({ "scope": { "action": "accept", "content": { "folder": "pets" } } }))
        .param("requestState", json!(state));
    let done = server.call(&answered).await;
    assert_eq!(done["result"]["hits"], json!(["cats in pets"]), "{done}");
    assert_eq!((done["result"]["ttlMs"].clone(), done["result"]["cacheScope"].clone()), (json!(0), json!("private")));

    // The state is bound to the method and its params: another query cannot use it.
    let moved = Rpc::new("acme/scoped")
        .param("query", json!("dogs"))
        .param("inputResponses", json!({ "scope": { "action": "accept", "content": { "folder": "pets" } } }))
        .param("requestState", json!(state));
    assert_eq!(server.call(&moved).await["error"]["code"], -32602);
}

#[tokio::test]
async fn a_method_needs_its_scopes_like_any_route() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://127.0.0.1:{}/mcp", addr.port());
    let verifier = JwtVerifier::new(JwtKeys::hs256(SECRET).unwrap(), ISSUER, &resource);
    let auth = ResourceServer::new(&resource, [ISSUER]).verifier(verifier);
    let app =
        mcp_mrtr::testing::with_own_keys(server()).into_router(HttpConfig::default().auth(auth)).expect("a router");
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let (status, reply) = call_with(addr, "acme/secret", &token("ann", "other", &resource)).await;
    assert_eq!(status, 403, "{reply}");
    assert_eq!(reply["error"]["data"]["requiredScopes"], json!(["acme:secret"]));
    let (status, reply) = call_with(addr, "acme/secret", &token("ann", "acme:secret", &resource)).await;
    assert_eq!((status, reply["result"]["secret"].clone()), (200, json!(42)), "{reply}");
}

#[tokio::test]
async fn a_2025_11_25_session_gets_the_same_methods_unstamped() {
    let server = TestServer::start(server()).await;
    let (session, init) = Legacy::connect(server.addr, json!({ "elicitation": {} })).await;
    assert_eq!(init["capabilities"]["extensions"]["com.acme/search"], json!({ "fuzzy": true }));
    let found = session.call(2, "acme/search", json!({ "query": "owls" })).await;
    assert_eq!(found["result"], json!({ "hits": ["owls#0", "owls#1"] }), "legacy results carry no stamps");
    let hidden = session.call(3, "acme/hidden", json!({})).await;
    assert_eq!(hidden["error"]["code"], -32601);
}

#[tokio::test]
async fn stdio_serves_the_same_methods() {
    let (mut input, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, output) = tokio::io::duplex(1 << 16);
    tokio::spawn(mcp_mrtr::testing::with_own_keys(server()).serve(mcp_mrtr::stdio::Pipe::new(server_in, server_out)));
    let mut lines = BufReader::new(output).lines();
    let meta = mcp_mrtr_tests::harness::meta(json!({}));
    let line =
        json!({ "jsonrpc": "2.0", "id": 7, "method": "acme/search", "params": { "query": "bats", "_meta": meta } });
    input.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    let reply = tokio::time::timeout(client::TIMEOUT, lines.next_line()).await.unwrap().unwrap().unwrap();
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["result"]["hits"], json!(["bats#0", "bats#1"]), "{reply}");
    assert_eq!(reply["result"]["resultType"], "complete");
}

#[test]
fn a_protocol_method_cannot_be_taken() {
    let echo = |name| MethodRoute::new(name, |_ctx, _p: Value| async move { Ok::<_, ToolError>(json!({})) });
    let refused = refusal(Server::new("s", "1").method(echo("tools/call")));
    assert!(refused.contains("\"tools/call\" is one of the protocol's own methods"), "{refused}");
    let refused = refusal(Server::new("s", "1").method(echo("com.acme/x")).method(echo("com.acme/x")));
    assert!(refused.contains("\"com.acme/x\" is registered already"), "{refused}");
}

#[test]
fn extension_settings_are_an_object() {
    let refused = refusal(Server::new("s", "1").declare_extension("com.acme/x", json!(true)));
    assert!(refused.contains("must be a JSON object"), "{refused}");
}

#[tokio::test]
async fn every_mistake_of_the_builder_is_reported_together_when_serving_starts() {
    let tool = |name: &str| {
        Tool::new(name)
            .description("d")
            .handler(|_ctx, _args: serde_json::Map<String, Value>| async { Ok::<_, ToolError>("ok") })
    };
    let built = Server::new("s", "1").tool(tool("twice")).tool(tool("twice")).declare_extension("", json!({}));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let refused = built.serve(mcp_mrtr::http::Http::listener(listener)).await.expect_err("serving must not start");
    // Every problem, each on its own: a caller can list them without parsing a message.
    let mcp_mrtr::serve::ServeError::Misconfigured(problems) = refused else { panic!("{refused:?}") };
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("twice") && problems[1].contains("an extension id cannot be empty"), "{problems:?}");
}

async fn call_with(addr: SocketAddr, method: &str, bearer: &str) -> (u16, Value) {
    let rpc = Rpc::new(method);
    let mut headers = rpc.headers();
    headers.push(("authorization".into(), format!("Bearer {bearer}")));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let response = client::send(addr, "POST", &headers, &rpc.body()).await;
    (response.status, response.reply())
}

fn token(sub: &str, scope: &str, audience: &str) -> String {
    let now = i64::try_from(jsonwebtoken::get_current_timestamp()).unwrap();
    let claims = json!({"sub": sub, "scope": scope, "iss": ISSUER, "aud": audience, "exp": now + 60});
    jsonwebtoken::encode(&Header::default(), &claims, &EncodingKey::from_secret(SECRET.as_bytes()).unwrap()).unwrap()
}
