//! The same exchange as `benches/round.rs`, run as a task: `tools/call` creates the task,
//! its handler suspends on the question (`input_required` on `tasks/get`), and
//! `tasks/update` replays it to `completed`. In-process, on one thread, with the
//! in-memory store, so the numbers are the runtime's, not the network's; polls yield
//! instead of sleeping.

use criterion::{criterion_group, criterion_main, Criterion};
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TaskHandle, TestClient};
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// Asks the user's name inside a task, then greets them.
#[tool(task = "required")]
async fn greet(ctx: &Ctx, greeting: String) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let user: Name = ask!(elicit "What is your name?")?;
    Ok(format!("{greeting}, {}!", user.name))
}

/// Polls `tasks/get`, yielding to the task in between, until the task has `status`.
async fn settle(task: &TaskHandle<'_>, status: &str) {
    for _ in 0..10_000 {
        if task.get().await.is_ok_and(|t| t["status"] == status) {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the task did not become {status}");
}

fn rounds(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a tokio runtime");
    let client = TestClient::new(Server::new("bench", "0").tool(greet));
    let args = json!({ "greeting": "Hello" });
    c.bench_function("task_round1_input_required", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let created = client.call_tool("greet", args.clone()).start().await;
                let task = client.task(created.task_id().expect("a task"));
                settle(&task, "input_required").await;
            });
        });
    });
    c.bench_function("task_rounds_1_and_2_complete", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let created = client.call_tool("greet", args.clone()).start().await;
                let task = client.task(created.task_id().expect("a task"));
                settle(&task, "input_required").await;
                task.update([("user", answer::accept(json!({ "name": "Ada" })))]).await.expect("an ack");
                settle(&task, "completed").await;
            });
        });
    });
}

criterion_group!(benches, rounds);
criterion_main!(benches);
