//! `#[mcp(arg)]` takes a user's own `Ctx` as an argument of the call, not as the context.
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::TestClient;

mod own {
    /// The user's own context type: an argument.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Ctx {
        pub depth: u8,
    }
}

use own::Ctx;

/// Searches to some depth.
#[tool]
async fn search(#[mcp(arg)] ctx: Ctx) -> Result<String, ToolError> {
    Ok(ctx.depth.to_string())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let client = TestClient::new(Server::new("ui", "0.0.0").tool(search));
    let done = client.call_tool("search", serde_json::json!({ "ctx": { "depth": 3 } })).start().await;
    assert_eq!(done.text().as_deref(), Some("3"));
}
