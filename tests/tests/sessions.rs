//! The 2025-11-25 session table under a flood of `initialize`, with small limits: fresh
//! sessions make room first and expire on their own, sessions clients use keep working,
//! a session with a call in flight is never pushed out, and one session cannot run more
//! than its share of calls. Behind a load balancer, another instance does not know a
//! session: every message naming it gets 404, and the client initializes again there.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_mrtr::{http::HttpConfig, http::HttpLimits, protocol::Tool, Server, ToolError};
use mcp_mrtr_tests::client::{self, TIMEOUT};
use mcp_mrtr_tests::harness::TestServer;
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Map, Value};

/// A server whose one tool sleeps until the test ends, counting the calls that started.
async fn start(limits: HttpLimits) -> (TestServer, Arc<AtomicUsize>) {
    let started = Arc::new(AtomicUsize::new(0));
    let counter = started.clone();
    let hold = Tool::new("hold").handler(move |_ctx, _: Map<String, Value>| {
        counter.fetch_add(1, Ordering::SeqCst);
        async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, ToolError>("woke up")
        }
    });
    let server = Server::new("sessions", "1").tool(hold);
    (TestServer::start_with(server, HttpConfig::default().limits(limits)).await, started)
}

/// `initialize` by a client that then does nothing: the session id, or the error.
async fn initialize_only(addr: SocketAddr) -> Result<String, Value> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}});
    let response =
        client::send(addr, "POST", &[("content-type", "application/json")], init.to_string().as_bytes()).await;
    response.header("mcp-session-id").map(str::to_owned).ok_or_else(|| response.reply())
}

async fn ping(client: &Legacy) -> u16 {
    client.send(1, "ping", json!({})).await.status
}

async fn until(what: &str, done: impl Fn() -> bool) {
    let wait = async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(TIMEOUT, wait).await.unwrap_or_else(|_| panic!("{what}"));
}

#[tokio::test]
async fn a_flood_of_initialize_locks_out_no_one_and_displaces_no_used_session() {
    let (server, started) = start(HttpLimits::default().max_sessions(4)).await;
    let (busy, _) = Legacy::connect(server.addr, json!({})).await;
    let _call = busy.open(7, "tools/call", json!({"name": "hold", "arguments": {}})).await;
    until("the call starts", || started.load(Ordering::SeqCst) == 1).await;
    let (active, _) = Legacy::connect(server.addr, json!({})).await;
    assert_eq!(ping(&active).await, 200);

    let mut flood = Vec::new();
    for _ in 0..50 {
        flood.push(initialize_only(server.addr).await.expect("initialize during a flood"));
    }
    let (newcomer, _) = Legacy::connect(server.addr, json!({})).await;
    assert_eq!(ping(&newcomer).await, 200, "a new client after the flood");
    assert_eq!(ping(&active).await, 200, "a used session was pushed out by the flood");
    assert_eq!(ping(&busy).await, 200, "a session with a call in flight was pushed out");
    let first = Legacy { addr: server.addr, session: flood[0].clone() };
    assert_eq!(ping(&first).await, 404, "the oldest fresh session should have made room");
}

#[tokio::test]
async fn a_session_that_sends_no_request_expires_and_a_used_one_does_not() {
    // Long enough that a loaded machine still pings `used` before it could expire.
    let limits = HttpLimits::default().fresh_session_timeout(Duration::from_secs(1));
    let (server, _) = start(limits).await;
    let (used, _) = Legacy::connect(server.addr, json!({})).await;
    assert_eq!(ping(&used).await, 200);
    let (fresh, _) = Legacy::connect(server.addr, json!({})).await;
    // A notification does not count as use.
    let initialized = fresh.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!(initialized.status, 202, "{}", initialized.body);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(ping(&fresh).await, 404, "a session unused since initialize outlived its time");
    assert_eq!(ping(&used).await, 200);
}

#[tokio::test]
async fn every_session_busy_refuses_initialize_and_one_session_runs_only_its_share() {
    let limits = HttpLimits::default().max_sessions(1).max_calls_per_session(1);
    let (server, started) = start(limits).await;
    let (busy, _) = Legacy::connect(server.addr, json!({})).await;
    let _call = busy.open(7, "tools/call", json!({"name": "hold", "arguments": {}})).await;
    until("the call starts", || started.load(Ordering::SeqCst) == 1).await;

    let second = busy.send(8, "tools/call", json!({"name": "hold", "arguments": {}})).await;
    assert_eq!(second.status, 200, "{}", second.body);
    let error = &second.reply()["error"];
    assert_eq!(error["code"], -32603, "{error}");
    assert!(error["message"].as_str().unwrap().contains("too many requests running on this session"), "{error}");

    let refused = initialize_only(server.addr).await.expect_err("a table of busy sessions has no room");
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert_eq!(ping(&busy).await, 200);
}

#[tokio::test]
async fn initialize_declaring_too_much_is_refused() {
    let (server, _) = start(HttpLimits::default()).await;
    let huge = json!({"experimental": {"padding": "x".repeat(10_000)}});
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": huge, "clientInfo": {"name": "big", "version": "1"}}});
    let response =
        client::send(server.addr, "POST", &[("content-type", "application/json")], init.to_string().as_bytes()).await;
    assert!(response.header("mcp-session-id").is_none(), "a session was opened");
    assert_eq!(response.reply()["error"]["code"], -32602, "{}", response.body);
}

#[tokio::test]
async fn another_instance_answers_a_session_it_does_not_know_with_404_and_the_client_starts_over() {
    let (a, b) = (TestServer::everything().await, TestServer::everything().await);
    let (on_a, _) = Legacy::connect(a.addr, json!({})).await;
    // The load balancer sends the session's traffic to B, which never saw it.
    let moved = Legacy { addr: b.addr, session: on_a.session.clone() };
    let request = moved.send(7, "tools/list", json!({})).await;
    assert_eq!(request.status, 404, "{}", request.body);
    assert_eq!(request.reply()["id"], 7, "the error names the request");
    let notification = moved.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let answer = moved.post(&json!({"jsonrpc": "2.0", "id": "bridge-1", "result": {}})).await;
    let headers = moved.headers("text/event-stream");
    let stream = client::send(b.addr, "GET", &headers, b"").await;
    let end = client::send(b.addr, "DELETE", &headers, b"").await;
    for (what, response) in [("notification", notification), ("answer", answer), ("GET", stream), ("DELETE", end)] {
        assert_eq!(response.status, 404, "{what}: {}", response.body);
    }
    // B's 404 did not end the session on A, and the client's new session on B works.
    assert_eq!(ping(&on_a).await, 200);
    let (on_b, _) = Legacy::connect(b.addr, json!({})).await;
    assert_ne!(on_b.session, on_a.session);
    let listed = on_b.call(8, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].as_array().is_some_and(|tools| !tools.is_empty()), "{listed}");
}
