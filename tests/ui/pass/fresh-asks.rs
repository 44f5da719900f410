use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// `fresh`, alone, after a key, and in a helper that names its context.
#[tool]
async fn sign_off(ctx: &Ctx) -> Result<String, ToolError> {
    let first: Confirm = ask!(fresh, elicit "Sign off?")?;
    let second: Confirm = ask!(key = "again", fresh, elicit "Really?")?;
    let third = helper(ctx).await?;
    Ok(format!("{} {} {}", first.ok, second.ok, third.ok))
}

async fn helper(ctx: &Ctx) -> Result<Confirm, ToolError> {
    Ok(ask!(ctx, key = "helper", fresh, elicit "And you?")?)
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(sign_off);
}
