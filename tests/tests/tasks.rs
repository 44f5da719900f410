//! Tasks (SEP-2663) end to end over HTTP on 127.0.0.1, every message checked against the
//! schema: asks answered one key at a time, cancellation while waiting for a person and
//! while computing, failures, expiry, another caller's ids, and a call that gathers
//! answers in rounds before it continues as a task. Waits are bounded polls.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TestClient};
use mcp_mrtr::Error;
use mcp_mrtr_tests::harness::{task_caps, Rpc, TestServer};
use mcp_mrtr_tests::DropFlag;
use serde_json::{json, Value};

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Color {
    color: String,
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    yes: bool,
}

static DRAFTS: AtomicUsize = AtomicUsize::new(0);

/// Two questions at once, then a third that names the first; a draft made once.
#[tool(task = "required")]
async fn interview(ctx: &Ctx) -> Result<String, ToolError> {
    let draft = once!(DRAFTS.fetch_add(1, Ordering::SeqCst));
    ctx.continue_as_task().await;
    let (name, color) = join!(ask!(key = "name", elicit "Name?"), ask!(key = "color", elicit "Colour?"));
    let (name, color): (Name, Color) = (name?, color?);
    let ok: Confirm = ask!(elicit format!("Save {}'s answer?", name.name))?;
    Ok(format!("draft {draft}: {} likes {} (saved: {})", name.name, color.color, ok.yes))
}

/// Waits for a confirmation inside the task.
#[tool(task = "required")]
async fn confirm_only(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let ok: Confirm = ask!(elicit "Proceed?")?;
    Ok(format!("proceed: {}", ok.yes))
}

/// A hand-built round inside the task: its request is the task's, its state the journal's.
#[tool(task = "required")]
async fn approval(ctx: &Ctx, amount: u32) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let ask = mcp_mrtr::question::Elicit::<Confirm>::new(format!("Approve {amount}?"));
    match (ctx.request_state::<u32>().await?, ctx.answer("approve", &ask)) {
        (Some(asked), Some(Ok(Confirm { yes }))) => Ok(format!("{asked} approved: {yes}")),
        _ => ctx.input_required(mcp_mrtr::context::InputRequired::new().ask("approve", &ask).state(&amount)).await,
    }
}

static DROPPED: AtomicBool = AtomicBool::new(false);

/// Computes for ten minutes, unless it is dropped first.
#[tool(task = "optional")]
async fn long_compute() -> Result<String, ToolError> {
    let _flag = DropFlag(&DROPPED);
    tokio::time::sleep(Duration::from_mins(10)).await;
    Ok("done".into())
}

/// Fails in the way `how` names, after a short wait.
#[tool(task = "optional")]
async fn fails(how: String) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(10)).await;
    match how.as_str() {
        "tool" => Err(ToolError::new("the tool gave up")),
        "protocol" => Err(ToolError::protocol(Error::invalid_params("bad input for the job"))),
        _ => std::panic::panic_any("the handler panicked on purpose"),
    }
}

/// Reports progress while it works.
#[tool(task = "optional")]
async fn with_status(ctx: &Ctx) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(10)).await;
    ctx.progress(1.0).of(2.0).message("halfway").await;
    ctx.continue_as_task().await;
    let _finish: Confirm = ask!(elicit "Finish?")?;
    Ok("finished".into())
}

static SIDE_EFFECTS: AtomicUsize = AtomicUsize::new(0);

/// Asks the name in rounds, then continues as a task that asks again.
#[tool(task = "required")]
async fn escalates(ctx: &Ctx) -> Result<String, ToolError> {
    let order = once!(SIDE_EFFECTS.fetch_add(1, Ordering::SeqCst));
    let name: Name = ask!(elicit "Name?")?;
    ctx.continue_as_task().await;
    let ok: Confirm = ask!(elicit format!("Place order {order} for {}?", name.name))?;
    Ok(format!("order for {}: {}", name.name, ok.yes))
}

static STEPS: AtomicUsize = AtomicUsize::new(0);

/// Inside the task and at once, a `once!` step and a question; once answered, work that
/// waits on a timer before its result.
#[tool(task = "required")]
async fn step_ask_wait(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let step = once!(STEPS.fetch_add(1, Ordering::SeqCst));
    let ok: Confirm = ask!(elicit "Go on?")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    Ok(format!("step {step}, go on: {}", ok.yes))
}

