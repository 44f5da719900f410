use mcp_mrtr::prelude::*;

/// A visibility the extension does not know.
#[tool(app = "ui://shown/app", visibility = "everyone")]
async fn shown() -> Result<String, ToolError> {
    Ok("hi".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(shown);
}
