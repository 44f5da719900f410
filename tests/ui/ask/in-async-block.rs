use mcp_mrtr::prelude::*;

/// Asks in an async block.
#[tool]
async fn later() -> Result<String, ToolError> {
    let roots = async { ask!(roots) };
    Ok(format!("{}", roots.await.len()))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(later);
}
