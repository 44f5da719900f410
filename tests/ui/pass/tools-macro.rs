//! `tools![a, b]` registers several tools at once.
use mcp_mrtr::prelude::*;

/// The first tool.
#[tool]
async fn a() -> Result<String, ToolError> {
    Ok("a".into())
}

/// The second tool, with structured output.
#[tool(read_only)]
async fn b(n: u32) -> Result<Json<u32>, ToolError> {
    Ok(Json(n))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tools(tools![a, b]);
}
