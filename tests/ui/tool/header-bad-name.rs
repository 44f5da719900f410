use mcp_mrtr::prelude::*;

/// A header name has no spaces.
#[tool]
async fn route(#[mcp(header = "Data Center")] center: String) -> Result<String, ToolError> {
    Ok(center)
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(route);
}
