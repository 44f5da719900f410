use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// `fresh` must be followed by a comma, like `key = …`.
#[tool]
async fn sign_off() -> Result<String, ToolError> {
    let confirm: Confirm = ask!(fresh elicit "Sign off?")?;
    Ok(format!("{}", confirm.ok))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(sign_off);
}
