//! The 2025-11-25 bridge over real HTTP, at its edges: a client cancelling a call while
//! the bridge waits on it, a question nobody answers, and url elicitations whose
//! out-of-band step the handler reports done.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_mrtr::question::{Elicit, ElicitUrl};
use mcp_mrtr::{protocol::Tool, Server, ToolError};
use mcp_mrtr_tests::client::{self, TIMEOUT};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::sync::Notify;

type Args = Map<String, Value>;

/// A yes/no form.
#[derive(Deserialize, schemars::JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Fires its `Notify` when dropped: proof that a handler's future is gone.
struct DropSignal(Arc<Notify>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// Counts its runs, asks two questions in turn, and answers with both.
fn two_questions(runs: Arc<AtomicUsize>) -> mcp_mrtr::ToolRoute {
    Tool::new("two_questions").handler(move |ctx, _: Args| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let first = ctx.ask("first", Elicit::<Confirm>::new("First?")).await?;
            let second = ctx.ask("second", Elicit::<Confirm>::new("Second?")).await?;
            Ok::<_, ToolError>(format!("{} {}", first.ok, second.ok))
        }
    })
}

/// Never finishes on its own; says when it starts and when it is dropped.
fn forever(started: Arc<Notify>, dropped: Arc<Notify>) -> mcp_mrtr::ToolRoute {
    Tool::new("forever").handler(move |_ctx, _: Args| {
        let signal = DropSignal(dropped.clone());
        started.notify_one();
        async move {
            let _signal = signal;
            std::future::pending::<()>().await;
            Ok::<_, ToolError>("never")
        }
    })
}

/// Asks the user to connect an account at a URL, waits for the (simulated) out-of-band
/// step, then reports the url elicitation complete.
fn connect(connected: Arc<Notify>) -> mcp_mrtr::ToolRoute {
    Tool::new("connect").handler(move |ctx, _: Args| {
        let connected = connected.clone();
        async move {
            ctx.ask("consent", ElicitUrl::new("Connect your account", "https://example.com/connect")).await?;
            connected.notified().await;
            ctx.complete_url_elicitation("consent").await;
            Ok::<_, ToolError>("connected")
        }
    })
}

fn elicitation() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}})
}

async fn ask_first(legacy: &Legacy, id: i64, tool: &str) -> (mcp_mrtr_tests::legacy::Stream, Value) {
    let mut stream = legacy.open(id, "tools/call", json!({"name": tool, "arguments": {}})).await;
    let asked = stream.next().await.expect("the bridge asks");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    (stream, asked)
}

#[tokio::test]
async fn a_cancelled_call_sends_nothing_more_and_a_late_answer_is_ignored() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = TestServer::start(Server::new("bridge", "1").tool(two_questions(runs.clone()))).await;
    let (legacy, _) = Legacy::connect(server.addr, elicitation()).await;
    let (mut stream, asked) = ask_first(&legacy, 5, "two_questions").await;

    let cancelled = legacy.cancel(5).await;
    assert_eq!(cancelled.status, 202);
    // No response, no further request: the stream just ends.
    assert_eq!(stream.rest().await, Vec::<Value>::new());
    // The answer to the withdrawn question arrives late: accepted and ignored.
    legacy.answer(&asked, json!({"action": "accept", "content": {"ok": true}})).await;
    assert_eq!(legacy.call(6, "ping", json!({})).await["result"], json!({}));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the late answer replayed a cancelled call");
    // The session serves the same tool afresh.
    let (_, again) = ask_first(&legacy, 7, "two_questions").await;
    assert_ne!(again["id"], asked["id"]);
}

#[tokio::test]
async fn cancelling_stops_a_running_handler_and_unknown_ids_are_ignored() {
    let (started, dropped) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let server = TestServer::start(Server::new("bridge", "1").tool(forever(started.clone(), dropped.clone()))).await;
    let (legacy, _) = Legacy::connect(server.addr, json!({})).await;
    assert_eq!(legacy.cancel(99).await.status, 202, "nothing runs under id 99");

    let mut stream = legacy.open(1, "tools/call", json!({"name": "forever", "arguments": {}})).await;
    tokio::time::timeout(TIMEOUT, started.notified()).await.expect("the handler runs");
    assert_eq!(legacy.cancel(1).await.status, 202);
    tokio::time::timeout(TIMEOUT, dropped.notified()).await.expect("the handler was dropped");
    assert_eq!(stream.rest().await, Vec::<Value>::new());
    // Cancelling a request that is no longer running changes nothing.
    assert_eq!(legacy.cancel(1).await.status, 202);
    assert_eq!(legacy.call(2, "ping", json!({})).await["result"], json!({}));
}

#[tokio::test]
async fn an_unanswered_question_expires_with_a_clear_error() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::new("bridge", "1").tool(two_questions(runs)).bridge_answer_timeout(Duration::from_millis(300));
    let server = TestServer::start(server).await;
    let (legacy, _) = Legacy::connect(server.addr, elicitation()).await;
    let (mut stream, asked) = ask_first(&legacy, 5, "two_questions").await;

    let withdrawn = stream.next().await.expect("the question is withdrawn");
    assert_eq!(withdrawn["method"], "notifications/cancelled", "{withdrawn}");
    assert_eq!(withdrawn["params"]["requestId"], asked["id"]);
    let failed = stream.next().await.expect("the call fails");
    assert_eq!((failed["id"].clone(), failed["error"]["code"].clone()), (json!(5), json!(-32603)), "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("elicitation/create") && message.contains("expired"), "{message}");
    assert_eq!(failed["error"]["data"], json!({"method": "elicitation/create", "timeoutMs": 300}));
    assert_eq!(stream.next().await, None);
    legacy.answer(&asked, json!({"action": "decline"})).await;
    assert_eq!(legacy.call(6, "ping", json!({})).await["result"], json!({}));
}

