//! Capabilities checked before the handler runs, over real HTTP on 127.0.0.1: a tool whose
//! asks a client cannot answer fails with `-32021` before its first side effect, for a
//! 2026-07-28 request and a 2025-11-25 session alike; an ask behind a condition or an
//! early return is checked only when it is reached; a handler that branches on
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

/// A prompt that asks for the user's focus in one branch only: checked when that branch
/// asks, so a client without forms still gets the prompt when `change` is given.
#[prompt]
async fn review(change: String) -> Result<Vec<PromptMessage>, ToolError> {
    if change.is_empty() {
        let more: Focus = ask!(elicit "What changed?")?;
        return Ok(vec![PromptMessage::user(more.focus)]);
    }
    Ok(vec![PromptMessage::user(format!("Review {change}"))])
}

/// Files an expense: a form confirms only large amounts, then the receipt's text is
/// summarised by the client's model on every path (the newcomer's expenses server).
#[tool]
async fn file_expense(cents: u64, receipt: String) -> Result<String, ToolError> {
    if cents > 10_000 {
        let confirmed: Confirm = ask!(elicit format!("File {cents} cents?"))?;
        if !confirmed.confirm {
            // A failure, as `?` is: the sampling below is still on every successful path.
            return Err(ToolError::new("not confirmed"));
        }
    }
    CHARGED.lock().unwrap().push(receipt.clone());
    let summary = ask!(sample format!("Summarise the receipt: {receipt}"))?;
    Ok(format!("filed: {}", summary.text()))
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    confirm: bool,
}

/// Returns early on success before its ask: the ask is not on every path.
#[tool]
async fn maybe_roots(skip: bool) -> Result<String, ToolError> {
    if skip {
        return Ok("skipped".into());
    }
    let roots = ask!(roots);
    Ok(format!("{} roots", roots.len()))
}

#[derive(Deserialize, JsonSchema)]
struct Focus {
    focus: String,
}

fn server() -> Server {
    Server::new("preflight", "0")
        .tools(tools![paid_summary, summary, file_expense, maybe_roots])
        .prompts(prompts![review])
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
async fn an_ask_in_a_branch_not_taken_does_not_refuse_the_call() {
    let server = TestServer::start(server()).await;
    // A client that cannot answer forms gets the prompt when the branch that asks is not
    // taken, and is refused only when it is, at the ask.
    let get = Rpc::new("prompts/get").param("name", json!("review"));
    let sampling_only = json!({ "sampling": {} });
    let given = get.clone().param("arguments", json!({ "change": "x" })).caps(sampling_only.clone());
    let answered = server.call(&given).await;
    assert_eq!(answered["result"]["messages"][0]["content"]["text"], "Review x", "{answered}");
    let asking = get.param("arguments", json!({ "change": "" })).caps(sampling_only);
    let refused = server.send(&asking).await.reply();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], json!({ "elicitation": { "form": {} } }));
}

#[tokio::test]
async fn asks_on_every_path_are_still_checked_up_front_beside_conditional_ones() {
    let server = TestServer::start(server()).await;
    // A small expense on a client without forms: the form is never asked, the sampling is.
    let small = Rpc::call_tool("file_expense", json!({ "cents": 450, "receipt": "small" }));
    let asked = server.call(&small.clone().caps(json!({ "sampling": {} }))).await;
    assert_eq!(asked["result"]["inputRequests"]["summary"]["method"], "sampling/createMessage", "{asked}");
    assert_eq!(charged("small"), 1);
    // Sampling is on every path: a client without it is refused before the handler runs,
    // and is told only what the call needs on every path.
    let no_sampling = Rpc::call_tool("file_expense", json!({ "cents": 450, "receipt": "unsampled" }));
    let refused = server.send(&no_sampling.caps(elicitation_only())).await.reply();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], json!({ "sampling": {} }));
    assert_eq!(charged("unsampled"), 0, "the handler ran for a client that cannot sample");
}

#[tokio::test]
async fn an_ask_after_an_early_successful_return_is_checked_where_it_is_reached() {
    let server = TestServer::start(server()).await;
    let skip = server.call(&Rpc::call_tool("maybe_roots", json!({ "skip": true })).caps(json!({}))).await;
    assert_eq!(skip["result"]["content"][0]["text"], "skipped", "{skip}");
    let reach = server.send(&Rpc::call_tool("maybe_roots", json!({ "skip": false })).caps(json!({}))).await.reply();
    assert_eq!(reach["error"]["code"], -32021, "{reach}");
    assert_eq!(reach["error"]["data"]["requiredCapabilities"], json!({ "roots": {} }));
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
