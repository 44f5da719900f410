use mcp_mrtr::prelude::*;

/// Asks in a nested function.
#[tool]
async fn outer() -> Result<String, ToolError> {
    async fn inner() -> usize {
        ask!(roots).len()
    }
    Ok(format!("{}", inner().await))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(outer);
}
