//! Two servers on one real `redis-server`, each serving HTTP on 127.0.0.1 with the Redis
//! change fanout: a tool disabled, enabled or removed through one's `CatalogHandle` is
//! disabled, enabled or removed on the other, and the other's listeners hear of it after
//! it applied the change. With `share_catalog_changes(false)` the edit stays where it
//! was made. The channel is a trust boundary (audit C2): what any other Redis client
//! publishes on it, forged or replayed, changes nothing.

use crate::instance;

use std::net::SocketAddr;

use instance::Redis;
use mcp_mrtr::prelude::*;
use mcp_mrtr::{
    catalog::CatalogHandle, catalog::Subscriptions, request_state::KeyRing, request_state::StateConfig,
    request_state::StateKey,
};
use serde_json::{json, Value};

/// Rolls a service out.
#[tool]
async fn deploy() -> Result<String, ToolError> {
    Ok("deployed".into())
}

/// Says hello.
#[tool]
async fn hello() -> Result<String, ToolError> {
    Ok("hello".into())
}

/// The key ring every instance of the fleet shares, as `MCP_MRTR_STATE_KEYS` gives it.
fn fleet_keys() -> StateConfig {
    StateConfig::new(KeyRing::new(StateKey::parse("fleet:o5WMhaOlbyC4Nt5itdSSUxDZt4b7QPFI4Z65QlesZMw").unwrap()))
}

/// Serves a server on the Redis at `url` on a port of its own, on `runtime`.
fn serve(runtime: &tokio::runtime::Runtime, url: &str, share: bool) -> (CatalogHandle, SocketAddr) {
    let served = runtime.block_on(async {
        let redis = mcp_mrtr::redis::Redis::connect(url).await.expect("redis");
        let fanout = redis.change_fanout().await.expect("a change fanout");
        let listen = Subscriptions::default().fanout(fanout).share_catalog_changes(share);
        let server =
            Server::new("deploys", "1").tools(tools![deploy, hello]).subscriptions(listen).request_state(fleet_keys());
        let handle = server.catalog();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(server.serve(mcp_mrtr::http::Http::listener(listener)));
        (handle, addr)
    });
    // Serving starts the relay that shares this instance's edits: an edit made before the
    // spawned task got that far would stay on this instance, so wait for an answer.
    let (handle, addr) = served;
    let _ = tool_names(addr);
    (handle, addr)
}

fn rpc(addr: SocketAddr, method: &str, params: Value) -> Value {
    instance::call(addr, &instance::request(method, params, &json!({})))
}