fn server() -> Server {
    Server::new("tasks", "0")
        .tools(tools![interview, confirm_only, long_compute, fails, with_status, escalates, approval, step_ask_wait])
        .principal(|headers| headers.get("x-user").and_then(|v| v.to_str().ok()).map(str::to_owned))
}

fn call(name: &str, arguments: Value) -> Rpc {
    Rpc::call_tool(name, arguments).caps(task_caps())
}

fn task_rpc(method: &str, id: &str) -> Rpc {
    Rpc::new(method).param("taskId", json!(id)).caps(task_caps())
}

/// Creates a task and returns its id.
async fn create(server: &TestServer, rpc: &Rpc) -> String {
    let created = server.call(rpc).await;
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert!(result.get("requestState").is_none() && result.get("inputRequests").is_none(), "{created}");
    result["taskId"].as_str().expect("a taskId").to_owned()
}

async fn get(server: &TestServer, id: &str) -> Value {
    server.call(&task_rpc("tasks/get", id)).await
}

/// Polls `tasks/get` every 20 ms, at most 250 times, until the task has `status`.
async fn wait_for(server: &TestServer, id: &str, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..250 {
        last = get(server, id).await["result"].clone();
        if last["status"] == status {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} did not become {status}: {last}");
}

async fn update(server: &TestServer, id: &str, answers: Value) -> Value {
    let ack = server.call(&task_rpc("tasks/update", id).param("inputResponses", answers)).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    ack
}

#[tokio::test]
async fn asks_are_answered_one_key_at_a_time_and_once_steps_run_once() {
    let server = TestServer::start(server()).await;
    let id = create(&server, &call("interview", json!({}))).await;
    let waiting = wait_for(&server, &id, "input_required").await;
    assert_eq!(waiting["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["color", "name"]);
    assert!(waiting.get("requestState").is_none());

    update(&server, &id, json!({ "name": answer::accept(json!({ "name": "Ada" })), "nobody-asked": {} })).await;
    let partial = get(&server, &id).await["result"].clone();
    assert_eq!(partial["status"], "input_required");
    assert_eq!(partial["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["color"]);

    update(&server, &id, json!({ "color": answer::accept(json!({ "color": "teal" })) })).await;
    let third = wait_for(&server, &id, "input_required").await;
    let keys: Vec<&String> = third["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["ok"]);
    assert_eq!(third["inputRequests"]["ok"]["params"]["message"], "Save Ada's answer?");

    update(&server, &id, json!({ "ok": answer::accept(json!({ "yes": true })) })).await;
    let done = wait_for(&server, &id, "completed").await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.ends_with("Ada likes teal (saved: true)"), "{text}");
    // Three runs of the handler (start and two replays), one draft: the replays read
    // the first run's result from the journal. (Only this test calls `interview`.)
    assert!(text.starts_with("draft 0:"), "{text}");
    assert_eq!(DRAFTS.load(Ordering::SeqCst), 1);
}

/// A run's first moments are folded into the write that starts it (the create, the
/// answer) only when they need no write of their own: a `once!` step at once is claimed
/// after the create, and a replay still working after the answer goes on from it.
#[tokio::test]
async fn a_step_taken_at_once_and_work_after_the_answer_each_happen_once() {
    let server = TestServer::start(server()).await;
    let id = create(&server, &call("step_ask_wait", json!({}))).await;
    let waiting = wait_for(&server, &id, "input_required").await;
    assert_eq!(waiting["inputRequests"]["ok"]["params"]["message"], "Go on?", "{waiting}");
    update(&server, &id, json!({ "ok": answer::accept(json!({ "yes": true })) })).await;
    let working = get(&server, &id).await["result"].clone();
    assert_eq!(working["status"], "working", "the replay waits on its timer: {working}");
    let done = wait_for(&server, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "step 0, go on: true", "{done}");
    assert_eq!(STEPS.load(Ordering::SeqCst), 1, "one step, on the first run only");
}

#[tokio::test]
async fn a_malformed_answer_is_asked_again_under_a_fresh_key() {
    let server = TestServer::start(server()).await;
    let id = create(&server, &call("confirm_only", json!({}))).await;
    wait_for(&server, &id, "input_required").await;
    update(&server, &id, json!({ "ok": answer::accept(json!({ "yes": "not a bool" })) })).await;
    let again = wait_for(&server, &id, "input_required").await;
    assert_eq!(again["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["ok#2"]);
    // The spent key is not accepted any more.
    update(&server, &id, json!({ "ok": answer::accept(json!({ "yes": true })) })).await;
    assert_eq!(get(&server, &id).await["result"]["status"], "input_required");
    update(&server, &id, json!({ "ok#2": answer::accept(json!({ "yes": true })) })).await;
    assert_eq!(wait_for(&server, &id, "completed").await["result"]["content"][0]["text"], "proceed: true");
}

#[tokio::test]
async fn a_task_waiting_for_a_person_is_cancelled_for_good() {
    let server = TestServer::start(server()).await;
    let id = create(&server, &call("confirm_only", json!({}))).await;
    wait_for(&server, &id, "input_required").await;
    let ack = server.call(&task_rpc("tasks/cancel", &id)).await;
    assert_eq!(ack["result"]["resultType"], "complete");
    assert!(ack["result"].get("status").is_none() && ack["result"].get("taskId").is_none(), "{ack}");
    let cancelled = get(&server, &id).await["result"].clone();
    assert_eq!(cancelled["status"], "cancelled");
    assert!(cancelled.get("inputRequests").is_none());
    // Late answers and a second cancel are acknowledged and change nothing.
    update(&server, &id, json!({ "ok": answer::accept(json!({ "yes": true })) })).await;
    assert_eq!(server.call(&task_rpc("tasks/cancel", &id)).await["result"]["resultType"], "complete");
    assert_eq!(get(&server, &id).await["result"]["status"], "cancelled");
}

#[tokio::test]
async fn cancelling_a_computing_task_drops_its_handler() {
    let server = TestServer::start(server()).await;
    let id = create(&server, &call("long_compute", json!({}))).await;
    assert_eq!(get(&server, &id).await["result"]["status"], "working");
    server.call(&task_rpc("tasks/cancel", &id)).await;
    for _ in 0..250 {
        if DROPPED.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(DROPPED.load(Ordering::SeqCst), "the handler still runs after tasks/cancel");
    assert_eq!(get(&server, &id).await["result"]["status"], "cancelled");
}

#[tokio::test]
async fn tool_errors_complete_and_protocol_errors_and_panics_fail() {
    let server = TestServer::start(server()).await;
    let tool = create(&server, &call("fails", json!({ "how": "tool" }))).await;
    let done = wait_for(&server, &tool, "completed").await;
    assert_eq!(done["result"]["isError"], true);
    assert_eq!(done["result"]["content"][0]["text"], "the tool gave up");
    assert!(done.get("error").is_none());

    for (how, code) in [("protocol", -32602), ("panic", -32603)] {
        let id = create(&server, &call("fails", json!({ "how": how }))).await;
        let failed = wait_for(&server, &id, "failed").await;
        assert_eq!(failed["error"]["code"], code, "{failed}");
        assert!(failed.get("result").is_none());
    }
}

#[tokio::test]
async fn progress_shows_as_the_status_message() {
    let server = TestServer::start(server()).await;
    let id = create(&server, &call("with_status", json!({}))).await;
    let waiting = wait_for(&server, &id, "input_required").await;
    assert_eq!(waiting["statusMessage"], "halfway");
}

#[tokio::test]
async fn records_expire_after_their_ttl() {
    let server =
        TestServer::start(server().tasks(mcp_mrtr::tasks::TaskConfig::default().ttl(Some(Duration::from_millis(300)))))
            .await;
    let created = server.call(&call("confirm_only", json!({}))).await;
    assert_eq!(created["result"]["ttlMs"], 300);
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(get(&server, &id).await["result"]["taskId"], id.as_str());
    for _ in 0..250 {
        let reply = get(&server, &id).await;
        if reply["error"]["code"] == -32602 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} outlived its ttl");
}

/// Audit B20: an unknown id is named in the error, cut short: a client's kilobytes of
/// text are not sent back to it.
#[tokio::test]
async fn an_unknown_task_id_is_echoed_cut_short() {
    let server = TestServer::start(server()).await;
    let short = get(&server, "no-such-task").await;
    assert_eq!(short["error"]["message"], "Unknown task: no-such-task", "{short}");
    let long = get(&server, &"x".repeat(6_000)).await;
    let message = long["error"]["message"].as_str().expect("an error message");
    assert_eq!(message, format!("Unknown task: {}…", "x".repeat(64)));
}

/// Rests a little, then says so.
#[tool(task = "optional")]
async fn nap() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok("rested".into())
}

/// Audit B21: an instance looks for tasks to take over from the moment it serves, not
/// from its first request. Two servers share one store; the first hands its running task
/// back, and the second, which is sent nothing at all, finishes it.
#[tokio::test]
async fn an_instance_that_has_served_nothing_takes_over_a_task_handed_back() {
    use mcp_mrtr::{tasks::MemoryTaskStore, tasks::TaskStatus, tasks::TaskStore};

    let store = std::sync::Arc::new(MemoryTaskStore::new());
    let instance = || {
        server()
            .tool(nap)
            .tasks(mcp_mrtr::tasks::TaskConfig::default().store(store.clone()).lease(Duration::from_millis(300)))
    };
    let first = instance();
    let serving_first = TestServer::start(first.clone()).await;
    let id = create(&serving_first, &call("nap", json!({}))).await;
    first.hand_back_tasks().await;
    let _idle = TestServer::start(instance()).await;
    for _ in 0..250 {
        let record = store.get(&id).await.unwrap().expect("the task's record");
        if record.status() == TaskStatus::Completed {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the idle instance never took the task over");
}

/// Sleeps long enough to be still running when its server has shut down, on a slow
/// machine too, and short enough to finish well within the lease (a minute, in the test
/// below), so only a hand-back lets another instance finish it in time.
#[tool(task = "optional")]
async fn long_nap() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    Ok("rested".into())
}

/// Issue 50: an app served by `serve_router` hands the tasks of its MCP endpoint back
/// when it shuts down, with no handle on the server kept for it.
#[tokio::test]
async fn serve_router_hands_the_tasks_of_the_app_back_at_shutdown() {
    use mcp_mrtr::{tasks::MemoryTaskStore, tasks::TaskStatus, tasks::TaskStore};

    let store = std::sync::Arc::new(MemoryTaskStore::new());
    let instance = || {
        let tasks = mcp_mrtr::tasks::TaskConfig::default().store(store.clone()).lease(Duration::from_mins(1));
        mcp_mrtr::testing::with_own_keys(server().tool(long_nap).tasks(tasks))
    };
    let mcp = instance().into_router(mcp_mrtr::http::HttpConfig::default()).expect("a router");
    let app = axum::Router::new().route("/health", axum::routing::get(|| async { "ok" })).merge(mcp);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut serving = TestServer::start_router(app, async move {
        let _ = stopped.await;
    })
    .await;
    let id = create(&serving, &call("long_nap", json!({}))).await;
    stop.send(()).expect("still serving");
    serving.stopped().await;
    let record = store.get(&id).await.unwrap().expect("the task's record");
    assert_eq!(record.status(), TaskStatus::Working, "handed back unfinished");
    assert_eq!(record.lease_expires_at(), Some(std::time::UNIX_EPOCH), "its lease released at shutdown");
    let other = TestServer::start(instance()).await;
    // Taken over at its next look, then five seconds of nap: 20 s at most, far below the lease.
    for _ in 0..1000 {
        let record = store.get(&id).await.unwrap().expect("the task's record");
        if record.status() == TaskStatus::Completed {
            let done = get(&other, &id).await;
            assert_eq!(done["result"]["result"]["content"][0]["text"], "rested", "{done}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the other instance never finished the task handed back");
}

/// Audit B15: an instance that is shutting down starts no run when the last answer of a
/// task arrives: it leaves the task without a lease, and another instance finishes it.
#[tokio::test]
async fn an_answer_that_lands_on_a_closing_instance_is_run_elsewhere() {
    use mcp_mrtr::{tasks::MemoryTaskStore, tasks::TaskStatus, tasks::TaskStore};

    let store = std::sync::Arc::new(MemoryTaskStore::new());
    let instance = || {
        server().tasks(mcp_mrtr::tasks::TaskConfig::default().store(store.clone()).lease(Duration::from_millis(300)))
    };
    let closing = instance();
    let serving = TestServer::start(closing.clone()).await;
    let id = create(&serving, &call("confirm_only", json!({}))).await;
    wait_for(&serving, &id, "input_required").await;
    closing.hand_back_tasks().await;
    update(&serving, &id, json!({ "ok": answer::accept(json!({ "yes": true })) })).await;
    let record = store.get(&id).await.unwrap().expect("the task's record");
    assert_eq!(record.status(), TaskStatus::Working);
    assert_eq!(record.lease_expires_at(), Some(std::time::UNIX_EPOCH), "the closing instance took the run");
    let other = TestServer::start(instance()).await;
    let done = wait_for(&other, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "proceed: true", "{done}");
}

/// An answer starts from the record the client's last poll on that instance read; when
/// another instance answered in between, that guess is stale, and the store decides: the
/// task runs once, with the first answer, and the late one is ignored as answered.
#[tokio::test]
async fn an_answer_after_another_instance_answered_is_decided_on_the_store() {
    let store = std::sync::Arc::new(mcp_mrtr::tasks::MemoryTaskStore::new());
    let instance = || TestServer::start(server().tasks(mcp_mrtr::tasks::TaskConfig::default().store(store.clone())));
    let (first, second) = (instance().await, instance().await);
    let id = create(&first, &call("confirm_only", json!({}))).await;
    wait_for(&first, &id, "input_required").await;
    wait_for(&second, &id, "input_required").await;
    update(&second, &id, json!({ "ok": answer::accept(json!({ "yes": true })) })).await;
    update(&first, &id, json!({ "ok": answer::accept(json!({ "yes": false })) })).await;
    let done = wait_for(&first, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "proceed: true", "{done}");
}

/// An answer to a task that expired since a poll saw its questions is an unknown task,
/// as it would be without that poll.
#[tokio::test]
async fn an_answer_to_a_task_expired_since_its_poll_is_an_unknown_task() {
    let ttl = Duration::from_millis(300);
    let server = TestServer::start(server().tasks(mcp_mrtr::tasks::TaskConfig::default().ttl(Some(ttl)))).await;
    let id = create(&server, &call("confirm_only", json!({}))).await;
    wait_for(&server, &id, "input_required").await;
    tokio::time::sleep(ttl + Duration::from_millis(100)).await;
    let answers = json!({ "ok": answer::accept(json!({ "yes": true })) });
    let refused = server.call(&task_rpc("tasks/update", &id).param("inputResponses", answers)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test]
async fn a_task_is_visible_only_to_its_caller() {
    let server = TestServer::start(server()).await;
    let id = create(&server, &call("confirm_only", json!({})).header("x-user", Some("alice"))).await;
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        for who in [Some("bob"), None] {
            let reply = server.call(&task_rpc(method, &id).header("x-user", who)).await;
            assert_eq!(reply["error"]["code"], -32602, "{method} as {who:?}: {reply}");
        }
    }
    let own = server.call(&task_rpc("tasks/get", &id).header("x-user", Some("alice"))).await;
    assert_eq!(own["result"]["taskId"], id.as_str());
}

#[tokio::test]
async fn answers_gathered_in_rounds_carry_into_the_task() {
    let server = TestServer::start(server()).await;
    let first = server.call(&call("escalates", json!({}))).await["result"].clone();
    assert_eq!(first["resultType"], "input_required");
    assert!(first.get("taskId").is_none());
    let state = first["requestState"].clone();
    let retry = call("escalates", json!({}))
        .param("inputResponses", json!({ "name": answer::accept(json!({ "name": "Grace" })) }))
        .param("requestState", state);
    let id = create(&server, &retry).await;
    let waiting = wait_for(&server, &id, "input_required").await;
    let message = waiting["inputRequests"]["ok"]["params"]["message"].as_str().unwrap().to_owned();
    assert!(message.ends_with("for Grace?"), "{message}");
    update(&server, &id, json!({ "ok": answer::accept(json!({ "yes": true })) })).await;
    let done = wait_for(&server, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "order for Grace: true");
    // The once! step ran in round 1 only: round 2 and the task's replays read its result
    // from the sealed state, then from the journal. (Only this test calls `escalates`.)
    assert!(message.starts_with("Place order 0 "), "{message}");
    assert_eq!(SIDE_EFFECTS.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn gating_and_removed_methods() {
    let server = TestServer::start(server()).await;
    let discover = server.call(&Rpc::new("server/discover")).await;
    assert_eq!(discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"], json!({}));
    // Without the extension: a required tool is refused, an optional one runs in rounds.
    let refused = server.send(&Rpc::call_tool("confirm_only", json!({}))).await;
    assert_eq!(refused.status, 400);
    let refused = refused.reply();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    let needed = &refused["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"];
    assert_eq!(*needed, json!({}));
    let sync = server.call(&Rpc::call_tool("fails", json!({ "how": "tool" }))).await;
    assert_eq!(
        (sync["result"]["resultType"].clone(), sync["result"]["isError"].clone()),
        (json!("complete"), json!(true))
    );
    let undeclared = server.send(&Rpc::new("tasks/get").param("taskId", json!("nope"))).await;
    assert_eq!((undeclared.status, undeclared.reply()["error"]["code"].clone()), (400, json!(-32021)));
    // With it: unknown ids, removed methods, a wrong Mcp-Name.
    assert_eq!(get(&server, "0123456789abcdef0123456789abcdef").await["error"]["code"], -32602);
    for removed in ["tasks/result", "tasks/list"] {
        let reply = server.send(&task_rpc(removed, "x")).await;
        assert_eq!(reply.reply()["error"]["code"], -32601, "{removed}");
    }
    let id = create(&server, &call("confirm_only", json!({}))).await;
    let mismatch = server.send(&task_rpc("tasks/get", &id).header("mcp-name", Some("another"))).await;
    assert_eq!((mismatch.status, mismatch.reply()["error"]["code"].clone()), (400, json!(-32020)));
    // A server without task tools does not advertise the extension.
    let plain = TestServer::everything().await;
    let discovered = plain.call(&Rpc::new("server/discover")).await;
    assert!(discovered["result"]["capabilities"]["extensions"].is_object(), "the fixture has task tools");
    let bare = TestServer::start(Server::new("bare", "0").tool(mcp_mrtr_examples::everything::tasks::greet)).await;
    let bare_caps = bare.call(&Rpc::new("server/discover")).await;
    assert!(bare_caps["result"]["capabilities"].get("extensions").is_none(), "{bare_caps}");
}

/// Greets the caller once they confirm, inside a task.
#[tool(task = "required")]
async fn caller_greeting(ctx: &Ctx, caller: Caller) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let ok: Confirm = ask!(elicit "Greet?")?;
    Ok(format!("{} greets {} ({})", if ok.yes { "yes" } else { "no" }, caller.id(), caller.has_scope("greet")))
}

#[tokio::test]
async fn testing_drives_a_task_in_process_and_replays_keep_the_caller() {
    let server = Server::new("t", "0").tool(caller_greeting);
    let alice = TestClient::new(server).as_caller(Caller::new("alice").with_scopes(["greet"]));
    let created = alice.call_tool("caller_greeting", json!({})).start().await;
    let task = alice.task(created.task_id().expect("a task"));
    let waiting = task.wait_for("input_required", 200).await;
    assert!(waiting["inputRequests"]["ok"].is_object(), "{waiting}");
    task.update([("ok", answer::accept(json!({ "yes": true })))]).await.expect("an ack");
    // The replay after the answer runs with the caller that created the task.
    let done = task.wait_for("completed", 200).await;
    assert_eq!(done["result"]["content"][0]["text"], "yes greets alice (true)");
}

#[tokio::test]
async fn a_round_built_by_hand_inside_a_task_waits_and_resumes_with_its_state() {
    let server = TestServer::start(server()).await;
    let id = create(&server, &call("approval", json!({ "amount": 40 }))).await;
    let waiting = wait_for(&server, &id, "input_required").await;
    assert_eq!(waiting["inputRequests"]["approve"]["params"]["message"], "Approve 40?", "{waiting}");
    update(&server, &id, json!({ "approve": answer::accept(json!({ "yes": true })) })).await;
    let done = wait_for(&server, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "40 approved: true", "{done}");
}
