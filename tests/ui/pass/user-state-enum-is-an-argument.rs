//! A user's own `enum State` (no generic argument, so not the shape of mcp_mrtr's
//! `State<T>`) is an argument of the call, and is in the input schema.
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::TestClient;

#[derive(Debug, Deserialize, JsonSchema)]
enum State {
    Open,
    Closed,
}

/// Sets a ticket's state.
#[tool]
async fn set_state(state: State) -> Result<String, ToolError> {
    Ok(format!("{state:?}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let client = TestClient::new(Server::new("ui", "0.0.0").tool(set_state));
    let tools = client.list_tools().await.unwrap();
    let input = &tools[0].input_schema;
    assert!(input["properties"].get("state").is_some(), "{input:?}");
    assert_eq!(input["required"], serde_json::json!(["state"]));
    let done = client.call_tool("set_state", serde_json::json!({ "state": "Closed" })).start().await;
    assert_eq!(done.text().as_deref(), Some("Closed"));
    let _ = State::Open;
}
