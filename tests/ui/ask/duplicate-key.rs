use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Answer {
    text: String,
}

/// Two asks, one key.
#[tool]
async fn twice() -> Result<String, ToolError> {
    let first: Answer = ask!(key = "answer", elicit "First?")?;
    let second: Answer = ask!(key = "answer", elicit "Second?")?;
    Ok(format!("{} {}", first.text, second.text))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(twice);
}
