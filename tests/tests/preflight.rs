//! Capabilities checked before the handler runs, over real HTTP on 127.0.0.1: a tool whose
//! asks a client cannot answer fails with `-32021` before its first side effect, for a
//! 2026-07-28 request and a 2025-11-25 session alike; a handler that branches on
//! `ctx.client_supports` runs and decides for itself.

use std::sync::Mutex;

use mcp_mrtr::prelude::*;
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Value};

/// The texts charged for; each test uses texts of its own, since tests run in parallel.
static CHARGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn charged(text: &str) -> usize {
    CHARGED.lock().unwrap().iter().filter(|t| *t == text).count()
}

/// Charges for a summary, then has the client's model write it.
#[tool]
async fn paid_summary(text: String) -> Result<String, ToolError> {
    CHARGED.lock().unwrap().push(text.clone());
    let summary = ask!(sample format!("Summarise: {text}"))?;
    Ok(summary.text())
}

/// Summarises with the client's model when it has one.
#[tool]
async fn summary(ctx: &Ctx, text: String) -> Result<String, ToolError> {
    if ctx.client_supports(Capability::Sampling) {
        let summary = ask!(sample format!("Summarise: {text}"))?;
        return Ok(summary.text());
    }
    Ok(format!("{} characters", text.len()))
}

/// A prompt that may ask for the user's focus in one branch only: counted all the same.
#[prompt]
async fn review(change: String) -> Result<Vec<PromptMessage>, ToolError> {
    if change.is_empty() {
        let more: Focus = ask!(elicit "What changed?")?;
        return Ok(vec![PromptMessage::user(more.focus)]);
    }
    Ok(vec![PromptMessage::user(format!("Review {change}"))])
}

#[derive(Deserialize, JsonSchema)]
struct Focus {
    focus: String,
}

fn server() -> Server {
    Server::new("preflight", "0").tools(tools![paid_summary, summary]).prompts(prompts![review])
}

fn elicitation_only() -> Value {
    json!({ "elicitation": { "form": {} } })
}

#[tokio::test]
async fn a_tool_that_samples_is_refused_before_its_first_side_effect() {
    let server = TestServer::start(server()).await;
    let call = Rpc::call_tool("paid_summary", json!({ "text": "over http" }));
    let refused = server.send(&call.clone().caps(elicitation_only())).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    let reply = refused.reply();
    assert_eq!(reply["error"]["code"], -32021, "{reply}");
    assert_eq!(reply["error"]["data"]["requiredCapabilities"], json!({ "sampling": {} }));
    assert_eq!(charged("over http"), 0, "the handler ran for a client that cannot sample");

    let asked = server.call(&call.caps(json!({ "sampling": {} }))).await;
    assert_eq!(asked["result"]["inputRequests"]["summary"]["method"], "sampling/createMessage", "{asked}");
    assert_eq!(charged("over http"), 1);
}

#[tokio::test]
async fn a_handler_that_asks_client_supports_decides_for_itself() {
    let server = TestServer::start(server()).await;
    let call = Rpc::call_tool("summary", json!({ "text": "four" })).caps(elicitation_only());
    let done = server.call(&call).await;
    assert_eq!(done["result"]["content"][0]["text"], "4 characters", "{done}");
}

#[tokio::test]
async fn an_ask_in_a_branch_not_taken_still_counts_and_prompts_are_checked_too() {
    let server = TestServer::start(server()).await;
    let get = Rpc::new("prompts/get").param("name", json!("review")).param("arguments", json!({ "change": "x" }));
    let refused = server.send(&get.clone().caps(json!({ "sampling": {} }))).await.reply();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], json!({ "elicitation": { "form": {} } }));
    let answered = server.call(&get.caps(elicitation_only())).await;
    assert_eq!(answered["result"]["messages"][0]["content"]["text"], "Review x", "{answered}");
}

#[tokio::test]
async fn a_2025_11_25_session_that_declared_no_sampling_is_refused_the_same_way() {
    let server = TestServer::start(server()).await;
    let (legacy, _) = Legacy::connect(server.addr, elicitation_only()).await;
    let reply =
        legacy.call(2, "tools/call", json!({ "name": "paid_summary", "arguments": { "text": "legacy" } })).await;
    assert_eq!(reply["error"]["code"], -32021, "{reply}");
    assert_eq!(reply["error"]["data"]["requiredCapabilities"], json!({ "sampling": {} }));
    assert_eq!(charged("legacy"), 0);
}
