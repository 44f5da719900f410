//! `once!` is once per call where a call becomes a task (the sixth audit's E1), over HTTP
//! on 127.0.0.1: every run of a task made from a call whose states a client holds (the
//! first run, a run after `tasks/update`, a worker's run, a takeover) claims each step for
//! the call in the same guard as the rounds do, so no step is taken both by a task and by a
//! round presenting an older state of the call, or by two tasks made from one call. The
//! same for a single-use state a handler built by hand, read after `continue_as_task`.
//! Each test runs on an instance running its own tasks, and on a front end whose tasks run
//! on a worker (one store, one guard, one key ring).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_mrtr::context::InputRequired;
use mcp_mrtr::prelude::*;
use mcp_mrtr::request_state::{KeyRing, StateConfig, StateKey};
use mcp_mrtr::tasks::{MemoryTaskStore, TaskConfig, Worker};
use mcp_mrtr::testing::answer;
use mcp_mrtr_tests::harness::{default_caps, task_caps, Rpc, SharedGuard, TestServer, USED};
use serde_json::{json, Value};

/// How often each call took each step.
static STEPS: Mutex<Option<HashMap<(String, char), u32>>> = Mutex::new(None);

/// Takes step `step` of `call`: how often it has been taken now.
fn take(call: &str, step: char) -> u32 {
    let mut steps = STEPS.lock().unwrap();
    let count = steps.get_or_insert_with(HashMap::new).entry((call.to_owned(), step)).or_default();
    *count += 1;
    *count
}

