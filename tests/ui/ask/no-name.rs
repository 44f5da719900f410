use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    yes: bool,
}

/// Deletes a branch once confirmed.
#[tool]
async fn delete_branch(branch: String) -> Result<String, ToolError> {
    match ask!(elicit format!("Delete {branch}?")) {
        Ok(Confirm { yes: true }) => Ok(format!("deleted {branch}")),
        _ => Ok("kept".into()),
    }
}

fn main() {
    let _ = Server::new("t", "1").tool(delete_branch);
}
