use mcp_mrtr::prelude::*;

/// Writes a note; needs a token with both scopes.
#[tool(scopes = ["notes:read", "notes:write"], destructive)]
async fn write_note(title: String) -> Result<String, ToolError> {
    Ok(title)
}

/// A prompt for readers.
#[prompt(scopes = ["notes:read"])]
async fn summarize(topic: String) -> Result<Vec<PromptMessage>, ToolError> {
    Ok(vec![PromptMessage::user(topic)])
}

/// A note.
#[resource(uri = "note://{title}", scopes = ["notes:read"])]
async fn note(title: String) -> Result<ResourceContents, ToolError> {
    Ok(ResourceContents::text(format!("note://{title}"), "text/plain", title))
}

fn main() {
    let _ = Server::new("s", "1").tool(write_note).prompt(summarize).resource(note);
}
