use mcp_mrtr::prelude::*;

mod own {
    /// The user's own `Ctx`, meant as an argument: read as mcp_mrtr's context by its name.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Ctx {
        pub depth: u8,
    }
}

/// Searches to some depth.
#[tool]
async fn search(ctx: own::Ctx) -> Result<String, ToolError> {
    Ok(ctx.depth.to_string())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(search);
}
