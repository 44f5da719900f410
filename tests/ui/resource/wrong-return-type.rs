use mcp_mrtr::prelude::*;

/// Returns something that is not a resource result.
#[resource(uri = "test://notes")]
async fn notes() -> Result<String, ToolError> {
    Ok("notes".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").resource(notes);
}
