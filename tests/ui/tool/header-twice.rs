use mcp_mrtr::prelude::*;

/// Two parameters cannot share a header, whatever the case.
#[tool]
async fn route(#[mcp(header = "Region")] from: String, #[mcp(header = "region")] to: String) -> Result<String, ToolError> {
    Ok(format!("{from}-{to}"))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(route);
}
