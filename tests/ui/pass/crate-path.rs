//! `crate = "…"` names the runtime by another path, as a re-exporting crate would.
mod reexport {
    pub use mcp_mrtr as runtime;
}

use mcp_mrtr::prelude::*;

/// Echoes its text.
#[tool(crate = "mcp_mrtr")]
async fn echo(text: String) -> Result<String, ToolError> {
    Ok(text)
}

/// Echoes its text, through a re-export.
#[tool(crate = "crate::reexport::runtime")]
async fn echo_again(text: String) -> Result<String, ToolError> {
    Ok(text)
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(echo).tool(echo_again);
}
