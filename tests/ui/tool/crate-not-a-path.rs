use mcp_mrtr::prelude::*;

/// A crate path that is not a path.
#[tool(crate = "mcp mrtr")]
async fn hello() -> Result<String, ToolError> {
    Ok("hi".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(hello);
}
