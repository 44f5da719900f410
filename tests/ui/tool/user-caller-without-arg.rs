use mcp_mrtr::prelude::*;

/// The user's own `Caller`, meant as an argument: read as mcp_mrtr's by its name.
#[derive(Deserialize, JsonSchema)]
struct Caller {
    phone: String,
}

/// Calls someone back.
#[tool]
async fn call_back(caller: Caller) -> Result<String, ToolError> {
    Ok(caller.phone)
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(call_back);
}
