//! The HTTP endpoint mounted in an application of its own, at a path of its choosing,
//! with its own host policy.

use mcp_mrtr::http::HttpConfig;
use mcp_mrtr_tests::client;
use mcp_mrtr_tests::harness::Rpc;
use serde_json::Value;

#[tokio::test]
async fn the_router_mounts_beside_the_app_s_own_routes() {
    let mcp = mcp_mrtr::testing::with_own_keys(mcp_mrtr_examples::everything::server())
        .into_router(HttpConfig::default().path("/v1/mcp").allowed_hosts(["api.example.test"]))
        .expect("a router");
    let app = axum::Router::new().route("/health", axum::routing::get(|| async { "ok" })).merge(mcp);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let health = client::send_to(addr, "GET", "/health", &[], b"").await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));

    let rpc = Rpc::new("server/discover");
    let mut headers = rpc.headers();
    headers.push(("host".into(), "api.example.test".into()));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let discovered = client::send_to(addr, "POST", "/v1/mcp", &headers, &rpc.body()).await;
    assert_eq!(discovered.status, 200, "{}", discovered.body);
    assert_eq!(discovered.reply()["result"]["resultType"], Value::from("complete"));

    // The configured host list replaces the loopback default.
    let local = client::send_to(addr, "POST", "/v1/mcp", &headers[..headers.len() - 1], &rpc.body()).await;
    assert_eq!(local.status, 403);
    assert_eq!(client::send_to(addr, "POST", "/mcp", &headers, &rpc.body()).await.status, 404);
    server.abort();
}
