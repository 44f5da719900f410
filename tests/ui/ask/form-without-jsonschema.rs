use mcp_mrtr::prelude::*;

#[derive(Deserialize)]
struct Target {
    region: String,
}

/// Deploys somewhere the user picks.
#[tool]
async fn deploy() -> Result<String, ToolError> {
    let target: Target = ask!(elicit "Where to?")?;
    Ok(target.region)
}

fn main() {
    let _ = Server::new("t", "1").tool(deploy);
}
