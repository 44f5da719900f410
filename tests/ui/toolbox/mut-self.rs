use mcp_mrtr::prelude::*;

struct Counter(u64);

#[toolbox]
impl Counter {
    /// Handlers share the struct: `&mut self` cannot work.
    #[tool]
    async fn add(&mut self) -> Result<String, ToolError> {
        self.0 += 1;
        Ok(self.0.to_string())
    }
}

fn main() {
    let _ = Server::new("s", "1").toolbox(Counter(0));
}