fn taken(call: &str, step: char) -> u32 {
    STEPS.lock().unwrap().as_ref().and_then(|steps| steps.get(&(call.to_owned(), step)).copied()).unwrap_or(0)
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Asks in a round, continues as a task, asks whether to publish, publishes once (`p`).
#[tool(task = "optional")]
async fn publishing(ctx: &Ctx, call: String) -> Result<String, ToolError> {
    let go: Confirm = ask!(elicit "Compile?")?;
    ctx.continue_as_task().await;
    let publish: Confirm = ask!(elicit "Publish?")?;
    let published = once!(take(&call, 'p'));
    Ok(format!("published {published} (go {}, publish {})", go.ok, publish.ok))
}

fn go() -> mcp_mrtr::question::Elicit<Confirm> {
    mcp_mrtr::question::Elicit::new("Go on?")
}

/// Built by hand: asks with a single-use state, continues as a task, and reads the state
/// (handing off once, `h`). (A task's journal keeps no answer to a question asked by hand,
/// so a task's run goes by the task.)
#[tool(task = "optional")]
async fn handing(ctx: &Ctx, call: String) -> Result<String, ToolError> {
    if ctx.task_id().is_none() && ctx.input_response("go").is_none() {
        return ctx.input_required(InputRequired::new().ask("go", &go()).state(&7u32).single_use()).await;
    }
    ctx.continue_as_task().await;
    let handed: Option<u32> = ctx.request_state().await?;
    Ok(format!("handed off {:?} {}", handed, take(&call, 'h')))
}

/// Where a deployment's tasks run.
#[derive(Clone, Copy, Debug)]
enum Runs {
    /// On the instance that creates them.
    Here,
    /// On a worker beside the front end.
    OnAWorker,
}

/// A worker's stop signal, and its serving.
type RunningWorker =
    (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<Result<(), mcp_mrtr::serve::ServeError>>);

/// A deployment: the instance clients call, and the worker running its tasks if any.
struct Deployment {
    front: TestServer,
    _worker: Option<RunningWorker>,
}

impl Deployment {
    async fn start(runs: Runs) -> Self {
        let (key, guard, store) = (StateKey::random(), SharedGuard::default(), Arc::new(MemoryTaskStore::new()));
        let server = |on_workers| {
            Server::new("once-in-tasks", "0")
                .tools(tools![publishing, handing])
                .tasks(TaskConfig::default().store(store.clone()).run_on_workers(on_workers))
                .request_state(StateConfig::new(KeyRing::new(key.clone())).single_use(guard.clone()))
        };
        match runs {
            Runs::Here => Self { front: TestServer::start(server(false)).await, _worker: None },
            Runs::OnAWorker => {
                let front = TestServer::start(server(true)).await;
                let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                let worker = Worker::new().look_every(Duration::from_millis(20));
                let running = tokio::spawn(server(true).serve(worker).with_graceful_shutdown(async move {
                    let _ = stopped.await;
                }));
                Self { front, _worker: Some((stop, running)) }
            }
        }
    }

    async fn call(&self, rpc: &Rpc) -> Value {
        self.front.call(rpc).await
    }

    /// Polls `tasks/get` every 20 ms, at most 250 times, until the task has one of `statuses`.
    async fn wait_for(&self, id: &str, statuses: &[&str]) -> Value {
        let mut task = Value::Null;
        for _ in 0..250 {
            task = self.call(&task_rpc("tasks/get", id)).await["result"].clone();
            if statuses.iter().any(|status| task["status"] == *status) {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("task {id} never became {statuses:?}: {task}");
    }

    /// `rpc` with `state` (and `answers`), as a task: the task's id.
    async fn task_from(&self, rpc: &Rpc, state: &Value, answers: Option<Value>) -> String {
        let created = self.call(&present(rpc, state, answers).caps(task_caps())).await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        created["result"]["taskId"].as_str().unwrap().to_owned()
    }

    /// Answers the task's question `key` with `ok: true` once it asks it; how it ended.
    async fn answer_and_finish(&self, id: &str, key: &str) -> Value {
        let parked = self.wait_for(id, &["input_required", "failed"]).await;
        if parked["status"] == "failed" {
            return parked;
        }
        assert!(parked["inputRequests"][key].is_object(), "{parked}");
        let update = task_rpc("tasks/update", id).param("inputResponses", json!({ key: ok() }));
        assert_eq!(self.call(&update).await["result"]["resultType"], "complete");
        self.wait_for(id, &["completed", "failed"]).await
    }
}

fn task_rpc(method: &str, id: &str) -> Rpc {
    Rpc::new(method).param("taskId", json!(id)).caps(task_caps())
}

fn present(rpc: &Rpc, state: &Value, answers: Option<Value>) -> Rpc {
    let rpc = rpc.clone().param("requestState", state.clone());
    match answers {
        Some(answers) => rpc.param("inputResponses", answers),
        None => rpc,
    }
}

fn ok() -> Value {
    answer::accept(json!({ "ok": true }))
}

fn state_of(reply: &Value) -> Value {
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"].clone()
}

/// The audit's repro: a state asking whether to publish becomes a task that publishes
/// (after `tasks/update`, in a run of its own), then is presented again as a round, and
/// made into a second task. The step is taken once, by the first; the round is refused,
/// and the second task fails saying the step was taken.
async fn a_step_a_task_took_is_taken_by_no_round_and_no_other_task(runs: Runs) {
    let deployment = Deployment::start(runs).await;
    let id = format!("publishing-{runs:?}");
    let rpc = Rpc::call_tool("publishing", json!({ "call": id })).caps(default_caps());
    let asked = state_of(&deployment.call(&rpc).await);
    // A round, not a task (the client did not declare tasks): it asks whether to publish.
    let publish = state_of(&deployment.call(&present(&rpc, &asked, Some(json!({ "go": ok() })))).await);

    let first = deployment.task_from(&rpc, &publish, None).await;
    let done = deployment.answer_and_finish(&first, "publish").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "published 1 (go true, publish true)", "{done}");

    let round = deployment.call(&present(&rpc, &publish, Some(json!({ "publish": ok() })))).await;
    assert_eq!(round["error"], json!({ "code": -32602, "message": USED }), "a round took the step again: {round}");

    let second = deployment.task_from(&rpc, &publish, None).await;
    let failed = deployment.answer_and_finish(&second, "publish").await;
    assert_eq!(failed["status"], "failed", "a second task took the step again: {failed}");
    assert_eq!(failed["error"]["message"], USED, "{failed}");
    assert_eq!(taken(&id, 'p'), 1, "published {} times", taken(&id, 'p'));
}

#[tokio::test]
async fn a_step_a_task_took_here_is_taken_by_no_round_and_no_other_task() {
    a_step_a_task_took_is_taken_by_no_round_and_no_other_task(Runs::Here).await;
}

#[tokio::test]
async fn a_step_a_workers_task_took_is_taken_by_no_round_and_no_other_task() {
    a_step_a_task_took_is_taken_by_no_round_and_no_other_task(Runs::OnAWorker).await;
}

/// The other order: a round takes the step first; a task made from an older state of the
/// call then fails at it instead of taking it again.
async fn a_step_a_round_took_is_taken_by_no_task(runs: Runs) {
    let deployment = Deployment::start(runs).await;
    let id = format!("round-first-{runs:?}");
    let rpc = Rpc::call_tool("publishing", json!({ "call": id })).caps(default_caps());
    let asked = state_of(&deployment.call(&rpc).await);
    let publish = state_of(&deployment.call(&present(&rpc, &asked, Some(json!({ "go": ok() })))).await);
    let round = deployment.call(&present(&rpc, &publish, Some(json!({ "publish": ok() })))).await;
    assert_eq!(round["result"]["content"][0]["text"], "published 1 (go true, publish true)", "{round}");

    let task = deployment.task_from(&rpc, &publish, None).await;
    let failed = deployment.answer_and_finish(&task, "publish").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(taken(&id, 'p'), 1);
}

#[tokio::test]
async fn a_step_a_round_took_is_taken_by_no_task_here() {
    a_step_a_round_took_is_taken_by_no_task(Runs::Here).await;
}

#[tokio::test]
async fn a_step_a_round_took_is_taken_by_no_task_on_a_worker() {
    a_step_a_round_took_is_taken_by_no_task(Runs::OnAWorker).await;
}

/// A single-use state a handler built by hand is spent when the call becomes a task: read
/// in the task (on a worker, or in a run here), it is not read again by a round presenting
/// the state that made the task.
async fn a_single_use_state_that_became_a_task_is_read_by_no_round(runs: Runs) {
    let deployment = Deployment::start(runs).await;
    let id = format!("handing-{runs:?}");
    let rpc = Rpc::call_tool("handing", json!({ "call": id })).caps(default_caps());
    let single = state_of(&deployment.call(&rpc).await);
    let task = deployment.task_from(&rpc, &single, Some(json!({ "go": ok() }))).await;
    let done = deployment.wait_for(&task, &["completed", "failed"]).await;
    assert_eq!(done["result"]["content"][0]["text"], "handed off Some(7) 1", "{done}");

    let round = deployment.call(&present(&rpc, &single, Some(json!({ "go": ok() })))).await;
    assert_eq!(round["error"]["message"], USED, "a round read the state again: {round}");
    assert_eq!(taken(&id, 'h'), 1);
}

#[tokio::test]
async fn a_single_use_state_that_became_a_task_here_is_read_by_no_round() {
    a_single_use_state_that_became_a_task_is_read_by_no_round(Runs::Here).await;
}

#[tokio::test]
async fn a_single_use_state_that_became_a_workers_task_is_read_by_no_round() {
    a_single_use_state_that_became_a_task_is_read_by_no_round(Runs::OnAWorker).await;
}

/// While set, the [`Blinking`] store refuses every write, as a store that is away does.
static AWAY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A task store that goes away for a moment whenever `AWAY` says.
struct Blinking(MemoryTaskStore);

impl mcp_mrtr::tasks::TaskStore for Blinking {
    fn create(
        &self,
        record: mcp_mrtr::tasks::TaskRecord,
    ) -> futures_util::future::BoxFuture<'_, Result<(), mcp_mrtr::tasks::StoreError>> {
        self.0.create(record)
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<Option<mcp_mrtr::tasks::TaskRecord>, mcp_mrtr::tasks::StoreError>>
    {
        self.0.get(id)
    }

    fn replace(
        &self,
        expected: u64,
        record: mcp_mrtr::tasks::TaskRecord,
    ) -> futures_util::future::BoxFuture<'_, Result<bool, mcp_mrtr::tasks::StoreError>> {
        if AWAY.load(std::sync::atomic::Ordering::SeqCst) {
            return Box::pin(std::future::ready(Err(mcp_mrtr::tasks::StoreError::new("away for a moment"))));
        }
        self.0.replace(expected, record)
    }

    fn lapsed(
        &self,
        now: std::time::SystemTime,
        limit: usize,
    ) -> futures_util::future::BoxFuture<'_, Result<Vec<String>, mcp_mrtr::tasks::StoreError>> {
        self.0.lapsed(now, limit)
    }
}

