use std::sync::Arc;

use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

struct Greeter {
    greeting: String,
}

#[toolbox]
impl Greeter {
    /// Greets someone it asks about, with state and the context beside.
    #[tool(name = "hello", read_only)]
    async fn greet(&self, ctx: &Ctx, State(count): State<u32>, mut loud: Option<bool>) -> Result<String, ToolError> {
        let _ = ctx.request_id();
        let who: Name = ask!(elicit "Who?")?;
        let loud = loud.take().unwrap_or(false);
        let text = format!("{} {} ({count})", self.greeting, who.name);
        Ok(if loud { text.to_uppercase() } else { text })
    }

    /// A prompt.
    #[prompt]
    async fn intro(&self, topic: Option<String>) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(vec![PromptMessage::user(format!("{} {}", self.greeting, topic.unwrap_or_default()))])
    }

    fn helper(&self) -> usize {
        self.greeting.len()
    }
}

fn main() {
    let greeter = Arc::new(Greeter { greeting: "Hi".into() });
    let _ = greeter.helper();
    let _ = Server::new("s", "1").with_state(3_u32).toolbox(greeter.clone());
    let _ = Server::new("s", "1").with_state(3_u32).toolbox(Greeter { greeting: "Yo".into() });
}
