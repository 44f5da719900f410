//! Once per call where the reports example's calls become tasks (the sixth audit's E1 and
//! E7), with a real `redis-server` for the guard and the task store, the function's two
//! containers (see `serverless`) and `reports_worker` processes:
//!
//! - a round presenting an older state of a call, and a second task made from that state,
//!   do not publish a report the call's task published (E1);
//! - a worker stopped with SIGTERM while it sends a report finishes the sending and hands
//!   the task back, and the worker that takes the task over does not send it again (E7).
//!
//! Sendings are counted where a mail service would see them: in the outbox file the
//! workers append to (`REPORTS_OUTBOX`), outside every process.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use mcp_mrtr::lambda::Lambda;
use mcp_mrtr::request_state::{KeyRing, StateConfig, StateKey};
use mcp_mrtr::tasks::TaskConfig;
use mcp_mrtr_examples::reports;

use crate::instance::{self, Redis, TIMEOUT};
use crate::serverless::{caps, poll, publish, redis, report_call, retry, sections, Function, Process};

/// A file the workers append each sending to; removed when dropped.
struct Outbox(PathBuf);

impl Outbox {
    fn new(test: &str) -> Self {
        let path = std::env::temp_dir().join(format!("reports-outbox-{}-{test}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Self(path)
    }

    /// The sendings so far, one line each: `<step key> <receipt> <what>`.
    fn sendings(&self) -> Vec<String> {
        std::fs::read_to_string(&self.0).unwrap_or_default().lines().map(str::to_owned).collect()
    }

    /// Waits, at most [`TIMEOUT`], until the outbox holds a sending.
    fn wait_for_a_sending(&self) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(first) = self.sendings().into_iter().next() {
                return first;
            }
            assert!(Instant::now() < deadline, "nothing was sent");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A `reports_worker` sharing `redis`, sending to `outbox`, once it runs tasks.
fn worker(redis: &Redis, outbox: &Outbox) -> Process {
    let mut env = redis.env();
    env.push(("REPORTS_OUTBOX", outbox.0.display().to_string()));
    let worker = Process::start(env!("CARGO_BIN_EXE_reports_worker"), &[], &env);
    worker.wait_for("running tasks from the task store");
    worker
}

/// The task `call` retried with `state` (and no answers) becomes: its id.
async fn task_from(function: &Function, call: &Value, state: &Value) -> String {
    let created = function.result(0, &retry(call, json!({}), state)).await;
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

fn task_request(method: &str, id: &str, answers: Option<Value>) -> Value {
    let mut params = json!({ "taskId": id });
    if let Some(answers) = answers {
        params["inputResponses"] = answers;
    }
    instance::request(method, params, &caps(true))
}

/// Waits for the task's publication question and answers yes; how the task ended.
async fn publish_through(function: &Function, id: &str) -> Value {
    let get = task_request("tasks/get", id, None);
    poll(function, &get, "input_required").await;
    let update = task_request("tasks/update", id, Some(publish(true)));
    assert_eq!(function.result(1, &update).await["resultType"], "complete");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let task = function.result(0, &get).await;
        if task["status"] == "completed" || task["status"] == "failed" {
            return task;
        }
        assert!(Instant::now() < deadline, "the task never ended: {task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Two instances of the reports server that run their own tasks (not a function and
/// its workers): the same guard and task store in `redis`, one key ring, sending to
/// `outbox`.
async fn instances_running_their_tasks(redis: &Redis, outbox: &Outbox) -> Function {
    let state = StateConfig::new(KeyRing::new(StateKey::random()));
    let mut instances = Vec::new();
    for _ in 0..2 {
        let shared = mcp_mrtr::redis::Redis::connect(redis.config()).await.expect("redis");
        let server = mcp_mrtr_examples::reports::sending_to(reports::Outbox(Some(outbox.0.clone())))
            .request_state(state.clone().single_use(shared.state_guard()))
            .tasks(TaskConfig::default().store(shared.task_store()));
        instances.push(Lambda::new().handler(server).expect("a configured server"));
    }
    // A guard begins its memory in Redis as it starts, before its instance seals anything
    // (a fresh Redis has none): a state sealed before would be refused as sealed before
    // the guard could remember. Instances take a moment to start; so do these.
    tokio::time::sleep(Duration::from_millis(100)).await;
    Function::Containers(instances)
}

/// The audit's repro, on the reports function: a call asked in rounds whether to publish
/// (its client did not declare tasks), and that last state presented again three ways.
#[tokio::test]
async fn a_report_its_task_published_is_published_by_no_round_and_no_second_task() {
    if Function::emulated().is_some() {
        return;
    }
    let Some(redis) = redis() else { return };
    let outbox = Outbox::new("e1");
    let function = Function::start(Some(&redis)).await;
    let _worker = worker(&redis, &outbox);
    published_once(&function, &outbox).await;
}

/// The same where the instances run their own tasks, on the Redis guard: each run of the
/// task (its first, and the one after `tasks/update`) claims in the guard.
#[tokio::test]
async fn on_instances_running_their_own_tasks_a_report_is_published_once() {
    if Function::emulated().is_some() {
        return;
    }
    let Some(redis) = redis() else { return };
    let outbox = Outbox::new("e1-instances");
    let function = instances_running_their_tasks(&redis, &outbox).await;
    published_once(&function, &outbox).await;
}

async fn published_once(function: &Function, outbox: &Outbox) {
    let rounds = report_call(false);
    let asked = function.result(0, &rounds).await;
    let ready = function.result(1, &retry(&rounds, sections(), &asked["requestState"])).await;
    assert_eq!(
        ready["inputRequests"]["publish"]["params"]["message"],
        "The 2026-11 report for payments is ready. Publish it?"
    );
    let state = ready["requestState"].clone();

    // Presented by a client that declares tasks: a task, which the worker runs and publishes.
    let tasks = report_call(true);
    let first = task_from(function, &tasks, &state).await;
    let done = publish_through(function, &first).await;
    assert_eq!(done["status"], "completed", "{done}");
    let published = done["result"]["structuredContent"]["published"].as_str().unwrap().to_owned();
    assert_eq!(outbox.sendings().len(), 1);

    // As a round, with the answer: refused, saying the step was taken.
    let (_, again) = function.send(1, &retry(&rounds, publish(true), &state), &[]).await;
    let message = again[0]["error"]["message"].as_str().unwrap_or_else(|| panic!("published again: {again:?}"));
    assert!(message.contains("taken already"), "{message}");

    // As a second task: it fails at the publication.
    let second = task_from(function, &tasks, &state).await;
    let failed = publish_through(function, &second).await;
    assert_eq!(failed["status"], "failed", "a second task published again: {failed}");

    let sendings = outbox.sendings();
    assert_eq!(sendings.len(), 1, "sent {} times: {sendings:#?}", sendings.len());
    assert!(sendings[0].contains(&published), "{sendings:?} vs {published}");
}

/// A rolling deploy stops a worker halfway through sending a report: it finishes the
/// sending (the mail service confirms it) and records it before handing the task back, and
/// the next worker completes the task with that receipt, sending nothing.
#[tokio::test]
async fn a_worker_stopped_while_it_sends_finishes_the_sending_and_the_next_sends_nothing() {
    if Function::emulated().is_some() {
        return;
    }
    let Some(redis) = redis() else { return };
    let outbox = Outbox::new("e7");
    let function = Function::start(Some(&redis)).await;
    let stopping = worker(&redis, &outbox);

    let call = report_call(true);
    let asked = function.result(0, &call).await;
    let created = function.result(1, &retry(&call, sections(), &asked["requestState"])).await;
    let id = created["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    let get = task_request("tasks/get", &id, None);
    poll(&function, &get, "input_required").await;
    let update = task_request("tasks/update", &id, Some(publish(true)));
    assert_eq!(function.result(1, &update).await["resultType"], "complete");

    // The worker handed the report to the mail service and waits for its confirmation.
    let sent = outbox.wait_for_a_sending();
    instance::terminate(&stopping.child);
    stopping.wait_for("stopped: tasks running here handed back");
    let pid = stopping.child.id();
    drop(stopping);

    let _next = worker(&redis, &outbox);
    let done = poll(&function, &get, "completed").await;
    let published = done["result"]["structuredContent"]["published"].as_str().unwrap();
    assert!(published.starts_with(&format!("published@pid{pid}#")), "{published}: not the stopped worker's sending");
    let sendings = outbox.sendings();
    assert_eq!(sendings, [sent], "sent again after the stop");
    assert!(sendings[0].contains(published), "{sendings:?} vs {published}");
}
