//! A resource template whose parameter is a uri variable, and a static resource.
use mcp_mrtr::prelude::*;

/// One item, by id.
#[resource(uri = "test://x/{id}", mime_type = "text/plain")]
async fn item(id: String) -> Result<ResourceContents, ToolError> {
    Ok(ResourceContents::text(format!("test://x/{id}"), "text/plain", id))
}

/// The static resource.
#[resource(uri = "test://y", name = "y")]
async fn fixed() -> Result<ResourceContents, ToolError> {
    Ok(ResourceContents::text("test://y", "text/plain", "y"))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").resource(fixed).resources(resources![item]);
}
