use mcp_mrtr::prelude::*;

/// An app that is not a ui:// resource.
#[tool(app = "https://example.com/app.html")]
async fn shown() -> Result<String, ToolError> {
    Ok("hi".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(shown);
}
