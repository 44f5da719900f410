use mcp_mrtr::prelude::*;

async fn roots_count(ctx: &Ctx) -> usize {
    ask!(ctx, roots).len()
}

/// Counts roots through a helper.
#[tool]
async fn count(ctx: &Ctx) -> Result<String, ToolError> {
    Ok(roots_count(ctx).await.to_string())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(count);
}
