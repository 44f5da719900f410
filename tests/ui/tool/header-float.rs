use mcp_mrtr::prelude::*;

/// Numbers other than integers cannot be mirrored (SEP-2243).
#[tool]
async fn scale(#[mcp(header = "Factor")] factor: f64) -> Result<String, ToolError> {
    Ok(factor.to_string())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(scale);
}
