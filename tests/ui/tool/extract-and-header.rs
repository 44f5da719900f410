use mcp_mrtr::prelude::*;

struct Db;

type Pool = State<Db>;

/// An extractor is no argument, so it cannot be mirrored into a header.
#[tool]
async fn report(#[mcp(extract, header = "Db")] _db: Pool) -> Result<String, ToolError> {
    Ok("report".into())
}

fn main() {
    let _server = Server::new("ui", "0.0.0").with_state(Db).tool(report);
}
