//! A resource template with a reserved variable, `{+path}`, which may span `/`: the
//! macro reads the template as the runtime does.
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::TestClient;

/// A file, by its path.
#[resource(uri = "file:///{+path}", mime_type = "text/plain")]
async fn file(path: String) -> Result<ResourceContents, ToolError> {
    Ok(ResourceContents::text(format!("file:///{path}"), "text/plain", path))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let client = TestClient::new(Server::new("ui", "0.0.0").resource(file));
    let done = client.read_resource("file:///notes/today.md").start().await;
    let text = done.complete().unwrap()["contents"][0]["text"].clone();
    assert_eq!(text, "notes/today.md");
}
