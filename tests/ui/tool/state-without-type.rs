use mcp_mrtr::prelude::*;

/// `State` names the type of the state.
#[tool]
async fn report(State(db): State) -> Result<String, ToolError> {
    Ok(db.to_string())
}

fn main() {
    let _ = Server::new("s", "1").tool(report);
}