#[tokio::test]
async fn a_url_elicitation_completes_with_the_id_the_bridge_issued() {
    let connected = Arc::new(Notify::new());
    let server = TestServer::start(Server::new("bridge", "1").tool(connect(connected.clone()))).await;
    let (legacy, _) = Legacy::connect(server.addr, elicitation()).await;
    let (mut stream, asked) = ask_first(&legacy, 5, "connect").await;
    assert_eq!(asked["params"]["mode"], "url");
    let elicitation_id = asked["params"]["elicitationId"].as_str().expect("an elicitationId").to_owned();
    assert!(!elicitation_id.contains(&legacy.session), "the id reveals the session: {elicitation_id}");

    legacy.answer(&asked, json!({"action": "accept"})).await;
    connected.notify_one();
    let complete = stream.next().await.expect("the completion notification");
    assert_eq!(complete["method"], "notifications/elicitation/complete", "{complete}");
    assert_eq!(complete["params"], json!({"elicitationId": elicitation_id}));
    let done = stream.next().await.expect("the result");
    assert_eq!(done["result"]["content"][0]["text"], "connected", "{done}");

    // Each url elicitation gets an id of its own.
    let (_, again) = ask_first(&legacy, 6, "connect").await;
    assert_ne!(again["params"]["elicitationId"], json!(elicitation_id));
}

#[tokio::test]
async fn a_modern_client_gets_no_completion_notification() {
    let connected = Arc::new(Notify::new());
    let server = TestServer::start(Server::new("bridge", "1").tool(connect(connected.clone()))).await;
    let call = Rpc::call_tool("connect", json!({})).caps(elicitation());
    let round1 = server.call(&call).await["result"].clone();
    assert_eq!(round1["resultType"], "input_required");
    assert!(round1["inputRequests"]["consent"]["params"].get("elicitationId").is_none(), "{round1}");
    connected.notify_one();
    let retry = call
        .param("inputResponses", json!({"consent": {"action": "accept"}}))
        .param("requestState", round1["requestState"].clone());
    let response = server.send(&retry).await;
    assert_eq!(response.messages().len(), 1, "only the result: {}", response.body);
    assert_eq!(response.reply()["result"]["content"][0]["text"], "connected");
}

#[tokio::test]
async fn ending_a_session_cancels_its_calls() {
    let (started, dropped) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let server = TestServer::start(Server::new("bridge", "1").tool(forever(started.clone(), dropped.clone()))).await;
    let (legacy, _) = Legacy::connect(server.addr, json!({})).await;
    let mut stream = legacy.open(1, "tools/call", json!({"name": "forever", "arguments": {}})).await;
    tokio::time::timeout(TIMEOUT, started.notified()).await.expect("the handler runs");
    let deleted = client::send(server.addr, "DELETE", &legacy.headers("application/json"), b"").await;
    assert_eq!(deleted.status, 200);
    tokio::time::timeout(TIMEOUT, dropped.notified()).await.expect("the handler was dropped");
    assert_eq!(stream.rest().await, Vec::<Value>::new());
}

#[tokio::test]
async fn an_unbounded_answer_timeout_still_serves_the_bridge() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::new("bridge", "1").tool(two_questions(runs)).bridge_answer_timeout(Duration::MAX);
    let server = TestServer::start(server).await;
    let (legacy, _) = Legacy::connect(server.addr, elicitation()).await;
    let (mut stream, first) = ask_first(&legacy, 5, "two_questions").await;
    legacy.answer(&first, json!({"action": "accept", "content": {"ok": true}})).await;
    let second = stream.next().await.expect("the second question");
    legacy.answer(&second, json!({"action": "accept", "content": {"ok": false}})).await;
    let done = stream.next().await.expect("the result");
    assert_eq!(done["result"]["content"][0]["text"], "true false", "{done}");
}

#[tokio::test]
async fn an_answer_reaches_only_the_session_that_was_asked() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = TestServer::start(Server::new("bridge", "1").tool(two_questions(runs))).await;
    let (alice, _) = Legacy::connect(server.addr, elicitation()).await;
    let (mallory, _) = Legacy::connect(server.addr, elicitation()).await;
    let (mut stream, first) = ask_first(&alice, 5, "two_questions").await;

    // The same request id, POSTed on another session: accepted there, and it reaches nothing.
    mallory.answer(&first, json!({"action": "accept", "content": {"ok": false}})).await;
    // A response outside any session is refused; one to an id nobody asked is ignored.
    let stray = json!({"jsonrpc": "2.0", "id": first["id"], "result": {"action": "decline"}}).to_string();
    let headers = [("content-type", "application/json"), ("mcp-protocol-version", "2025-11-25")];
    let no_session = client::send(server.addr, "POST", &headers, stray.as_bytes()).await;
    assert_eq!(no_session.status, 400);
    alice.answer(&json!({"id": 987_654}), json!({"action": "decline"})).await;

    // Alice's question is still open: her own answer moves the call on.
    alice.answer(&first, json!({"action": "accept", "content": {"ok": true}})).await;
    let second = stream.next().await.expect("the second question");
    assert_eq!(second["params"]["message"], "Second?", "{second}");
    alice.answer(&second, json!({"action": "accept", "content": {"ok": true}})).await;
    let done = stream.next().await.expect("the result");
    assert_eq!(done["result"]["content"][0]["text"], "true true", "{done}");
}
