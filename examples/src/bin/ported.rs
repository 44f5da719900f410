//! rmcp's `servers_mrtr` weather tool, ported: `ported --by-hand` serves the line-for-line
//! port, `ported` the `ask!` one, both over stdio.

use mcp_mrtr::serve::ServeError;
use mcp_mrtr::stdio::Stdio;

#[tokio::main]
async fn main() -> Result<(), ServeError> {
    let by_hand = std::env::args().nth(1).as_deref() == Some("--by-hand");
    mcp_mrtr_examples::ported::server(by_hand).serve(Stdio::new()).await
}
