//! One server on several instances: `everything` processes sharing a key ring and a
//! real `redis-server` on 127.0.0.1. Rounds move between instances, states stay
//! single-use across them, tasks are served by any instance and survive the death of
//! the one running them.

mod cluster;

use std::net::SocketAddr;
use std::time::Duration;

use cluster::{call, poll_until, rpc, task, Instance, Listener, Redis};
use serde_json::{json, Value};

/// The lease the instances run tasks with: short, so a takeover comes quickly.
const LEASE_MS: &str = "1000";

/// Within this, a task whose instance died is finished by another.
const TAKEOVER_WITHIN: Duration = Duration::from_secs(30);

fn instances(redis: Option<&Redis>, keys: &str, count: usize) -> Vec<Instance> {
    let url = redis.map(Redis::url);
    let mut env = vec![("MCP_MRTR_STATE_KEYS", keys), ("MCP_MRTR_TASK_LEASE_MS", LEASE_MS)];
    if let Some(url) = &url {
        env.push(("MCP_MRTR_REDIS_URL", url));
    }
    (0..count).map(|_| Instance::start(&env)).collect()
}

fn accept(content: &Value) -> Value {
    json!({ "action": "accept", "content": content })
}

/// The one open question's key of an `input_required` result.
fn only_key(result: &Value) -> String {
    let requests = result["inputRequests"].as_object().unwrap_or_else(|| panic!("no inputRequests: {result}"));
    assert_eq!(requests.len(), 1, "{result}");
    requests.keys().next().unwrap().clone()
}

/// One more round of a `tools/call` on `addr`, answering `key` with `answer`.
async fn round(addr: SocketAddr, tool: &str, state: &Value, key: &str, answer: Value) -> Value {
    let params = json!({
        "name": tool,
        "arguments": {},
        "requestState": state,
        "inputResponses": { key: answer },
    });
    rpc(addr, "tools/call", params).await
}

#[tokio::test]
async fn rounds_alternate_instances_and_a_used_state_is_refused_by_every_instance() {
    let Some(redis) = Redis::start() else { return };
    let keys = cluster::key_ring();
    let nodes = instances(Some(&redis), &keys, 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);
    let tool = "test_input_required_result_multi_round";

    let first = call(a, tool, json!({})).await["result"].clone();
    assert_eq!(first["resultType"], "input_required", "{first}");
    let name_key = only_key(&first);
    let second = round(b, tool, &first["requestState"], &name_key, accept(&json!({ "name": "Ada" }))).await;
    let second = second["result"].clone();
    assert_eq!(second["resultType"], "input_required", "{second}");
    let color_key = only_key(&second);
    let done = round(a, tool, &second["requestState"], &color_key, accept(&json!({ "color": "teal" }))).await;
    assert_eq!(done["result"]["content"][0]["text"], "Ada likes teal", "{done}");

    // The first state was spent on B: A refuses it too, and so does B.
    for node in [a, b] {
        let again = round(node, tool, &first["requestState"], &name_key, accept(&json!({ "name": "Eve" }))).await;
        assert_eq!(again["error"]["code"], -32602, "a spent state opened on {node}: {again}");
    }
}

#[tokio::test]
async fn without_a_shared_guard_each_instance_would_open_a_spent_state_once_more() {
    // The control for the test above: same key ring, no Redis, so each instance keeps
    // its own guard and a state spent on B still opens once on A.
    let keys = cluster::key_ring();
    let nodes = instances(None, &keys, 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);
    let tool = "test_input_required_result_multi_round";
    let first = call(a, tool, json!({})).await["result"].clone();
    let key = only_key(&first);
    let on_b = round(b, tool, &first["requestState"], &key, accept(&json!({ "name": "Ada" }))).await;
    assert_eq!(on_b["result"]["resultType"], "input_required", "{on_b}");
    let on_a = round(a, tool, &first["requestState"], &key, accept(&json!({ "name": "Eve" }))).await;
    assert_eq!(on_a["result"]["resultType"], "input_required", "{on_a}");
}

