use mcp_mrtr::prelude::*;

/// A parameter the uri does not have.
#[resource(uri = "test://x/{id}")]
async fn item(id: String, page: u32) -> Result<ResourceContents, ToolError> {
    Ok(ResourceContents::text(format!("test://x/{id}"), "text/plain", page.to_string()))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").resource(item);
}
