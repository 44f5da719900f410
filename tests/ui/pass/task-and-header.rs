use mcp_mrtr::prelude::*;

/// A yes or no.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    yes: bool,
}

/// Rounds first, then a task; its region travels as a header too.
#[tool(task = "optional")]
async fn provision(
    ctx: &Ctx,
    #[mcp(header = "Region")] region: String,
    #[mcp(header = "Count")] count: Option<u16>,
    #[mcp(header = "Dry-Run")] dry_run: bool,
) -> Result<String, ToolError> {
    let ok: Confirm = ask!(elicit format!("Provision {count:?} in {region}?"))?;
    ctx.continue_as_task().await;
    Ok(format!("{region}: {} (dry run: {dry_run})", ok.yes))
}

/// Only as a task.
#[tool(task = "required")]
async fn batch() -> Result<String, ToolError> {
    Ok("done".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tools(tools![provision, batch]);
}
