use mcp_mrtr::prelude::*;

/// Returns something that is not a prompt result.
#[prompt]
async fn review(code: String) -> Result<String, ToolError> {
    Ok(code)
}

fn main() {
    let _server = Server::new("ui", "0.0.0").prompt(review);
}