/// Creates a task of `tool` on `addr` and returns its id.
async fn create_task(addr: SocketAddr, tool: &str, arguments: Value) -> String {
    let created = call(addr, tool, arguments).await;
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    result["taskId"].as_str().unwrap_or_else(|| panic!("no taskId: {created}")).to_owned()
}

async fn update(addr: SocketAddr, id: &str, responses: Value) -> Value {
    rpc(addr, "tasks/update", json!({ "taskId": id, "inputResponses": responses })).await
}

#[tokio::test]
async fn a_task_created_on_one_instance_is_polled_answered_and_cancelled_through_another() {
    let Some(redis) = Redis::start() else { return };
    let nodes = instances(Some(&redis), &cluster::key_ring(), 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);

    let id = create_task(a, "confirm_delete", json!({ "filename": "report.txt" })).await;
    let waiting = poll_until(b, &id, Duration::from_secs(10), |t| t["status"] == "input_required").await;
    let key = only_key(&waiting);
    let ack = update(b, &id, json!({ key: accept(&json!({ "confirm": true })) })).await;
    assert!(ack["result"].is_object(), "{ack}");
    let done = poll_until(a, &id, Duration::from_secs(10), |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Deleted report.txt", "{done}");

    // A long computation started on A, cancelled through B.
    let id = create_task(a, "slow_compute", json!({ "seconds": 60 })).await;
    let cancelled = rpc(b, "tasks/cancel", json!({ "taskId": id })).await;
    assert!(cancelled["result"].is_object(), "{cancelled}");
    let seen = task(a, &id).await;
    assert_eq!(seen["status"], "cancelled", "{seen}");
    // A's handler loses its lease at its next renewal; nothing it does after changes the task.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let later = task(a, &id).await;
    assert_eq!(
        (later["status"].clone(), later["statusMessage"].clone()),
        (seen["status"].clone(), seen["statusMessage"].clone())
    );
}

/// The receipt of the step `step` in a `test_durable_task` message or result.
fn receipt(text: &str, step: &str) -> String {
    let start = text.find(&format!("{step}@")).unwrap_or_else(|| panic!("no {step} receipt in {text:?}"));
    text[start..].split_whitespace().next().unwrap().trim_end_matches([';', ':']).to_owned()
}

/// Polls until the task ends, recording every status seen on the way.
async fn finish(addr: SocketAddr, id: &str) -> (Value, Vec<String>) {
    let started = std::time::Instant::now();
    let mut seen = Vec::new();
    loop {
        let task = task(addr, id).await;
        let status = task["status"].as_str().unwrap_or("?").to_owned();
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return (task, seen);
        }
        assert!(started.elapsed() < TAKEOVER_WITHIN, "task {id} did not end; statuses {seen:?}, last {task}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_task_waiting_for_a_person_outlives_its_instance() {
    let Some(redis) = Redis::start() else { return };
    let mut nodes = instances(Some(&redis), &cluster::key_ring(), 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);
    let pid_a = nodes[0].pid();

    let id = create_task(a, "test_durable_task", json!({ "seconds": 0.5 })).await;
    let waiting = poll_until(a, &id, Duration::from_secs(10), |t| t["status"] == "input_required").await;
    let ticket = receipt(waiting["statusMessage"].as_str().unwrap_or_default(), "ticket");
    assert!(ticket.starts_with(&format!("ticket@pid{pid_a}#")), "{ticket}");
    let key = only_key(&waiting);

    nodes[0].kill();
    let ack = update(b, &id, json!({ key: accept(&json!({ "approve": true })) })).await;
    assert!(ack["result"].is_object(), "{ack}");
    let (done, statuses) = finish(b, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(receipt(text, "ticket"), ticket, "the ticket step ran again: {text}");
    assert!(receipt(text, "shipped").starts_with(&format!("shipped@pid{}#", nodes[1].pid())), "{text}");
    assert!(!statuses.contains(&"input_required".to_owned()), "asked again: {statuses:?}");
}

#[tokio::test]
async fn a_task_computing_on_an_instance_that_dies_is_finished_by_another() {
    let Some(redis) = Redis::start() else { return };
    let mut nodes = instances(Some(&redis), &cluster::key_ring(), 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);
    let pid_a = nodes[0].pid();

    let id = create_task(a, "test_durable_task", json!({ "seconds": 3 })).await;
    let waiting = poll_until(a, &id, Duration::from_secs(10), |t| t["status"] == "input_required").await;
    let ticket = receipt(waiting["statusMessage"].as_str().unwrap_or_default(), "ticket");
    let key = only_key(&waiting);
    // Answered on A, so A runs the rest; it dies while working.
    update(a, &id, json!({ key: accept(&json!({ "approve": true })) })).await;
    let working = poll_until(b, &id, Duration::from_secs(10), |t| {
        t["statusMessage"].as_str().unwrap_or_default().contains("working")
    })
    .await;
    let work = receipt(working["statusMessage"].as_str().unwrap_or_default(), "work");
    nodes[0].kill();

    let (done, statuses) = finish(b, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(receipt(text, "ticket"), ticket, "the ticket step ran again: {text}");
    assert_eq!(receipt(text, "work"), work, "the work step, taken on A mid-run, ran again: {text}");
    assert!(work.contains(&format!("pid{pid_a}#")), "{work}");
    assert!(receipt(text, "shipped").starts_with(&format!("shipped@pid{}#", nodes[1].pid())), "{text}");
    assert_eq!(statuses, ["working", "completed"], "asked again, or ended otherwise");
}

#[tokio::test]
async fn a_change_made_on_one_instance_reaches_listeners_on_every_instance() {
    let Some(redis) = Redis::start() else { return };
    let nodes = instances(Some(&redis), &cluster::key_ring(), 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);
    let mut on_a = Listener::open(a, json!({ "toolsListChanged": true })).await;
    let mut on_b = Listener::open(b, json!({ "toolsListChanged": true })).await;
    for listener in [&mut on_a, &mut on_b] {
        let ack = listener.next().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    }
    let toggled = call(a, "test_trigger_tool_change", json!({})).await;
    assert!(toggled["result"].is_object(), "{toggled}");
    for listener in [&mut on_a, &mut on_b] {
        let changed = listener.next().await;
        assert_eq!(changed["method"], "notifications/tools/list_changed", "{changed}");
    }
}

#[tokio::test]
async fn while_redis_is_away_requests_fail_cleanly_and_nothing_is_let_through_unrecorded() {
    let Some(mut redis) = Redis::start() else { return };
    let nodes = instances(Some(&redis), &cluster::key_ring(), 1);
    let a = nodes[0].addr;
    let mut listener = Listener::open(a, json!({ "toolsListChanged": true })).await;
    listener.next().await;
    let tool = "test_input_required_result_multi_round";
    let first = call(a, tool, json!({})).await["result"].clone();
    let key = only_key(&first);

    redis.kill();
    // The state cannot be recorded as used, so it is refused, with a "try again later".
    let refused = round(a, tool, &first["requestState"], &key, accept(&json!({ "name": "Ada" }))).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("try again later"), "{refused}");
    let no_task = call(a, "confirm_delete", json!({ "filename": "x" })).await;
    assert_eq!(no_task["error"]["code"], -32603, "{no_task}");
    assert_eq!(no_task["error"]["message"], "the task store is unavailable", "{no_task}");
    // Calls that need no store still work.
    let plain = call(a, "test_simple_text", json!({})).await;
    assert!(plain["result"]["content"].is_array(), "{plain}");

    // Redis comes back (empty): the instance reconnects, the state opens once, and the
    // listener hears that every list may have changed while it was away.
    redis.restart();
    let started = std::time::Instant::now();
    let reopened = loop {
        let reply = round(a, tool, &first["requestState"], &key, accept(&json!({ "name": "Ada" }))).await;
        if reply.get("result").is_some() || started.elapsed() > Duration::from_secs(15) {
            break reply;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(reopened["result"]["resultType"], "input_required", "{reopened}");
    let told = listener.next().await;
    assert_eq!(told["method"], "notifications/tools/list_changed", "{told}");
}
