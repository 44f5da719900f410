//! The deploy example (MCP Apps): a deploy a person approves in an app.
//!
//! ```text
//! deploy             # stdio
//! deploy --port 3002 # Streamable HTTP on http://127.0.0.1:3002/mcp
//! ```

use mcp_mrtr::http::Http;
use mcp_mrtr::stdio::Stdio;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let server = mcp_mrtr_examples::deploy::server();
    match std::env::args().nth(2).filter(|_| std::env::args().nth(1).as_deref() == Some("--port")) {
        Some(port) => server.serve(Http::bind(("127.0.0.1", port.parse::<u16>()?))).await?,
        None => server.serve(Stdio::new()).await?,
    }
    Ok(())
}
