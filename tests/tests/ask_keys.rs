//! The key an ask's answer travels under is part of the wire contract: reshaping the code
//! around an ask must not change it (issue 23: `let target = match ask!(…)` had silently
//! become `ask1`, a position; an ask with no name is now a compile error, see
//! `ui/ask/no-name.rs`). Over HTTP on 127.0.0.1.

use mcp_mrtr::prelude::*;
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Target {
    name: String,
}

/// `let target = ask!(…)?`: the plain shape.
#[tool]
async fn with_question_mark() -> Result<String, ToolError> {
    let target: Target = ask!(elicit "Where to?")?;
    Ok(target.name)
}

/// The same ask, declines handled with `match`.
#[tool]
async fn with_match() -> Result<String, ToolError> {
    let target = match ask!(elicit "Where to?") {
        Ok(Target { name }) => name,
        Err(_declined) => return Ok("staying".into()),
    };
    Ok(target)
}

/// The same ask, declines handled with `if let`.
#[tool]
async fn with_if_let() -> Result<String, ToolError> {
    let target = if let Ok(Target { name }) = ask!(elicit "Where to?") { name } else { "staying".into() };
    Ok(target)
}

#[tokio::test]
async fn the_key_is_the_name_the_let_binds_whatever_the_shape_around_the_ask() {
    let server =
        TestServer::start(Server::new("keys", "0").tools(tools![with_question_mark, with_match, with_if_let])).await;
    for tool in ["with_question_mark", "with_match", "with_if_let"] {
        let reply = server.call(&Rpc::call_tool(tool, json!({}))).await;
        let keys: Vec<&String> = reply["result"]["inputRequests"].as_object().expect("asked").keys().collect();
        assert_eq!(keys, ["target"], "{tool}: {reply}");
    }
}

/// `fresh` before the key, as a newcomer writes it (issue 50: it read as a context named
/// `fresh`, E0425).
#[tool]
async fn fresh_first() -> Result<String, ToolError> {
    let target: Target = ask!(fresh, key = "where", elicit "Where to?")?;
    Ok(target.name)
}

/// `fresh` after the key, as before.
#[tool]
async fn fresh_after() -> Result<String, ToolError> {
    let target: Target = ask!(key = "where", fresh, elicit "Where to?")?;
    Ok(target.name)
}

#[tokio::test]
async fn fresh_and_key_come_in_either_order_and_the_key_is_the_one_given() {
    let server = TestServer::start(Server::new("keys", "0").tools(tools![fresh_first, fresh_after])).await;
    for tool in ["fresh_first", "fresh_after"] {
        let reply = server.call(&Rpc::call_tool(tool, json!({}))).await;
        let keys: Vec<&String> = reply["result"]["inputRequests"].as_object().expect("asked").keys().collect();
        assert_eq!(keys, ["where"], "{tool}: {reply}");
        // Fresh: an answer sent before the question was asked does not count.
        let early = json!({ "where": { "action": "accept", "content": { "name": "Oslo" } } });
        let reply = server.call(&Rpc::call_tool(tool, json!({})).param("inputResponses", early)).await;
        assert_eq!(reply["result"]["resultType"], "input_required", "{tool}: {reply}");
    }
}
