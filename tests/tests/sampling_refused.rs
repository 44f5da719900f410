//! A sampling request the client refused is a value the handler sees (issue 50), as a
//! declined form is: a 2025-11-25 host answering `sampling/createMessage` with an error
//! (what hosts send when the user rejects it) and a 2026-07-28 client putting that error in
//! `inputResponses` both reach the handler's fallback. An answer that is neither a result nor
//! a refusal fails the call after one round (it was asked again until the round cap).

use mcp_mrtr::prelude::*;
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Value};

/// Summarises a text with the client's model, or falls back on its first sentence.
#[tool]
async fn summarize(text: String) -> Result<String, ToolError> {
    match ask!(key = "summary", sample format!("Summarize: {text}")) {
        Ok(summary) => Ok(format!("model: {}", summary.text())),
        Err(refused) => Ok(format!("fallback ({}): {}", refused.message, text.split('.').next().unwrap_or_default())),
    }
}

/// Summarises, refusal or not, through `?`.
#[tool]
async fn summarize_or_fail(text: String) -> Result<String, ToolError> {
    Ok(ask!(key = "summary", sample format!("Summarize: {text}"))?.text())
}

fn server() -> Server {
    Server::new("sampling", "1").tools(tools![summarize, summarize_or_fail])
}

fn call(tool: &str) -> Rpc {
    Rpc::call_tool(tool, json!({ "text": "First. Second." })).caps(json!({ "sampling": {} }))
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("a text result: {reply}"))
}

#[tokio::test]
async fn a_refusal_in_input_responses_reaches_the_fallback() {
    let server = TestServer::start(server()).await;
    for refusal in [
        json!({ "error": { "code": -1, "message": "User rejected sampling request" } }),
        json!({ "code": -1, "message": "User rejected sampling request" }),
    ] {
        let reply = server.call(&call("summarize").param("inputResponses", json!({ "summary": refusal }))).await;
        assert_eq!(text(&reply), "fallback (User rejected sampling request): First", "{reply}");
    }
    let refused = json!({ "summary": { "error": { "code": -1, "message": "no" } } });
    let through = server.call(&call("summarize_or_fail").param("inputResponses", refused)).await;
    assert_eq!(through["result"]["isError"], true, "through `?`, a tool error the model reads: {through}");
    assert_eq!(text(&through), "the client refused the sampling request: no");
    // A real answer still reads as one.
    let answer =
        json!({ "summary": { "role": "assistant", "content": { "type": "text", "text": "short" }, "model": "m" } });
    assert_eq!(text(&server.call(&call("summarize").param("inputResponses", answer)).await), "model: short");
}

#[tokio::test]
async fn an_answer_that_is_neither_is_an_error_at_once() {
    let server = TestServer::start(server()).await;
    for junk in [json!({ "role": 5 }), json!("yes"), json!({ "error": "no" })] {
        let reply = server.call(&call("summarize").param("inputResponses", json!({ "summary": junk }))).await;
        assert_eq!(reply["error"]["code"], -32602, "{junk}: {reply}");
        assert!(reply["error"]["message"].as_str().unwrap().contains("summary"), "names the key: {reply}");
    }
}

#[tokio::test]
async fn a_2025_host_that_rejects_the_sampling_request_gets_the_fallback() {
    let server = TestServer::start(server()).await;
    let (legacy, _) = Legacy::connect(server.addr, json!({ "sampling": {} })).await;
    let mut stream =
        legacy.open(1, "tools/call", json!({ "name": "summarize", "arguments": { "text": "First. Second." } })).await;
    let asked = stream.next().await.expect("the bridge asks");
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    let rejected = json!({ "jsonrpc": "2.0", "id": asked["id"], "error": { "code": -1, "message": "User rejected sampling request" } });
    assert_eq!(legacy.post(&rejected).await.status, 202);
    let done = stream.next().await.expect("the call's result");
    assert_eq!(text(&done), "fallback (User rejected sampling request): First", "{done}");
}
