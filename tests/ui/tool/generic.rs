use mcp_mrtr::prelude::*;

/// Generic.
#[tool]
async fn show<T: std::fmt::Display>(value: T) -> Result<String, ToolError> {
    Ok(value.to_string())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(show);
}
