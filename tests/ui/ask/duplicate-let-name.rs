use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Answer {
    text: String,
}

/// Two asks bound to one name, so one key.
#[tool]
async fn twice() -> Result<String, ToolError> {
    let answer: Answer = ask!(elicit "First?")?;
    let first = answer.text;
    let answer: Answer = ask!(elicit "Second?")?;
    Ok(format!("{first} {}", answer.text))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(twice);
}
