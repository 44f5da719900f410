//! The one-screen example: a tool that asks the user which city they mean.
//!
//! ```text
//! weather             # stdio
//! weather --port 3001 # Streamable HTTP on http://127.0.0.1:3001/mcp
//! ```

use mcp_mrtr::prelude::*;

/// The city to report on.
#[derive(Deserialize, JsonSchema)]
struct City {
    city: String,
}

/// Current weather for a city the user picks.
#[tool]
async fn weather() -> Result<String, ToolError> {
    let place: City = ask!(elicit "Which city do you want the weather for?")?;
    Ok(format!("It is sunny in {}.", place.city))
}

// One thread, as the README's example: over stdio it serves its one client best.
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let server = Server::new("weather", env!("CARGO_PKG_VERSION")).tool(weather);
    match std::env::args().nth(2).filter(|_| std::env::args().nth(1).as_deref() == Some("--port")) {
        Some(port) => server.serve(Http::bind(("127.0.0.1", port.parse::<u16>()?))).await?,
        None => server.serve(Stdio::new()).await?,
    }
    Ok(())
}