/// Takes a step during which the task store goes away for 150 ms.
#[tool(task = "required")]
async fn blinking(ctx: &Ctx, call: String) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let taken = once!({
        AWAY.store(true, std::sync::atomic::Ordering::SeqCst);
        tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(150)).await;
            AWAY.store(false, std::sync::atomic::Ordering::SeqCst);
        });
        take(&call, 'x')
    });
    Ok(format!("taken {taken}"))
}

/// A store away for a moment when a step's result is written, shorter than the lease:
/// the result is written once it is back, and the step is not taken again by the run
/// that would otherwise take the task over (a Redis restarted from its AOF, a blip).
#[tokio::test]
async fn a_step_result_written_while_the_store_blinks_is_written_when_it_is_back() {
    let tasks = TaskConfig::default().store(Blinking(MemoryTaskStore::new())).lease(Duration::from_secs(1));
    let server = TestServer::start(Server::new("blinking", "0").tool(blinking).tasks(tasks)).await;
    let created = server.call(&Rpc::call_tool("blinking", json!({ "call": "blink" })).caps(task_caps())).await;
    let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    let mut task = Value::Null;
    for _ in 0..250 {
        task = server.call(&task_rpc("tasks/get", &id)).await["result"].clone();
        if task["status"] == "completed" || task["status"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(task["result"]["content"][0]["text"], "taken 1", "{task}");
    // Past a lease, and a look for lapsed tasks: nothing took the step again.
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    assert_eq!(taken("blink", 'x'), 1);
}
