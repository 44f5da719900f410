//! A helper `async fn` that takes the context and asks with the helper form.
use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

async fn ask_name(ctx: &Ctx) -> Result<String, ToolError> {
    let name: Name = ask!(ctx, key = "k", elicit "Your name?")?;
    Ok(name.name)
}

/// Greets the user by the name a helper asked for.
#[tool]
async fn greet(ctx: &Ctx) -> Result<String, ToolError> {
    let name = ask_name(ctx).await?;
    Ok(format!("Hello, {name}"))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(greet);
}
