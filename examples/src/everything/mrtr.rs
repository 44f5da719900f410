//! The multi round-trip fixture: tools and a prompt that ask the client for input with
//! `ask!`, exactly as the conformance scenarios describe them. No hand-built
//! `InputRequiredResult` anywhere: every round is the runtime's replay of these bodies.

use std::collections::BTreeMap;
use std::sync::Mutex;

use mcp_mrtr::prelude::*;

/// The user's name.
#[derive(Deserialize, JsonSchema)]
pub struct UserName {
    name: String,
}

/// A yes/no confirmation.
#[derive(Deserialize, JsonSchema)]
pub struct Confirm {
    ok: bool,
}

/// A favourite colour.
#[derive(Deserialize, JsonSchema)]
pub struct FavoriteColor {
    color: String,
}

/// Context for a review.
#[derive(Deserialize, JsonSchema)]
pub struct ReviewContext {
    context: String,
}

/// Asks the user's name (key `user_name`), then greets them.
#[tool]
pub async fn test_input_required_result_elicitation() -> Result<String, ToolError> {
    let user_name: UserName = ask!(elicit "What is your name?")?;
    Ok(format!("Hello, {}!", user_name.name))
}

/// Asks the client's model for the capital of France (key `capital_question`).
#[tool]
pub async fn test_input_required_result_sampling() -> Result<String, ToolError> {
    let capital_question = ask!(sample "What is the capital of France?", max_tokens = 100)?;
    Ok(format!("The model says: {}", capital_question.text()))
}

/// Lists the client's roots (key `client_roots`).
#[tool]
pub async fn test_input_required_result_list_roots() -> Result<String, ToolError> {
    let client_roots = ask!(roots);
    Ok(format!("Found {} root(s)", client_roots.len()))
}

/// Asks for a confirmation (key `confirm`) carried with a sealed request state.
#[tool]
pub async fn test_input_required_result_request_state() -> Result<String, ToolError> {
    let confirm: Confirm = ask!(elicit "Please confirm to continue")?;
    Ok(format!("state-ok: confirmed={}", confirm.ok))
}

/// Asks three things in one round: a name, a model greeting and the roots.
#[tool]
pub async fn test_input_required_result_multiple_inputs() -> Result<String, ToolError> {
    let (user_name, greeting, client_roots) = join!(
        ask!(key = "user_name", elicit "What is your name?"),
        ask!(key = "greeting", sample "Write a one-line greeting.", max_tokens = 50),
        ask!(key = "client_roots", roots),
    );
    let user_name: UserName = user_name?;
    Ok(format!("{}: {} ({} roots)", user_name.name, greeting?.text(), client_roots.len()))
}

/// Two questions in two rounds; the second names the first answer.
#[tool]
pub async fn test_input_required_result_multi_round() -> Result<String, ToolError> {
    let step1: UserName = ask!(elicit "What is your name?")?;
    let step2: FavoriteColor = ask!(elicit format!("{}, what is your favourite colour?", step1.name))?;
    Ok(format!("{} likes {}", step1.name, step2.color))
}

/// Asks for a confirmation; a tampered request state is refused.
#[tool]
pub async fn test_input_required_result_tampered_state() -> Result<String, ToolError> {
    let confirm: Confirm = ask!(elicit "Please confirm to continue")?;
    Ok(format!("confirmed={}", confirm.ok))
}

/// Asks only what the client can answer: elicitation and sampling where declared.
#[tool]
pub async fn test_input_required_result_capabilities(ctx: &Ctx) -> Result<String, ToolError> {
    let mut parts = Vec::new();
    if ctx.client_supports(Capability::ElicitationForm) {
        let user_name: UserName = ask!(elicit "What is your name?")?;
        parts.push(format!("name: {}", user_name.name));
    }
    if ctx.client_supports(Capability::Sampling) {
        let greeting = ask!(sample "Write a one-line greeting.", max_tokens = 50)?;
        parts.push(format!("greeting: {}", greeting.text()));
    }
    if parts.is_empty() {
        return Ok("The client can neither elicit nor sample, so nothing was asked.".into());
    }
    Ok(parts.join("; "))
}

