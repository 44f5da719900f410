use std::cell::Cell;

use mcp_mrtr::prelude::*;

struct Counter(Cell<u32>);

/// Handlers share state across threads: it must be `Send + Sync`.
#[tool]
async fn count(State(counter): State<Counter>) -> Result<String, ToolError> {
    Ok(counter.0.get().to_string())
}

fn main() {
    let _ = Server::new("s", "1").tool(count);
}
