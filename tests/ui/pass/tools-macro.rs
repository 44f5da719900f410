//! `tools![a, b]` registers several tools at once.
use mcp_mrtr::prelude::*;

/// The first tool.
#[tool]
async fn a() -> Result<String, ToolError> {
    Ok("a".into())
}

/// A count, as a structured result (an object, as MCP requires).
#[derive(Serialize, JsonSchema)]
struct Count {
    n: u32,
}

/// The second tool, with structured output.
#[tool(read_only)]
async fn b(n: u32) -> Result<Json<Count>, ToolError> {
    Ok(Json(Count { n }))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tools(tools![a, b]);
}
