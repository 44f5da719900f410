//! A handler's name stays free for ordinary bindings in its module: `#[tool]`,
//! `#[prompt]` and `#[resource]` make a function of it, not a unit struct (whose name
//! would also be a pattern, and turn `let Some(deployment)` into a comparison).
use mcp_mrtr::prelude::*;

/// The current deployment.
#[resource(uri = "deploy://current")]
async fn deployment() -> Result<ResourceContents, ToolError> {
    Ok(ResourceContents::text("deploy://current", "text/plain", "v1"))
}

/// Says which deployment is current.
#[tool]
async fn current() -> Result<String, ToolError> {
    let found = Some("v1".to_owned());
    let Some(deployment) = found else { return Ok("none".into()) };
    Ok(deployment)
}

fn main() {
    let _server = Server::new("ui", "0.0.0").resource(deployment).tool(current);
}
