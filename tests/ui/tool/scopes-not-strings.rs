use mcp_mrtr::prelude::*;

/// Writes a note.
#[tool(scopes = [notes_write])]
async fn write_note() -> Result<String, ToolError> {
    Ok("written".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(write_note);
}
