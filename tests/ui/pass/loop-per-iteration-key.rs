//! An ask in a `for` loop with a per-iteration key.
use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Keep {
    keep: bool,
}

/// Asks about each file in turn.
#[tool]
async fn tidy(files: Vec<String>) -> Result<String, ToolError> {
    let mut kept = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let keep: Keep = ask!(key = format!("keep-{i}"), elicit format!("Keep {file}?"))?;
        if keep.keep {
            kept.push(file.clone());
        }
    }
    Ok(kept.join(", "))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(tidy);
}
