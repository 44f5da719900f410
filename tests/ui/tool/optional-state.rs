use mcp_mrtr::prelude::*;

struct Db;

/// State is given to the server or the server does not start.
#[tool]
async fn report(db: Option<State<Db>>) -> Result<String, ToolError> {
    Ok(db.map_or("none", |_| "some").into())
}

fn main() {
    let _ = Server::new("s", "1").tool(report);
}
