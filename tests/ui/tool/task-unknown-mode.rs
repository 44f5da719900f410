use mcp_mrtr::prelude::*;

/// A task mode that does not exist.
#[tool(task = "sometimes")]
async fn hello() -> Result<String, ToolError> {
    Ok("hi".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(hello);
}
