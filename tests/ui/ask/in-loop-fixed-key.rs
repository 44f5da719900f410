use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Keep {
    keep: bool,
}

/// Asks in a loop with one key for every iteration.
#[tool]
async fn tidy(files: Vec<String>) -> Result<String, ToolError> {
    let mut kept = Vec::new();
    for file in files {
        let keep: Keep = ask!(key = "keep", elicit format!("Keep {file}?"))?;
        if keep.keep {
            kept.push(file);
        }
    }
    Ok(kept.join(", "))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(tidy);
}
