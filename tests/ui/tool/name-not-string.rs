use mcp_mrtr::prelude::*;

/// Name is not a string.
#[tool(name = hello_world)]
async fn hello() -> Result<String, ToolError> {
    Ok("hi".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(hello);
}
