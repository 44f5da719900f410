//! Task flows (SEP-2663): create the task (after any rounds it asks first), then poll
//! `tasks/get` round robin, answer its questions with `tasks/update`, and, for some
//! computing tasks, cancel it, until it reaches a final state. Polls and answers are
//! safe to repeat, so they are retried on the next instance; a store that is away
//! (`-32603`) is waited out. The answers are recorded once per question and reused on
//! retries, so the result can be checked against them.
//!
//! `steps` makes its task on the front end, so a worker runs it: its `once!` steps write
//! their effects to the outbox, outside every process, where the checks count them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::super::client::Transport;
use super::super::cluster::{Cluster, Target};
use super::super::history::{End, Fact, Kind, OpId};
use super::super::rpc::{Answer, Client, Retry};
use super::mrtr::{answer, answer_all, step_via, Step};
use super::text_of;

const POLL: Duration = Duration::from_millis(400);
/// How long past its own work a task may take to reach a final state: a takeover after
/// a kill waits out the lease, and Redis may be restarting.
const SLACK: Duration = Duration::from_secs(45);
/// An answered question still open after this is answered again (with the same answer).
const REANSWER_AFTER: Duration = Duration::from_secs(3);

/// A task that asks mid-way.
pub(super) async fn asks(client: &mut Client) {
    let (tool, arguments, work) = match client.rng.below(4) {
        0 => {
            let seconds = 0.5 * client.rng.range(1, 4) as f64;
            ("test_durable_task", json!({ "seconds": seconds }), seconds)
        }
        1 => ("multi_input", json!({}), 0.0),
        2 => ("confirm_delete", json!({ "filename": format!("file-{}.txt", client.rng.token()) }), 0.0),
        _ => ("test_tool_with_task", json!({}), 0.2),
    };
    run(client, Kind::TaskAsk, tool, arguments, work, false).await;
}

/// A task that computes; one in five is cancelled mid-way.
pub(super) async fn computes(client: &mut Client) {
    let seconds = client.rng.range(1, 4) as f64;
    let label = format!("job-{}", client.rng.token());
    let cancel = client.rng.chance(0.2);
    run(client, Kind::TaskCompute, "slow_compute", json!({ "seconds": seconds, "label": label }), seconds, cancel)
        .await;
}

/// A task that asks in a round (so its client holds a state of the call), continues as a
/// task made on the front end, and takes three `once!` steps on whichever worker (or
/// instance) runs it, each confirmed after 100–300 ms: the window a worker's SIGTERM is
/// timed to land in (`faults`).
pub(super) async fn steps(client: &mut Client, worker: usize) {
    const TOOL: &str = "test_task_steps";
    let call_id = client.shared.call_id(worker);
    let confirm_ms = client.rng.range(100, 300);
    let arguments = json!({ "call": call_id, "confirm_ms": confirm_ms });
    let history = client.shared.history.clone();
    let op = history.begin(Kind::TaskSteps, json!({ "tool": TOOL, "arguments": arguments, "cancel": false }));
    client.shared.step_call(&call_id, op);
    let front = client.shared.front.clone();
    let end = drive(client, &front, op, TOOL, &arguments, Duration::from_millis(3 * confirm_ms), false).await;
    history.end(op, end);
}

async fn run(client: &mut Client, kind: Kind, tool: &str, arguments: Value, work: f64, cancel: bool) {
    let history = client.shared.history.clone();
    let op = history.begin(kind, json!({ "tool": tool, "arguments": arguments, "cancel": cancel }));
    let instances = client.shared.cluster.clone();
    let end = drive(client, &instances, op, tool, &arguments, Duration::from_secs_f64(work), cancel).await;
    history.end(op, end);
}

/// Creates the task through `via`: its id, its TTL and the process that answered, or how
/// it failed.
async fn create(
    client: &mut Client,
    via: &Cluster,
    op: OpId,
    tool: &str,
    arguments: &Value,
) -> Result<(String, u64, Target), End> {
    let history = client.shared.history.clone();
    let mut prior: Option<(Value, Value)> = None;
    for _ in 0..4 {
        // A cut-off round may have created the task: not sent again (that would be a second task).
        let prior_ref = prior.as_ref().map(|(r, s)| (r, s));
        match step_via(client, via, op, (tool, arguments), prior_ref, Retry::Unsent).await {
            Ok(Step::Asked { state, requests, .. }) => prior = Some((answer_all(client, op, &requests), state)),
            Ok(Step::Done { result, target }) if result["resultType"] == "task" => {
                let id = result["taskId"].as_str().unwrap_or_default().to_owned();
                return Ok((id, result["ttlMs"].as_u64().unwrap_or(0), target));
            }
            Ok(Step::Done { result, .. }) => {
                history.fact(op, Fact::Text(text_of(&result)));
                return Err(End::Failed(format!("answered without a task: {result}")));
            }
            Err(why) => return Err(End::Failed(why)),
        }
    }
    Err(End::Failed("too many rounds before the task".into()))
}

/// What a poll said.
enum Polled {
    Task(Value),
    Unknown,
    /// Nothing usable this time (the store away, a cut connection): poll again.
    Again,
    /// Refused for good: the operation fails (cleanly).
    Refused(String),
    Hung,
}

async fn call(client: &mut Client, op: OpId, method: &str, params: Value) -> Polled {
    match client.modern(op, method, params, Retry::Broken).await {
        Ok((Answer::Result(result), _)) => Polled::Task(result),
        Ok((Answer::Error { code: -32602, message }, _)) if message.starts_with("Unknown task") => Polled::Unknown,
        Ok((Answer::Error { code, message }, _)) if code != -32603 => {
            Polled::Refused(format!("error {code}: {message}"))
        }
        Err(Transport::Timeout) => Polled::Hung,
        Ok(_) | Err(_) => Polled::Again,
    }
}

