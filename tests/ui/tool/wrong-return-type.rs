use mcp_mrtr::prelude::*;

/// Returns something that is not a tool result.
#[tool]
async fn count() -> Result<u32, ToolError> {
    Ok(3)
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(count);
}
