use mcp_mrtr::prelude::*;

#[prompt]
async fn review(code: String) -> Result<Vec<PromptMessage>, ToolError> {
    Ok(vec![PromptMessage::user(code)])
}

fn main() {
    let _server = Server::new("ui", "0.0.0").prompt(review);
}
