//! `#[mcp(arg)]` takes a user's own `State<T>`, which has the shape of mcp_mrtr's, as an
//! argument of the call.
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::TestClient;

/// A workflow step's state, generic over its payload.
#[derive(Deserialize, JsonSchema)]
struct State<T> {
    step: T,
}

/// Advances a workflow.
#[tool]
async fn advance(#[mcp(arg)] state: State<u32>) -> Result<String, ToolError> {
    Ok((state.step + 1).to_string())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let client = TestClient::new(Server::new("ui", "0.0.0").tool(advance));
    let tools = client.list_tools().await.unwrap();
    assert!(tools[0].input_schema["properties"].get("state").is_some());
    let done = client.call_tool("advance", serde_json::json!({ "state": { "step": 1 } })).start().await;
    assert_eq!(done.text().as_deref(), Some("2"));
}
