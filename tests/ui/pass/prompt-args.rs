//! A prompt with a required and an optional argument.
use mcp_mrtr::prelude::*;

/// Reviews code.
#[prompt(name = "review", title = "Code review")]
async fn review(
    /// The code to review.
    code: String,
    /// What to focus on.
    focus: Option<String>,
) -> Result<Vec<PromptMessage>, ToolError> {
    let focus = focus.unwrap_or_else(|| "everything".into());
    Ok(vec![PromptMessage::user(format!("Review {code}, focusing on {focus}"))])
}

fn main() {
    let _server = Server::new("ui", "0.0.0").prompts(prompts![review]);
}
