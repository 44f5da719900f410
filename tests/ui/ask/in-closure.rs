use mcp_mrtr::prelude::*;

/// Asks in a closure.
#[tool]
async fn lazy() -> Result<String, ToolError> {
    let roots = || ask!(roots);
    Ok(format!("{}", roots().await.len()))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(lazy);
}
