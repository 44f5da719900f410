//! 2025-11-25 sessions hear of changes (issue 49): `initialize` declares `listChanged` and
//! resources' `subscribe` where the server serves changes; a tool added while the session
//! runs is announced on stdio's pipe and on HTTP's `GET` stream, and is then listed and
//! callable; resource updates reach subscribers only. Hosts of that era (Codex CLI, Gemini
//! CLI) re-list on these notifications; before, they never saw a tool added at run time.

use mcp_mrtr::catalog::Subscriptions;
use mcp_mrtr::protocol::PromptMessage;
use mcp_mrtr::protocol::{Resource, ResourceContents, Tool};
use mcp_mrtr::{Ctx, Server, ToolError};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use mcp_mrtr_tests::listen::ListenStream;
use mcp_mrtr_tests::pipe::Pipe;
use mcp_mrtr_tests::schema;
use serde_json::{json, Map, Value};

type NoArgs = Map<String, Value>;

/// A server that serves changes, with a tool that adds the tool `added` (once) and a
/// resource that can be subscribed to.
fn live_server() -> Server {
    let add = Tool::new("add").description("Adds the tool `added`").handler(|ctx: Ctx, _: NoArgs| async move {
        let added = Tool::new("added")
            .description("Added at run time")
            .handler(|_ctx, _: NoArgs| async { Ok::<_, ToolError>("here now") });
        ctx.catalog().tools().add(added).map_err(|e| ToolError::new(e.to_string()))?;
        Ok::<_, ToolError>("added")
    });
    let readme = |uri: &'static str| {
        Resource::new(uri, "doc")
            .handler(move |_ctx| async move { Ok::<_, ToolError>(ResourceContents::text(uri, "text/plain", "v1")) })
    };
    Server::new("live-legacy", "0")
        .subscriptions(Subscriptions::default())
        .tool(add)
        .resource(readme("r://a"))
        .resource(readme("r://b"))
}

fn names(listed: &Value) -> Vec<&str> {
    listed["result"]["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect()
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("a text result: {reply}"))
}

fn legacy_request(id: i64, method: &str, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test]
async fn a_stdio_session_hears_a_tool_added_and_then_lists_and_calls_it() {
    let mut pipe = Pipe::start(live_server());
    let init = pipe
        .round(&legacy_request(
            0,
            "initialize",
            &json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "host", "version": "1"}}),
        ))
        .await;
    schema::assert_valid_legacy_message("initialize", &init);
    let capabilities = &init["result"]["capabilities"];
    assert_eq!(capabilities["tools"], json!({"listChanged": true}), "{init}");
    assert_eq!(capabilities["resources"], json!({"listChanged": true, "subscribe": true}), "{init}");
    pipe.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!(names(&pipe.round(&legacy_request(1, "tools/list", &json!({}))).await), ["add"]);

    pipe.send(&legacy_request(2, "tools/call", &json!({"name": "add", "arguments": {}}))).await;
    // The announcement and the call's answer, in either order.
    let (first, second) = (pipe.next().await, pipe.next().await);
    let (note, reply) = if first.get("id").is_some() { (second, first) } else { (first, second) };
    schema::assert_valid_legacy_message("tools/call", &note);
    assert_eq!(note, json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}));
    assert_eq!(text(&reply), "added");

    assert_eq!(names(&pipe.round(&legacy_request(3, "tools/list", &json!({}))).await), ["add", "added"]);
    let called = pipe.round(&legacy_request(4, "tools/call", &json!({"name": "added", "arguments": {}}))).await;
    assert_eq!(text(&called), "here now");
    pipe.finish().await;
}

#[tokio::test]
async fn an_http_session_hears_changes_on_its_get_stream_and_only_the_updates_it_subscribed_to() {
    let server = live_server();
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    let (session, init) = Legacy::connect(server.addr, json!({})).await;
    assert_eq!(init["capabilities"]["tools"], json!({"listChanged": true}));
    let (mut changes, head) = session.changes().await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: text/event-stream"), "{head}");

    assert_eq!(text(&session.call(1, "tools/call", json!({"name": "add", "arguments": {}})).await), "added");
    let note = changes.next().await.expect("an announcement");
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert_eq!(names(&session.call(2, "tools/list", json!({})).await), ["add", "added"]);
    assert_eq!(text(&session.call(3, "tools/call", json!({"name": "added", "arguments": {}})).await), "here now");

    let subscribed = session.call(4, "resources/subscribe", json!({"uri": "r://a"})).await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    handle.resource_updated("r://b");
    handle.resource_updated("r://a");
    let updated = changes.next().await.expect("an update");
    assert_eq!(updated["params"], json!({"uri": "r://a"}), "r://b was not subscribed to: {updated}");

    session.call(5, "resources/unsubscribe", json!({"uri": "r://a"})).await;
    handle.resource_updated("r://a");
    handle.tools().disable("added");
    let next = changes.next().await.expect("an announcement");
    assert_eq!(next["method"], "notifications/tools/list_changed", "no update after unsubscribing: {next}");
}

