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

/// Its answer, as a task a worker runs.
#[tool(task = "required")]
async fn newer(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    Ok("run by a worker that serves it".into())
}

#[tokio::test]
async fn in_a_rolling_upgrade_a_worker_leaves_a_task_of_a_tool_it_lacks_to_one_that_has_it() {
    use mcp_mrtr::tasks::{TaskConfig, Worker};
    use std::time::Duration;

    let Some(redis) = Redis::start() else { return };
    let store = mcp_mrtr::redis::Redis::connect(redis.url().as_str()).await.expect("connect to redis");
    let tasks = || TaskConfig::default().store(store.task_store()).run_on_workers(true);
    // The release being rolled out serves `newer`; the previous one only `quick`.
    let current = || Server::new("reports", "2").tools(tools![quick, newer]).tasks(tasks());
    let previous = Server::new("reports", "1").tool(quick).tasks(tasks());
    let serve_as_worker = |server: Server| {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = Worker::new().look_every(Duration::from_millis(20));
        let running = tokio::spawn(server.serve(worker).with_graceful_shutdown(async move {
            let _ = stopped.await;
        }));
        (stop, running)
    };
    let (_old_stop, _old) = serve_as_worker(previous);
    let front = TestClient::new(current());
    let created = front.call_tool("newer", json!({})).start().await;
    let task = front.task(created.task_id().expect("a task"));

    // The previous release's worker looks a dozen times and leaves it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let waiting = task.get().await.expect("the task");
    assert_eq!(waiting["status"], "working", "{waiting}");

    let (_new_stop, _new) = serve_as_worker(current());
    let done = task.wait_for("completed", 100).await;
    assert_eq!(done["result"]["content"][0]["text"], "run by a worker that serves it", "{done}");
}
