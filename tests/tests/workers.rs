//! Task workers apart from the front ends (issue 52), over HTTP on 127.0.0.1: a front end
//! built with `TaskConfig::run_on_workers` runs a call's rounds up to its task and answers
//! `tasks/*`, and leaves every run to a `Worker` serving the same server from the same
//! store. Waits are bounded polls.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_mrtr::prelude::*;
use mcp_mrtr::tasks::{MemoryTaskStore, TaskConfig, TaskStore, Worker};
use mcp_mrtr::testing::answer;
use mcp_mrtr_tests::harness::{task_caps, Rpc, TestServer};
use mcp_mrtr_tests::DropFlag;
use serde_json::{json, Value};

/// Where a server runs: its state, so a handler can say which one ran it.
#[derive(Clone)]
struct Role(&'static str);

#[derive(Deserialize, JsonSchema)]
struct Sections {
    costs: bool,
}

#[derive(Deserialize, JsonSchema)]
struct Publish {
    publish: bool,
}

static RESERVED: AtomicUsize = AtomicUsize::new(0);

/// Asks in a round, reserves a number once, continues as a task, says where it runs,
/// asks again inside the task, and reports.
#[tool(task = "optional")]
async fn report(ctx: &Ctx, role: State<Role>, team: String) -> Result<String, ToolError> {
    let place = role.0 .0;
    let sections: Sections = ask!(elicit format!("What should {team}'s report cover?"))?;
    // Its own work before the task (a lookup, say): on a front end it runs in the request,
    // since the task it becomes is run elsewhere, from the journal.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let number = once!(RESERVED.fetch_add(1, Ordering::SeqCst));
    let reserved_on = once!(place.to_owned());
    ctx.continue_as_task().await;
    ctx.progress(1.0).message(format!("report {number} compiling on the {place}")).await;
    let publish: Publish = ask!(elicit format!("Publish report {number}?"))?;
    Ok(format!(
        "report {number} for {team} (costs: {}) reserved on the {reserved_on}, ran on the {place}, published: {}",
        sections.costs, publish.publish
    ))
}

/// Works for `seconds`, saying where.
#[tool(task = "required")]
async fn long_job(ctx: &Ctx, role: State<Role>, seconds: u64) -> Result<String, ToolError> {
    let place = role.0 .0;
    ctx.continue_as_task().await;
    ctx.progress(0.0).message(format!("working on the {place}")).await;
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    Ok(format!("done on the {place}"))
}

static CANCELLED_DROPPED: AtomicBool = AtomicBool::new(false);

/// Works for half a minute, unless its future is dropped (which it notes).
#[tool(task = "required")]
async fn cancellable_job(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let _dropped = DropFlag(&CANCELLED_DROPPED);
    ctx.progress(0.0).message("working").await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    Ok("done".into())
}

/// The same server for both sides, as a deployment builds it: only its role differs.
/// Short leases, so a cancel reaches a worker's run within 100 ms.
fn server(role: &'static str, store: &Arc<MemoryTaskStore>) -> Server {
    server_with(role, store, TaskConfig::default())
}

/// [`server`], its tasks as `tasks` says besides.
fn server_with(role: &'static str, store: &Arc<MemoryTaskStore>, tasks: TaskConfig) -> Server {
    let tasks = tasks.store(store.clone()).run_on_workers(true).lease(Duration::from_millis(300));
    Server::new("reports", "0").tools(tools![report, long_job, cancellable_job]).with_state(Role(role)).tasks(tasks)
}

/// Creates a task of `tool` on `front` and returns its id.
async fn create(front: &TestServer, tool: &str, arguments: Value) -> String {
    let created = front.call(&Rpc::call_tool(tool, arguments).caps(task_caps())).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

/// Polls `tasks/get` every 20 ms, at most 250 times, until `check` holds.
async fn wait_until(front: &TestServer, id: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..250 {
        last = get(front, id).await;
        if check(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id}: never {what}: {last}");
}

fn task_rpc(method: &str, id: &str) -> Rpc {
    Rpc::new(method).param("taskId", json!(id)).caps(task_caps())
}

async fn get(front: &TestServer, id: &str) -> Value {
    front.call(&task_rpc("tasks/get", id)).await["result"].clone()
}

/// Polls `tasks/get` until the task has `status`.
async fn wait_for(front: &TestServer, id: &str, status: &str) -> Value {
    wait_until(front, id, &format!("became {status}"), |task| task["status"] == status).await
}

/// A worker serving `server` until the returned sender is dropped.
fn start_worker(
    server: Server,
) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<Result<(), mcp_mrtr::serve::ServeError>>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = Worker::new().look_every(Duration::from_millis(20));
    let running = tokio::spawn(server.serve(worker).with_graceful_shutdown(async move {
        let _ = stopped.await;
    }));
    (stop, running)
}

#[tokio::test]
async fn a_front_end_runs_no_task_a_worker_runs_it_and_its_ask_is_answered_through_the_front_end() {
    let store = Arc::new(MemoryTaskStore::new());
    let front = TestServer::start(server("front end", &store)).await;

    // The round before the task runs on the front end, as any round does.
    let call = Rpc::call_tool("report", json!({ "team": "payments" })).caps(task_caps());
    let asked = front.call(&call).await["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let retry = call
        .param("inputResponses", json!({ "sections": answer::accept(json!({ "costs": true })) }))
        .param("requestState", asked["requestState"].clone());
    let created = front.call(&retry).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();

    // No worker yet: the task waits, unrun (its handler never reached the progress line).
    assert_eq!(store.workers(SystemTime::now()).await.unwrap(), Some(0));
    for _ in 0..5 {
        let waiting = get(&front, &id).await;
        assert_eq!(waiting["status"], "working", "{waiting}");
        // Not the handler's progress line: the front end did not run it.
        assert_eq!(waiting["statusMessage"], "waiting for a task worker to run it", "{waiting}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A worker comes: it takes the task, and its ask parks it for the front end to answer.
    let (stop, running) = start_worker(server("worker", &store));
    let parked = wait_for(&front, &id, "input_required").await;
    assert_eq!(parked["inputRequests"]["publish"]["params"]["message"], "Publish report 0?", "{parked}");
    assert_eq!(parked["statusMessage"], "report 0 compiling on the worker", "{parked}");
    assert_eq!(store.workers(SystemTime::now()).await.unwrap(), Some(1), "the worker says it is alive");

    let update = task_rpc("tasks/update", &id)
        .param("inputResponses", json!({ "publish": answer::accept(json!({ "publish": true })) }));
    assert_eq!(front.call(&update).await["result"]["resultType"], "complete");
    let done = wait_for(&front, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "report 0 for payments (costs: true) reserved on the front end, ran on the worker, published: true",
        "{done}"
    );
    // Reserved once, on the front end's round: the worker's two replays read it from the journal.
    assert_eq!(RESERVED.load(Ordering::SeqCst), 1);

    drop(stop);
    running.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_worker_that_stops_hands_its_task_back_and_another_worker_finishes_it() {
    let store = Arc::new(MemoryTaskStore::new());
    let front = TestServer::start(server("front end", &store)).await;
    let id = create(&front, "long_job", json!({ "seconds": 2 })).await;
    let (stop, running) = start_worker(server("first worker", &store));
    wait_until(&front, &id, "ran on the first worker", |task| task["statusMessage"] == "working on the first worker")
        .await;
    drop(stop);
    running.await.unwrap().unwrap();
    let handed_back = get(&front, &id).await;
    assert_eq!(handed_back["status"], "working", "{handed_back}");

    let (_stop, _running) = start_worker(server("second worker", &store));
    let done = wait_for(&front, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "done on the second worker", "{done}");
}

#[tokio::test]
async fn a_cancel_through_the_front_end_stops_the_workers_run() {
    let store = Arc::new(MemoryTaskStore::new());
    let front = TestServer::start(server("front end", &store)).await;
    let (_stop, _running) = start_worker(server("worker", &store));
    let id = create(&front, "cancellable_job", json!({})).await;
    wait_until(&front, &id, "ran", |task| task["statusMessage"] == "working").await;
    let cancelled = front.call(&task_rpc("tasks/cancel", &id)).await;
    assert!(cancelled.get("result").is_some(), "{cancelled}");
    for _ in 0..250 {
        if CANCELLED_DROPPED.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(CANCELLED_DROPPED.load(Ordering::SeqCst), "the worker still runs the cancelled task");
    assert_eq!(get(&front, &id).await["status"], "cancelled");
}

#[tokio::test]
async fn a_worker_needs_a_tool_that_runs_as_a_task() {
    /// Says hello.
    #[tool]
    async fn hello() -> Result<String, ToolError> {
        Ok("hello".into())
    }
    let error = Server::new("plain", "0").tool(hello).serve(Worker::new()).await.unwrap_err();
    assert!(error.to_string().contains("a task worker serves a server with a tool that may run as a task"), "{error}");
}

#[tokio::test]
async fn workers_say_they_are_alive_in_a_store_they_share() {
    let store = Arc::new(MemoryTaskStore::new());
    let now = SystemTime::now();
    store.worker_alive("a", now + Duration::from_secs(15)).await.unwrap();
    store.worker_alive("b", now + Duration::from_secs(15)).await.unwrap();
    store.worker_alive("gone", now - Duration::from_secs(1)).await.unwrap();
    assert_eq!(store.workers(now).await.unwrap(), Some(2));
    assert_eq!(
        store.workers(now + Duration::from_secs(20)).await.unwrap(),
        Some(0),
        "a worker that stops saying so is not counted"
    );
}

#[tokio::test]
async fn a_task_no_worker_takes_fails_after_the_wait_saying_so() {
    let store = Arc::new(MemoryTaskStore::new());
    let wait = Duration::from_millis(300);
    let front = TestServer::start(server_with("front end", &store, TaskConfig::default().worker_wait(wait))).await;
    let started = std::time::Instant::now();
    let id = create(&front, "long_job", json!({ "seconds": 1 })).await;

    let waiting = get(&front, &id).await;
    assert_eq!(
        (&waiting["status"], &waiting["statusMessage"]),
        (&json!("working"), &json!("waiting for a task worker to run it"))
    );
    let failed = wait_for(&front, &id, "failed").await;
    assert!(started.elapsed() >= wait, "failed before the wait was up: {failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no task worker was available to run the task"), "{failed}");
    assert!(failed.get("statusMessage").is_none() || failed["statusMessage"] != "waiting for a task worker to run it");
}

#[tokio::test]
async fn a_task_waits_past_the_wait_while_a_worker_is_alive() {
    let store = Arc::new(MemoryTaskStore::new());
    let wait = Duration::from_millis(100);
    let front = TestServer::start(server_with("front end", &store, TaskConfig::default().worker_wait(wait))).await;
    // A worker the store counts alive, busy elsewhere: the task waits for it.
    store.worker_alive("busy", SystemTime::now() + Duration::from_mins(1)).await.unwrap();
    let id = create(&front, "long_job", json!({ "seconds": 1 })).await;
    tokio::time::sleep(3 * wait).await;
    let waiting = get(&front, &id).await;
    assert_eq!(waiting["status"], "working", "{waiting}");
}

#[tokio::test]
async fn an_expired_task_fails_on_a_front_end_that_no_worker_looks_at() {
    let store = Arc::new(MemoryTaskStore::new());
    let tasks = TaskConfig::default().ttl(Some(Duration::from_secs(1))).worker_wait(Duration::from_hours(1));
    let front = TestServer::start(server_with("front end", &store, tasks)).await;
    let id = create(&front, "long_job", json!({ "seconds": 1 })).await;
    let failed = wait_for(&front, &id, "failed").await;
    assert_eq!(failed["error"]["data"]["expired"], true, "{failed}");
}

#[tokio::test]
async fn a_worker_of_an_older_build_leaves_a_task_of_a_tool_it_lacks_to_one_that_serves_it() {
    let store = Arc::new(MemoryTaskStore::new());
    let front = TestServer::start(server("front end", &store)).await;
    // The previous release, still running in a rolling upgrade: it has no `long_job`.
    let tasks = TaskConfig::default().store(store.clone()).run_on_workers(true).lease(Duration::from_millis(300));
    let old = Server::new("reports", "0").tools(tools![report]).with_state(Role("old worker")).tasks(tasks);
    let (stop_old, old_running) = start_worker(old);
    let id = create(&front, "long_job", json!({ "seconds": 0 })).await;

    // It looks every 20 ms: a dozen looks later, the task still waits, neither taken nor failed.
    tokio::time::sleep(Duration::from_millis(250)).await;
    let waiting = get(&front, &id).await;
    assert_eq!(
        (&waiting["status"], &waiting["statusMessage"]),
        (&json!("working"), &json!("waiting for a task worker to run it"))
    );

    let (_stop, _running) = start_worker(server("new worker", &store));
    let done = wait_for(&front, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "done on the new worker", "{done}");
    drop(stop_old);
    old_running.await.unwrap().unwrap();
}