fn tool_names(addr: SocketAddr) -> Vec<String> {
    let listed = rpc(addr, "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
    tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

fn calls(addr: SocketAddr, tool: &str) -> bool {
    rpc(addr, "tools/call", json!({ "name": tool, "arguments": {} }))["result"]["content"][0]["text"].is_string()
}

/// A listen stream on `addr` for tool list changes, past its acknowledgement.
fn listen(addr: SocketAddr) -> (std::net::TcpStream, String) {
    let request =
        instance::request("subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }), &json!({}));
    let mut stream = instance::open(addr, &request);
    let mut seen = String::new();
    instance::read_until(&mut stream, &mut seen, "notifications/subscriptions/acknowledged");
    (stream, seen)
}

/// Reads `stream` until it carried `n` tool list changes since it opened.
fn heard(stream: &mut std::net::TcpStream, seen: &mut String, n: usize) {
    use std::io::Read as _;
    let mut buf = [0u8; 4096];
    while seen.matches("notifications/tools/list_changed").count() < n {
        let read = stream.read(&mut buf).expect("the stream kept talking");
        assert!(read > 0, "the stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..read]));
    }
}

#[test]
fn a_tool_disabled_enabled_or_removed_on_one_instance_is_so_on_every_instance() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (a, a_addr) = serve(&runtime, &redis.url(), true);
    let (_b, b_addr) = serve(&runtime, &redis.url(), true);
    let (mut stream, mut seen) = listen(b_addr);

    assert!(a.tools().disable("deploy"));
    heard(&mut stream, &mut seen, 1);
    // B's listener heard of it after B applied it: listing on B now shows the change.
    assert_eq!(tool_names(b_addr), ["hello"]);
    assert!(!calls(b_addr, "deploy"), "B serves it no more");
    assert_eq!(tool_names(a_addr), ["hello"]);

    assert!(a.tools().enable("deploy"));
    heard(&mut stream, &mut seen, 2);
    assert_eq!(tool_names(b_addr), ["deploy", "hello"], "back in its place");
    assert!(calls(b_addr, "deploy"));

    assert!(a.tools().remove("hello"));
    heard(&mut stream, &mut seen, 3);
    assert_eq!(tool_names(b_addr), ["deploy"]);
}

#[test]
fn an_instance_that_does_not_share_keeps_its_edits_to_itself() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (a, a_addr) = serve(&runtime, &redis.url(), false);
    let (_b, b_addr) = serve(&runtime, &redis.url(), false);
    let (mut stream, mut seen) = listen(b_addr);

    assert!(a.tools().disable("deploy"));
    // B still hears that a list changed somewhere (as before), but its catalog stays.
    heard(&mut stream, &mut seen, 1);
    assert_eq!(tool_names(a_addr), ["hello"]);
    assert_eq!(tool_names(b_addr), ["deploy", "hello"]);
    assert!(calls(b_addr, "deploy"));
}

/// Audit C2: a catalog edit published by any Redis client, in the format instances once
/// sent unsigned, disabled a tool on every instance. Now only what an instance sealed
/// applies, once: a forgery and a replay of a genuine edit both change nothing.
#[test]
fn edits_that_no_instance_sealed_or_that_were_heard_before_change_nothing() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (a, _) = serve(&runtime, &redis.url(), true);
    let (_b, b_addr) = serve(&runtime, &redis.url(), true);
    let (mut stream, mut seen) = listen(b_addr);
    let mut channel = redis.subscribe("mcp-mrtr:changes");

    redis.publish("mcp-mrtr:changes", "edit 0000000000000001 tool disable deploy");
    assert_eq!(channel.next(), "edit 0000000000000001 tool disable deploy");
    // A genuine edit after it: once B's listener hears it, B has read the forgery too.
    assert!(a.tools().disable("hello"));
    let genuine = channel.next();
    heard(&mut stream, &mut seen, 1);
    assert_eq!(tool_names(b_addr), ["deploy"], "the forgery disabled nothing");
    assert!(calls(b_addr, "deploy"));
    assert!(genuine.starts_with("sealed1 fleet ") && genuine.ends_with(" tool disable hello"), "{genuine}");

    assert!(a.tools().enable("hello"));
    heard(&mut stream, &mut seen, 2);
    // The genuine `disable hello`, published again by someone who recorded it.
    redis.publish("mcp-mrtr:changes", &genuine);
    assert!(a.tools().disable("deploy"));
    heard(&mut stream, &mut seen, 3);
    assert_eq!(tool_names(b_addr), ["hello"], "the replay disabled hello again");
    assert!(calls(b_addr, "hello"));
}

/// The fifth audit's D5: a genuine edit recorded before an instance started, published
/// again to it within the minute a message stays fresh, changes nothing there (it was
/// sent to the instances of its time, and this one has not heard its sender since).
#[test]
fn an_edit_sealed_before_an_instance_started_does_not_reach_it_replayed() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (a, _) = serve(&runtime, &redis.url(), true);
    let mut channel = redis.subscribe("mcp-mrtr:changes");
    assert!(a.tools().disable("hello"));
    let recorded = channel.next();
    assert!(a.tools().enable("hello"));
    assert!(channel.next().ends_with(" tool enable hello"));
    // Past the second a sender's clock may lag by, an instance starts.
    std::thread::sleep(std::time::Duration::from_millis(1_200));
    let (_c, c_addr) = serve(&runtime, &redis.url(), true);
    let (mut stream, mut seen) = listen(c_addr);

    redis.publish("mcp-mrtr:changes", &recorded);
    // A genuine edit after it: once C's listener hears it, C has read the replay too.
    assert!(a.tools().disable("deploy"));
    heard(&mut stream, &mut seen, 1);
    assert_eq!(tool_names(c_addr), ["hello"], "the replay disabled hello on the new instance");
    assert!(calls(c_addr, "hello"));
}

/// A host of the 2025 era on instance B hears, on its session's `GET` stream, an edit made
/// on instance A (issue 49), and its next list and call on B see it.
#[test]
fn a_2025_session_on_one_instance_hears_an_edit_made_on_another() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (a, _) = serve(&runtime, &redis.url(), true);
    let (_b, b_addr) = serve(&runtime, &redis.url(), true);
    let session = instance::LegacySession::open(b_addr, "2025-06-18");
    let mut stream = session.send("GET", "");
    let mut seen = String::new();
    instance::read_until(&mut stream, &mut seen, "\r\n\r\n");
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let call =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "deploy", "arguments": {}}});

    assert!(a.tools().disable("deploy"));
    heard(&mut stream, &mut seen, 1);
    let (_, listed) = session.exchange("POST", &list);
    assert!(!listed.contains("\"deploy\""), "B lists it no more: {listed}");

    assert!(a.tools().enable("deploy"));
    heard(&mut stream, &mut seen, 2);
    let (_, listed) = session.exchange("POST", &list);
    assert!(listed.contains("\"deploy\""), "{listed}");
    let (_, called) = session.exchange("POST", &call.to_string());
    assert!(called.contains("deployed"), "{called}");
}

#[test]
fn an_edit_made_before_serving_starts_travels_when_it_does() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (_b, b_addr) = serve(&runtime, &redis.url(), true);
    let (mut stream, mut seen) = listen(b_addr);

    // Instance A, built and edited at start-up, before it serves: its fanout has no keys
    // to seal the edit with yet, so the edit waits for serving to start.
    let (a, a_addr) = runtime.block_on(async {
        let redis = mcp_mrtr::redis::Redis::connect(redis.url().as_str()).await.expect("redis");
        let listen = Subscriptions::default().fanout(redis.change_fanout().await.expect("a change fanout"));
        let server =
            Server::new("deploys", "1").tools(tools![deploy, hello]).subscriptions(listen).request_state(fleet_keys());
        let handle = server.catalog();
        assert!(handle.tools().disable("deploy"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(server.serve(mcp_mrtr::http::Http::listener(listener)));
        (handle, addr)
    });
    assert_eq!(tool_names(a_addr), ["hello"]);
    heard(&mut stream, &mut seen, 1);
    assert_eq!(tool_names(b_addr), ["hello"], "the edit reached B once A served");
    drop(a);
}
