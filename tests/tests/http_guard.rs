//! The HTTP guard on every kind of bind, over real HTTP on 127.0.0.1: a foreign `Origin`
//! is refused whatever the `Host` settings ("any host" never means "any origin"), and a
//! POST that is not `application/json` is refused before its body is read.
//!
//! A server bound to `0.0.0.0` or a LAN address uses `HttpConfig::allow_any_host(true)` (a
//! unit test of `Http`'s choice checks that); here the same configuration
//! is mounted on a loopback listener, so no test listens beyond 127.0.0.1.

use std::net::SocketAddr;

use mcp_mrtr::http::HttpConfig;
use mcp_mrtr_tests::client::{self, HttpResponse};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use serde_json::{json, Value};

/// Serves the fixture with `config` on 127.0.0.1; the task ends with the test.
async fn serve_with(config: HttpConfig) -> SocketAddr {
    let router = mcp_mrtr::testing::with_own_keys(mcp_mrtr_examples::everything::server())
        .into_router(config)
        .expect("a router");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

/// `server/discover` with these extra headers (overriding the defaults).
async fn discover(addr: SocketAddr, extra: &[(&str, &str)]) -> HttpResponse {
    let mut rpc = Rpc::new("server/discover");
    for (name, value) in extra {
        rpc = rpc.header(name, Some(value));
    }
    let headers = rpc.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    client::send(addr, "POST", &headers, &rpc.body()).await
}

/// A refusal: this status, and an id-less JSON-RPC error saying why.
fn assert_refused(response: &HttpResponse, status: u16, why: &str) {
    assert_eq!(response.status, status, "{}", response.body);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let reply: Value = serde_json::from_str(&response.body).expect("a JSON body");
    assert_eq!(reply["jsonrpc"], "2.0");
    assert!(reply.get("id").is_none_or(Value::is_null), "{reply}");
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert!(reply["error"]["message"].as_str().is_some_and(|m| m.contains(why)), "{reply}");
}

#[tokio::test]
async fn any_host_still_refuses_foreign_origins() {
    let addr = serve_with(HttpConfig::default().allow_any_host(true)).await;
    let port = addr.port();
    // DNS rebinding: the attacker's name in Host and Origin alike.
    let rebound = discover(addr, &[("host", "attacker.example"), ("origin", "http://attacker.example")]).await;
    assert_refused(&rebound, 403, "Origin not allowed");
    for origin in ["null", "http://attacker.example:80", "file://", "http://192.168.1.5:3000"] {
        assert_refused(&discover(addr, &[("origin", origin)]).await, 403, "Origin not allowed");
    }
    // Any host, no Origin (not a browser), and pages on this machine, on any port.
    assert_eq!(discover(addr, &[("host", "10.0.0.5:3000")]).await.status, 200);
    for origin in [format!("http://localhost:{port}"), "http://localhost:5173".into(), format!("http://[::1]:{port}")] {
        assert_eq!(discover(addr, &[("origin", &origin)]).await.status, 200, "{origin}");
    }
}

#[tokio::test]
async fn allowed_origins_are_answered_and_only_they() {
    let config = HttpConfig::default().allow_any_host(true).allowed_origins(["https://app.example.com"]);
    let addr = serve_with(config).await;
    assert_eq!(discover(addr, &[("origin", "https://app.example.com")]).await.status, 200);
    assert_refused(&discover(addr, &[("origin", "http://app.example.com")]).await, 403, "Origin not allowed");
    assert_refused(&discover(addr, &[("origin", "https://app.example.com.evil")]).await, 403, "Origin not allowed");
}

#[tokio::test]
async fn the_loopback_default_refuses_foreign_hosts_and_origins_with_a_body() {
    let server = TestServer::everything().await;
    let foreign_host = discover(server.addr, &[("host", "evil.example.com")]).await;
    assert_refused(&foreign_host, 403, "Host not allowed");
    let foreign_origin = discover(server.addr, &[("origin", "http://evil.example.com")]).await;
    assert_refused(&foreign_origin, 403, "Origin not allowed");
    let ipv6 = format!("http://[::1]:{}", server.addr.port());
    assert_eq!(discover(server.addr, &[("origin", &ipv6)]).await.status, 200);
}

#[tokio::test]
async fn posts_that_are_not_json_are_refused_before_the_body_is_read() {
    let server = TestServer::everything().await;
    for content_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        let simple = discover(server.addr, &[("content-type", content_type)]).await;
        assert_refused(&simple, 415, "application/json");
    }
    // A legacy `initialize` needs no MCP header at all: the content type is its guard.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
    let init = init.to_string();
    let text_plain = client::send(server.addr, "POST", &[("content-type", "text/plain")], init.as_bytes()).await;
    assert_refused(&text_plain, 415, "application/json");
    let json = discover(server.addr, &[("content-type", "application/json; charset=utf-8")]).await;
    assert_eq!(json.status, 200, "{}", json.body);
}
