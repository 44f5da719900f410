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
