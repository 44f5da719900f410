use mcp_mrtr::prelude::*;

/// Asks something that is not a question kind.
#[tool]
async fn loud() -> Result<String, ToolError> {
    let answer = ask!(shout "x");
    Ok(format!("{answer:?}"))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(loud);
}
