use mcp_mrtr::prelude::*;

/// The user's own `State<T>`, meant as an argument: read as mcp_mrtr's by its shape.
#[derive(Deserialize, JsonSchema)]
struct State<T> {
    step: T,
}

/// Advances a workflow.
#[tool]
async fn advance(state: State<u32>) -> Result<String, ToolError> {
    Ok(state.step.to_string())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(advance);
}
