use mcp_mrtr::prelude::*;

/// Not async.
#[tool]
fn hello() -> Result<String, ToolError> {
    Ok("hi".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(hello);
}
