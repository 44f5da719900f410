use mcp_mrtr::prelude::*;

async fn charge(item: &str) -> u64 {
    item.len() as u64
}

/// Charges each item once.
#[tool]
async fn checkout(items: Vec<String>) -> Result<String, ToolError> {
    let mut total = 0;
    for item in &items {
        let cost: u64 = once!(charge(item).await);
        total += cost;
    }
    Ok(total.to_string())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(checkout);
}
