//! `once!` runs a step once across the rounds of a call.
use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

async fn create_order() -> u64 {
    42
}

/// Creates an order once, then asks to confirm it.
#[tool]
async fn order() -> Result<String, ToolError> {
    let id: u64 = once!(create_order().await);
    let confirm: Confirm = ask!(elicit format!("Confirm order {id}?"))?;
    Ok(format!("{id}: {}", confirm.ok))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(order);
}
