use mcp_mrtr::prelude::*;

struct Greeter;

impl Greeter {
    /// A method.
    #[tool]
    async fn greet(&self) -> Result<String, ToolError> {
        Ok("hi".into())
    }
}

fn main() {
    let _ = Greeter;
}