/// Needs the client's model: without `sampling` the call fails with -32021.
#[tool(read_only)]
pub async fn test_missing_capability() -> Result<String, ToolError> {
    let answer = ask!(sample "Reply with the word ready.", max_tokens = 10)?;
    Ok(format!("The model replied: {}", answer.text()))
}

/// Answers with a form elicitation, never with a request frame.
#[tool]
pub async fn test_streaming_elicitation() -> Result<String, ToolError> {
    let user_name: UserName = ask!(elicit "What is your name?")?;
    Ok(format!("Streamed hello, {}!", user_name.name))
}

/// How often the once step of `test_once_side_effect` ran, per `call_id`. Counting per
/// call (not one global number) keeps concurrent callers from reading each other's runs.
static ONCE_RUNS: Mutex<BTreeMap<String, u32>> = Mutex::new(BTreeMap::new());
/// Calls remembered at most; the oldest-named are forgotten past it.
const MAX_TRACKED_CALLS: usize = 10_000;

fn count_once_run(call_id: &str) -> u32 {
    let mut runs = ONCE_RUNS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if runs.len() >= MAX_TRACKED_CALLS && !runs.contains_key(call_id) {
        runs.pop_first();
    }
    let count = runs.entry(call_id.to_owned()).or_default();
    *count += 1;
    *count
}

fn once_runs(call_id: &str) -> u32 {
    ONCE_RUNS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(call_id).copied().unwrap_or(0)
}

/// Asks to start, takes a step that must not repeat (a `once!`, counted per `call_id`),
/// asks to finish, then reports how often that step ran for this `call_id`: once, unless
/// something ran it again (a replayed older state would).
#[tool]
pub async fn test_once_side_effect(call_id: String) -> Result<String, ToolError> {
    let start: Confirm = ask!(elicit "Start?")?;
    if !start.ok {
        return Ok(format!("call {call_id}: not started"));
    }
    let run = once!(count_once_run(&call_id));
    let finish: Confirm = ask!(elicit format!("Step {run} done. Finish?"))?;
    let ran = once_runs(&call_id);
    Ok(format!("call {call_id}: the once step ran {ran} time(s), finished={}", finish.ok))
}

/// A review prompt that first asks what context to use (key `user_context`).
#[prompt]
pub async fn test_input_required_result_prompt() -> Result<Vec<PromptMessage>, ToolError> {
    let user_context: ReviewContext = ask!(elicit "What context should the review use?")?;
    let text = format!("Review the change with this context: {}", user_context.context);
    Ok(vec![PromptMessage::user(ContentBlock::text(text))])
}

/// Registers the fixture.
/// Asks the user to open a page (url-mode elicitation, key `connect`): what a host shows as
/// a link to follow. On consent it reports the step done (a 2025-11-25 client hears
/// `notifications/elicitation/complete`; 2026-07-28 has no such notification).
#[tool]
pub async fn test_url_elicitation(ctx: &Ctx) -> Result<String, ToolError> {
    match ask!(key = "connect", elicit_url "Open this page to connect your account", CONNECT_URL) {
        Ok(()) => {
            // A real server would check its own records of the step first.
            ctx.complete_url_elicitation("connect").await;
            Ok("Connected: the user opened the page.".into())
        }
        Err(Declined::Decline) => Ok("Not connected: the user declined to open the page.".into()),
        Err(Declined::Cancel) => Err(ToolError::cancelled()),
    }
}

/// Where `test_url_elicitation` sends the user: a page nobody serves, as in the spec's examples.
pub const CONNECT_URL: &str = "https://example.com/mcp-mrtr/connect";

pub fn register(server: Server) -> Server {
    server
        .tools(tools![
            test_input_required_result_elicitation,
            test_input_required_result_sampling,
            test_input_required_result_list_roots,
            test_input_required_result_request_state,
            test_input_required_result_multiple_inputs,
            test_input_required_result_multi_round,
            test_input_required_result_tampered_state,
            test_input_required_result_capabilities,
            test_missing_capability,
            test_streaming_elicitation,
            test_once_side_effect,
            test_url_elicitation,
        ])
        .prompt(test_input_required_result_prompt)
}
