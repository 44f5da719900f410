//! A tool that takes the context by reference and checks a client capability.
use mcp_mrtr::prelude::*;

/// Greets, with the client's model when it has one.
#[tool]
async fn greet(ctx: &Ctx, name: String) -> Result<String, ToolError> {
    if ctx.client_supports(Capability::Sampling) {
        let greeting = ask!(sample format!("Greet {name}"), max_tokens = 20, system = "Be brief.")?;
        return Ok(greeting.text());
    }
    Ok(format!("Hello, {name}"))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(greet);
}