#[tokio::test]
async fn a_newer_get_ends_the_older_and_the_end_of_the_session_ends_the_last() {
    let server = TestServer::start(live_server()).await;
    let (session, _) = Legacy::connect(server.addr, json!({})).await;
    let (mut older, _) = session.changes().await;
    let (mut newer, head) = session.changes().await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(older.rest().await, Vec::<Value>::new(), "the older stream ended");

    let headers = session.headers("application/json");
    let deleted = mcp_mrtr_tests::client::send(server.addr, "DELETE", &headers, b"").await;
    assert_eq!(deleted.status, 200);
    assert_eq!(newer.rest().await, Vec::<Value>::new(), "the session's end ended its stream");
}

/// The sixth audit's E6: a newer `GET` ended the older only once admitted, so a session
/// whose client held its whole share of streams (32, `GET`s and listen streams together;
/// every client behind one NAT shares them) was refused its reconnecting `GET` with 503
/// until the server noticed the old stream was dead. A session holds one place now: the
/// newer takes over the older's. A stream of another session still needs a place of its own,
/// and a `GET` on a session that ended is still refused.
#[tokio::test]
async fn a_session_at_its_clients_share_of_streams_reconnects_its_get_and_the_older_ends() {
    let server = live_server();
    let handle = server.catalog();
    let server = TestServer::start(server).await;
    let (session, _) = Legacy::connect(server.addr, json!({})).await;
    let (mut older, head) = session.changes().await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // The rest of the client's share: other hosts' listen streams, behind the same address.
    let listen = Rpc::new("subscriptions/listen").param("notifications", json!({"toolsListChanged": true}));
    let mut others = Vec::new();
    for _ in 1..32 {
        let mut stream = ListenStream::open(server.addr, None, &listen).await;
        assert!(stream.read_until("notifications/subscriptions/acknowledged").await, "{}", stream.seen());
        others.push(stream);
    }
    let (another, _) = Legacy::connect(server.addr, json!({})).await;
    let (_refused, head) = another.changes().await;
    assert!(head.starts_with("HTTP/1.1 503"), "another session's stream needs a place of its own: {head}");

    let (mut newer, head) = session.changes().await;
    assert!(head.starts_with("HTTP/1.1 200"), "the reconnecting GET takes over its older stream's place: {head}");
    assert_eq!(older.rest().await, Vec::<Value>::new(), "the older stream ended");
    handle.tools().disable("add");
    let note = newer.next().await.expect("the newer stream hears changes");
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    let (_refused, head) = another.changes().await;
    assert!(head.starts_with("HTTP/1.1 503"), "the client still holds its whole share: {head}");

    let deleted = mcp_mrtr_tests::client::send(server.addr, "DELETE", &session.headers("application/json"), b"").await;
    assert_eq!(deleted.status, 200);
    assert_eq!(newer.rest().await, Vec::<Value>::new(), "the session's end ended its stream");
    let ended = mcp_mrtr_tests::client::send(server.addr, "GET", &session.headers("text/event-stream")[1..], b"").await;
    assert_eq!(ended.status, 404, "a session that ended has no stream: {}", ended.body);
    let (_admitted, head) = another.changes().await;
    assert!(head.starts_with("HTTP/1.1 200"), "the ended session's place is free: {head}");
}

#[tokio::test]
async fn a_server_that_serves_no_changes_promises_none_and_has_no_get_stream() {
    let quiet =
        Server::new("quiet", "0").tool(Tool::new("t").handler(|_ctx, _: NoArgs| async { Ok::<_, ToolError>("") }));
    let server = TestServer::start(quiet).await;
    let (session, init) = Legacy::connect(server.addr, json!({})).await;
    assert_eq!(init["capabilities"]["tools"], json!({}), "{init}");
    let got = mcp_mrtr_tests::client::send(server.addr, "GET", &session.headers("text/event-stream")[1..], b"").await;
    assert_eq!(got.status, 405, "{}", got.body);
}

/// A stdio session is the pipe's for as long as it lasts: a client that falls behind (it
/// stopped reading while the catalog changed thousands of times) is told that every list
/// may have changed, and hears later changes as before.
#[tokio::test]
async fn a_stdio_session_that_falls_behind_is_told_every_list_changed_and_goes_on() {
    let prompt = mcp_mrtr::protocol::Prompt::new("p").handler(|_ctx, _: mcp_mrtr::handler::PromptArguments| async {
        Ok::<_, ToolError>(Vec::<PromptMessage>::new())
    });
    let server = live_server().prompt(prompt);
    let handle = server.catalog();
    let mut pipe = Pipe::start(server);
    let init = legacy_request(
        0,
        "initialize",
        &json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "host", "version": "1"}}),
    );
    pipe.round(&init).await;
    // Not read meanwhile: the pipe and every queue before it fill.
    for _ in 0..5_000 {
        handle.tools().disable("add");
        handle.tools().enable("add");
    }
    let mut heard = std::collections::BTreeSet::new();
    while !heard.contains("notifications/prompts/list_changed") {
        let note = pipe.next().await;
        heard.insert(note["method"].as_str().expect("a notification").to_owned());
    }
    assert!(heard.contains("notifications/tools/list_changed"), "{heard:?}");
    // Drained (nothing more comes for a while), a later change is heard again.
    while tokio::time::timeout(std::time::Duration::from_millis(300), pipe.next()).await.is_ok() {}
    handle.prompts().disable("p");
    assert_eq!(pipe.next().await["method"], "notifications/prompts/list_changed");
}
