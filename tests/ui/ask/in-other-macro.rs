use mcp_mrtr::prelude::*;

/// Asks inside format!.
#[tool]
async fn greet() -> Result<String, ToolError> {
    Ok(format!("The model says {}", ask!(sample "Say hi").text()))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(greet);
}
