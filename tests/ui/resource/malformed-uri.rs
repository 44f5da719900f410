use mcp_mrtr::prelude::*;

/// A template whose variable is never closed.
#[resource(uri = "test://notes/{id")]
async fn notes() -> Result<ResourceContents, ToolError> {
    Ok(ResourceContents::text("test://notes", "text/plain", "notes"))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").resource(notes);
}
