//! The hooks the suite's `subscriptions/listen` checks call to change the catalog: each
//! call adds a tool (or prompt) if it is absent and removes it if present, through the
//! server handle, so every call is a real change that open listen streams hear of.

use mcp_mrtr::{
    catalog::CatalogHandle, handler::PromptArguments, protocol::Prompt, protocol::PromptMessage, protocol::Tool, Ctx,
    Server, ToolError,
};
use serde_json::{Map, Value};

type NoArgs = Map<String, Value>;

/// Registers the trigger tools.
pub fn register(server: Server) -> Server {
    server
        .tool(
            Tool::new("test_trigger_tool_change")
                .description("Adds or removes the tool test_dynamic_tool, so listeners hear tools/list_changed")
                .handler(|ctx: Ctx, _args: NoArgs| async move { Ok::<_, ToolError>(toggle_tool(&ctx.catalog())) }),
        )
        .tool(
            Tool::new("test_trigger_prompt_change")
                .description("Adds or removes the prompt test_dynamic_prompt, so listeners hear prompts/list_changed")
                .handler(|ctx: Ctx, _args: NoArgs| async move { Ok::<_, ToolError>(toggle_prompt(&ctx.catalog())) }),
        )
}

fn toggle_tool(handle: &CatalogHandle) -> String {
    const NAME: &str = "test_dynamic_tool";
    if handle.tools().remove(NAME) {
        return format!("removed {NAME}");
    }
    let tool = Tool::new(NAME)
        .description("A tool that comes and goes with test_trigger_tool_change")
        .handler(|_ctx, _args: NoArgs| async { Ok::<_, ToolError>("still here") });
    match handle.tools().add(tool) {
        Ok(()) => format!("added {NAME}"),
        // Another call added it in between: the list changed all the same.
        Err(_) => format!("{NAME} was added meanwhile"),
    }
}

fn toggle_prompt(handle: &CatalogHandle) -> String {
    const NAME: &str = "test_dynamic_prompt";
    if handle.prompts().remove(NAME) {
        return format!("removed {NAME}");
    }
    let prompt = Prompt::new(NAME)
        .description("A prompt that comes and goes with test_trigger_prompt_change")
        .handler(|_ctx, _args: PromptArguments| async { Ok::<_, ToolError>(vec![PromptMessage::user("still here")]) });
    match handle.prompts().add(prompt) {
        Ok(()) => format!("added {NAME}"),
        Err(_) => format!("{NAME} was added meanwhile"),
    }
}
