use mcp_mrtr::prelude::*;

/// Two contexts.
#[tool]
async fn hello(ctx: &Ctx, again: Ctx) -> Result<String, ToolError> {
    Ok(format!("{:?} {:?}", ctx.request_id(), again.request_id()))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(hello);
}
