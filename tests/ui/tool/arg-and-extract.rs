use mcp_mrtr::prelude::*;

struct Db;

/// A parameter cannot be both an argument and resolved from the request.
#[tool]
async fn report(#[mcp(arg, extract)] State(_db): State<Db>) -> Result<String, ToolError> {
    Ok("report".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").with_state(Db).tool(report);
}
