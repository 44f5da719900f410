//! A counter over stdio, the shape of rmcp's `counter_stdio` example, written as the
//! README's first example is: what the stdio benchmark (`examples/bench/stdio.py`) runs
//! against rmcp's. `reset` asks before it clears the counter.
//!
//! ```text
//! counter   # stdio
//! ```

use std::sync::atomic::{AtomicI64, Ordering};

use mcp_mrtr::prelude::*;

#[derive(Default)]
struct Counter(AtomicI64);

/// Whether to go ahead.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Yes to reset the counter.
    confirm: bool,
}

/// Adds one to the counter.
#[tool]
async fn increment(State(counter): State<Counter>) -> Result<String, ToolError> {
    Ok((counter.0.fetch_add(1, Ordering::Relaxed) + 1).to_string())
}

/// The counter's value.
#[tool]
async fn get_value(State(counter): State<Counter>) -> Result<String, ToolError> {
    Ok(counter.0.load(Ordering::Relaxed).to_string())
}

/// Sets the counter back to 0, once the user confirms.
#[tool]
async fn reset(State(counter): State<Counter>) -> Result<String, ToolError> {
    let answer: Confirm = ask!(elicit "Reset the counter to 0?")?;
    if !answer.confirm {
        return Ok("left as it was".into());
    }
    counter.0.store(0, Ordering::Relaxed);
    Ok("0".into())
}

#[tokio::main(flavor = "current_thread")] // one client on stdio: one thread serves it best
async fn main() -> Result<(), ServeError> {
    Server::new("counter", env!("CARGO_PKG_VERSION"))
        .with_state(Counter::default())
        .tool(increment)
        .tool(get_value)
        .tool(reset)
        .serve(Stdio::new())
        .await
}
