//! Asks joined with `join!`, each with an explicit key: they go out in one round.
use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// Asks for a name, a greeting and the roots at once.
#[tool]
async fn everything_at_once() -> Result<String, ToolError> {
    let (name, greeting, roots) = join!(
        ask!(key = "name", elicit "Your name?"),
        ask!(key = "greeting", sample "Say hi", max_tokens = 5),
        ask!(key = "roots", roots),
    );
    let name: Name = name?;
    Ok(format!("{} {} {}", name.name, greeting?.text(), roots.len()))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(everything_at_once);
}
