//! One full multi-round request through dispatch: round 1 (run the handler, record the
//! question, seal the state) and rounds 1+2 (then open the state, replay with the
//! answer, finish). In-process, so the numbers are the runtime's, not the network's.
//!
//! Rounds 1+2 run twice: with single-use states (the default, so round 2 also records
//! the state in the server's `MemoryGuard`) and with `StateConfig::reusable(true)`, which shows
//! what the guard costs end to end.

use criterion::{criterion_group, criterion_main, Criterion};
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TestClient};
use mcp_mrtr::{request_state::KeyRing, request_state::StateConfig, request_state::StateKey};
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// Asks the user's name, then greets them.
#[tool]
async fn greet(greeting: String) -> Result<String, ToolError> {
    let user: Name = ask!(elicit "What is your name?")?;
    Ok(format!("{greeting}, {}!", user.name))
}

fn server(state: impl FnOnce(StateConfig) -> StateConfig) -> Server {
    Server::new("bench", "0").tool(greet).request_state(state(StateConfig::new(KeyRing::new(StateKey::random()))))
}

fn rounds(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a tokio runtime");
    let client = TestClient::new(server(|state| state));
    let args = json!({ "greeting": "Hello" });
    c.bench_function("mrtr_round1_input_required", |b| {
        b.iter(|| runtime.block_on(async { client.call_tool("greet", args.clone()).start().await }));
    });
    let reusable = TestClient::new(server(|state| state.reusable(true)));
    for (name, client) in
        [("mrtr_rounds_1_and_2_complete", &client), ("mrtr_rounds_1_and_2_reusable_states", &reusable)]
    {
        c.bench_function(name, |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let mut call = client.call_tool("greet", args.clone());
                    call.start().await;
                    call.answer([("user", answer::accept(json!({ "name": "Ada" })))]).await
                })
            });
        });
    }
}

criterion_group!(benches, rounds);
criterion_main!(benches);
