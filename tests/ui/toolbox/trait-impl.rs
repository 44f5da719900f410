use mcp_mrtr::prelude::*;

struct Greeter;

trait Greet {
    async fn greet(&self) -> Result<String, ToolError>;
}

#[toolbox]
impl Greet for Greeter {
    /// Greets.
    #[tool]
    async fn greet(&self) -> Result<String, ToolError> {
        Ok("hi".into())
    }
}

fn main() {}
