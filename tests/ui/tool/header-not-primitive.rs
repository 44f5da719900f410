use mcp_mrtr::prelude::*;

/// A list cannot travel in a header.
#[tool]
async fn tag(#[mcp(header = "Tags")] tags: Vec<String>) -> Result<String, ToolError> {
    Ok(tags.join(","))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(tag);
}