/// Creates the task through `via`, then follows it through the instances to its end.
async fn drive(
    client: &mut Client,
    via: &Cluster,
    op: OpId,
    tool: &str,
    arguments: &Value,
    work: Duration,
    cancel: bool,
) -> End {
    let history = client.shared.history.clone();
    let sent_ms = history.now_ms();
    let (id, ttl_ms, runner) = match create(client, via, op, tool, arguments).await {
        Ok(created) => created,
        Err(end) => return end,
    };
    if tool == "slow_compute" {
        // It computes on the instance that created it: a candidate for a kill mid-computation.
        client.shared.computing(runner, Instant::now() + work);
    }
    history.fact(op, Fact::TaskCreated { task_id: id.clone(), ttl_ms, sent_ms });
    let created = Instant::now();
    let deadline = created + work + SLACK;
    let mut answers: BTreeMap<String, (Value, Option<Instant>)> = BTreeMap::new();
    let mut seen = (String::new(), String::new());
    let mut cancel_sent = false;
    while Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
        let task = match call(client, op, "tasks/get", json!({ "taskId": id })).await {
            Polled::Task(task) => task,
            Polled::Unknown => return vanished(client, op),
            Polled::Again => continue,
            Polled::Refused(why) => return End::Failed(why),
            Polled::Hung => return End::Failed("tasks/get hung".into()),
        };
        let status = task["status"].as_str().unwrap_or("?").to_owned();
        let message = status_text(&task);
        if (status.as_str(), message.as_str()) != (seen.0.as_str(), seen.1.as_str()) {
            history.fact(op, Fact::TaskStatus { status: status.clone(), message: message.clone() });
            seen = (status.clone(), message);
        }
        match status.as_str() {
            "working" if cancel && !cancel_sent && created.elapsed() > Duration::from_millis(500) => {
                match call(client, op, "tasks/cancel", json!({ "taskId": id })).await {
                    Polled::Task(ack) => {
                        let status = ack["status"].as_str().unwrap_or("?").to_owned();
                        history.fact(op, Fact::Cancelled { status });
                        cancel_sent = true;
                    }
                    Polled::Unknown => return vanished(client, op),
                    Polled::Refused(why) => return End::Failed(why),
                    Polled::Again | Polled::Hung => {}
                }
            }
            "input_required" => {
                let requests = task["inputRequests"].as_object().cloned().unwrap_or_default();
                match update(client, op, &id, &requests, &mut answers).await {
                    Polled::Unknown => return vanished(client, op),
                    Polled::Hung => return End::Failed("tasks/update hung".into()),
                    Polled::Refused(why) => return End::Failed(why),
                    Polled::Task(_) | Polled::Again => {}
                }
            }
            "completed" | "failed" | "cancelled" => {
                let text = if status == "failed" {
                    task["error"]["message"].as_str().unwrap_or_default().to_owned()
                } else {
                    text_of(&task["result"])
                };
                history.fact(op, Fact::TaskFinal { status: status.clone(), text });
                if status == "cancelled" {
                    // A cancelled task stays cancelled, even once its handler would have finished.
                    tokio::time::sleep(
                        (created + work + Duration::from_secs(1)).saturating_duration_since(Instant::now()),
                    )
                    .await;
                    if let Polled::Task(later) = call(client, op, "tasks/get", json!({ "taskId": id })).await {
                        let status = later["status"].as_str().unwrap_or("?").to_owned();
                        history.fact(op, Fact::TaskFinal { status, text: text_of(&later["result"]) });
                    }
                }
                return End::Done;
            }
            _ => {}
        }
    }
    End::Failed(format!("no final state within {:.0} s (last: {})", (work + SLACK).as_secs_f64(), seen.0))
}

fn vanished(client: &Client, op: OpId) -> End {
    client.shared.history.fact(op, Fact::TaskUnknown);
    End::Failed("unknown task".into())
}

/// The status message and the open questions' messages: where receipts show.
fn status_text(task: &Value) -> String {
    let mut parts = vec![task["statusMessage"].as_str().unwrap_or_default().to_owned()];
    if let Some(requests) = task["inputRequests"].as_object() {
        parts.extend(requests.values().filter_map(|r| r["params"]["message"].as_str().map(str::to_owned)));
    }
    parts.join(" | ")
}

/// Answers the open questions not answered lately: each key gets one answer for good.
async fn update(
    client: &mut Client,
    op: OpId,
    id: &str,
    requests: &Map<String, Value>,
    answers: &mut BTreeMap<String, (Value, Option<Instant>)>,
) -> Polled {
    let mut responses = Map::new();
    for (key, request) in requests {
        let (value, sent) = answers.entry(key.clone()).or_insert_with(|| {
            let value = answer(&mut client.rng, request);
            client.shared.history.fact(op, Fact::Answered { key: key.clone(), value: value.clone() });
            (value, None)
        });
        if sent.is_none_or(|at| at.elapsed() > REANSWER_AFTER) {
            responses.insert(key.clone(), value.clone());
        }
    }
    if responses.is_empty() {
        return Polled::Again;
    }
    let polled = call(client, op, "tasks/update", json!({ "taskId": id, "inputResponses": responses })).await;
    if let Polled::Task(_) = polled {
        for key in responses.keys() {
            if let Some((_, sent)) = answers.get_mut(key) {
                *sent = Some(Instant::now());
            }
        }
    }
    polled
}
