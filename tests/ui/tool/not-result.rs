use mcp_mrtr::prelude::*;

/// Returns a bare String, not a Result.
#[tool]
async fn hello() -> String {
    "hi".into()
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(hello);
}
