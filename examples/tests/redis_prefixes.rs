//! Two servers on one real `redis-server` whose key prefixes nest (audit B22): neither
//! reaches the other's keys, even through a task id the client chose. And two servers on one
//! prefix (issue 60): the one that starts second says so in its log.

use mcp_mrtr::prelude::*;
use mcp_mrtr::tasks::TaskStore;
use mcp_mrtr::testing::TestClient;
use serde_json::json;

use crate::instance::{Instance, Redis};
use crate::serverless::Process;

/// Finishes at once, as a task.
#[tool(task = "required")]
async fn quick(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    Ok("done".into())
}

#[tokio::test]
async fn servers_whose_prefixes_nest_never_share_a_key() {
    let Some(redis) = Redis::start() else { return };
    let connect = |prefix: &'static str| {
        let url = redis.url();
        async move { mcp_mrtr::redis::Redis::connect(&url).await.expect("connect to redis").prefix(prefix) }
    };
    let (outer, inner) = (connect("app:").await, connect("app:task:x").await);
    let client = TestClient::new(
        Server::new("inner", "0").tool(quick).tasks(mcp_mrtr::tasks::TaskConfig::default().store(inner.task_store())),
    );
    let created = client.call_tool("quick", json!({})).start().await;
    let id = created.task_id().expect("a task");
    assert!(inner.task_store().get(id).await.unwrap().is_some(), "the inner server's task is stored");
    // Undelimited, the outer server's `<prefix>task:<id>` for this id was the inner's key.
    let reached = outer.task_store().get(&format!("xtask:{id}")).await.unwrap();
    assert!(reached.is_none(), "the outer server read the inner server's task");
    // The usual prefix keeps its keys: `app:` and `app` are one prefix.
    assert!(connect("app").await.task_store().get(&format!("xtask:{id}")).await.unwrap().is_none());
}

#[tokio::test]
async fn a_server_that_starts_on_another_server_s_prefix_says_so() {
    let Some(redis) = Redis::start() else { return };
    let env = redis.env();
    let everything = Instance::start_with(&env.iter().map(|(name, value)| (*name, value.as_str())).collect::<Vec<_>>());
    // The reports example's worker, on the same Redis and the same (default) prefix.
    let worker = Process::start(env!("CARGO_BIN_EXE_reports_worker"), &[], &env);
    let seen = worker.wait_for("keeps its tasks in this task store too");
    let told = seen.last().expect("the line waited for");
    assert!(told.contains("WARN") && told.contains("mcp-mrtr-everything"), "{seen:#?}");
    drop(everything);
}
