use mcp_mrtr::prelude::*;

/// A destructured parameter.
#[tool]
async fn add((a, b): (u32, u32)) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(add);
}
