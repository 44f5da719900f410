use mcp_mrtr::prelude::*;

/// Samples with a misspelt option.
#[tool]
async fn greet() -> Result<String, ToolError> {
    let greeting = ask!(sample "Say hi", max_tokenz = 5);
    Ok(greeting.text())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(greet);
}
