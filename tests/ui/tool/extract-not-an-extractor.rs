use mcp_mrtr::prelude::*;

/// Not something the runtime can resolve: no `FromCtx`.
struct Pool;

/// Reads the pool.
#[tool]
async fn report(#[mcp(extract)] _pool: Pool) -> Result<String, ToolError> {
    Ok("report".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(report);
}
