use mcp_mrtr::prelude::*;

struct Greeter;

#[toolbox]
impl Greeter {
    #[tool]
    async fn greet(&self) -> Result<String, ToolError> {
        Ok("hi".into())
    }
}

fn main() {
    let _ = Server::new("s", "1").toolbox(Greeter);
}
