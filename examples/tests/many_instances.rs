//! One server on several instances: `everything` processes sharing a key ring and a
//! real `redis-server` on 127.0.0.1. Rounds move between instances, a state claimed by a
//! round taking a `once!` step stays claimed across them, tasks are served by any instance and survive the death of
//! the one running them, and list changes reach listeners everywhere.

use crate::instance;

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use instance::{Cluster, Instance, Redis, Sentinels};
use mcp_mrtr::testing::answer;
use serde_json::{json, Value};

/// The lease the instances run tasks with: short, so a takeover comes quickly.
const LEASE_MS: &str = "1000";

/// Within this, a task whose instance died is finished by another.
const TAKEOVER_WITHIN: Duration = Duration::from_secs(30);

fn instances(redis: Option<&Redis>, keys: &str, lease_ms: &str, count: usize) -> Vec<Instance> {
    instances_reaching(&redis.map(Redis::env).unwrap_or_default(), keys, lease_ms, count)
}

/// `count` instances sharing `keys`, reaching Redis as `reach` (the fixture's environment
/// for one deployment) says.
fn instances_reaching(reach: &[(&str, String)], keys: &str, lease_ms: &str, count: usize) -> Vec<Instance> {
    let mut env = vec![("MCP_MRTR_STATE_KEYS", keys), ("MCP_MRTR_TASK_LEASE_MS", lease_ms)];
    env.extend(reach.iter().map(|(name, value)| (*name, value.as_str())));
    (0..count).map(|_| Instance::start_with(&env)).collect()
}

/// What the test client declares: elicitation, and the tasks extension.
fn caps() -> Value {
    json!({ "elicitation": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } })
}

fn rpc(addr: SocketAddr, method: &str, params: Value) -> Value {
    instance::call(addr, &instance::request(method, params, &caps()))
}

#[allow(clippy::needless_pass_by_value, reason = "called with json! literals")]
fn call(addr: SocketAddr, tool: &str, arguments: Value) -> Value {
    rpc(addr, "tools/call", json!({ "name": tool, "arguments": arguments }))
}

/// The one open question's key of an `input_required` result or task.
fn only_key(result: &Value) -> String {
    let requests = result["inputRequests"].as_object().unwrap_or_else(|| panic!("no inputRequests: {result}"));
    assert_eq!(requests.len(), 1, "{result}");
    requests.keys().next().unwrap().clone()
}

const TWO_ROUNDS: &str = "test_input_required_result_multi_round";

/// The fixture's tool whose second round takes a `once!` step: that round claims its state.
const ONCE: &str = "test_once_side_effect";

/// Round two of a call of [`ONCE`] (`call_id`) on `addr`, presenting `state`: the round
/// that takes the step.
fn start_step(addr: SocketAddr, call_id: &str, state: &Value) -> Value {
    let params = json!({
        "name": ONCE,
        "arguments": { "call_id": call_id },
        "requestState": state,
        "inputResponses": { "start": answer::accept(json!({ "ok": true })) },
    });
    rpc(addr, "tools/call", params)
}

/// One more round of the two-question flow on `addr`, answering `key` with `content`.
fn round(addr: SocketAddr, state: &Value, key: &str, content: &Value) -> Value {
    let params = json!({
        "name": TWO_ROUNDS,
        "arguments": {},
        "requestState": state,
        "inputResponses": { key: answer::accept(content.clone()) },
    });
    rpc(addr, "tools/call", params)
}

#[test]
fn rounds_alternate_instances_and_a_claimed_state_is_refused_by_every_instance() {
    let Some(redis) = Redis::start() else { return };
    rounds_alternate_and_a_claim_holds_everywhere(&redis.env());
}

/// Rounds alternating two instances sharing one Redis (reached as `reach` says), and a claim made through one
/// refused by both: the flow every deployment of Redis must serve.
pub(crate) fn rounds_alternate_and_a_claim_holds_everywhere(reach: &[(&str, String)]) {
    let nodes = instances_reaching(reach, &instance::new_key("k1"), LEASE_MS, 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);

    let first = call(a, TWO_ROUNDS, json!({}))["result"].clone();
    let name_key = only_key(&first);
    let second = round(b, &first["requestState"], &name_key, &json!({ "name": "Ada" }))["result"].clone();
    let color_key = only_key(&second);
    let done = round(a, &second["requestState"], &color_key, &json!({ "color": "teal" }));
    assert_eq!(done["result"]["content"][0]["text"], "Ada likes teal", "{done}");

    // A round that takes a once! step claims it for the call in Redis: once taken on B,
    // neither the state nor a sibling of it (sealed by A in a round without an answer)
    // takes it again, on A or on B.
    let once = call(a, ONCE, json!({ "call_id": "across" }))["result"].clone();
    let sibling = sibling_of(a, "across", &once["requestState"]);
    let stepped = start_step(b, "across", &once["requestState"]);
    assert_eq!(stepped["result"]["resultType"], "input_required", "{stepped}");
    for node in [a, b] {
        for state in [&once["requestState"], &sibling] {
            let again = start_step(node, "across", state);
            assert_eq!(again["error"]["code"], -32602, "a state of the call took its step again on {node}: {again}");
        }
    }
    // Siblings presented at once, half to each instance: one takes the step.
    let first = call(a, ONCE, json!({ "call_id": "siblings" }))["result"]["requestState"].clone();
    let mut states = vec![first];
    for n in 0..5 {
        let last = states.last().unwrap().clone();
        states.push(sibling_of([a, b][n % 2], "siblings", &last));
    }
    let stepped = std::thread::scope(|scope| {
        let presented: Vec<_> = states
            .iter()
            .enumerate()
            .map(|(n, state)| scope.spawn(move || start_step([a, b][n % 2], "siblings", state)))
            .collect();
        presented.into_iter().map(reply_of).filter(|reply| reply["result"]["resultType"] == "input_required").count()
    });
    assert_eq!(stepped, 1, "siblings took the step {stepped} times");
}

/// A sibling of `state`: the state presented again without its answer (a round that
/// takes no step) seals a fresh one, with the same answers.
fn sibling_of(addr: SocketAddr, call_id: &str, state: &Value) -> Value {
    let params = json!({ "name": ONCE, "arguments": { "call_id": call_id }, "requestState": state });
    let reply = rpc(addr, "tools/call", params);
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"].clone()
}

fn reply_of(joined: std::thread::ScopedJoinHandle<'_, Value>) -> Value {
    joined.join().expect("the request's thread")
}

#[test]
fn without_a_shared_guard_each_instance_would_take_a_claimed_step_once_more() {
    // The control for the test above: same key ring, no Redis, so each instance keeps
    // its own guard and a state claimed on B still takes its step once on A.
    let nodes = instances(None, &instance::new_key("k1"), LEASE_MS, 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);
    let first = call(a, ONCE, json!({ "call_id": "control" }))["result"].clone();
    let on_b = start_step(b, "control", &first["requestState"]);
    assert_eq!(on_b["result"]["resultType"], "input_required", "{on_b}");
    let on_a = start_step(a, "control", &first["requestState"]);
    assert_eq!(on_a["result"]["resultType"], "input_required", "{on_a}");
}

/// Creates a task of `tool` on `addr` and returns its id.
fn create_task(addr: SocketAddr, tool: &str, arguments: Value) -> String {
    let created = call(addr, tool, arguments);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no taskId: {created}")).to_owned()
}

fn task(addr: SocketAddr, id: &str) -> Value {
    rpc(addr, "tasks/get", json!({ "taskId": id }))["result"].clone()
}

fn update(addr: SocketAddr, id: &str, key: &str, content: Value) {
    let ack = rpc(addr, "tasks/update", json!({ "taskId": id, "inputResponses": { key: answer::accept(content) } }));
    assert!(ack["result"].is_object(), "{ack}");
}

/// Polls `tasks/get` on `addr` until `done` holds for the task (bounded).
fn poll_until(addr: SocketAddr, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let task = task(addr, id);
        if done(&task) {
            return task;
        }
        assert!(started.elapsed() < TAKEOVER_WITHIN, "task {id} never got there; last: {task}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Polls until the task ends, recording every status seen on the way.
fn finish(addr: SocketAddr, id: &str, within: Duration) -> (Value, Vec<String>) {
    let started = Instant::now();
    let mut seen = Vec::new();
    loop {
        let task = task(addr, id);
        let status = task["status"].as_str().unwrap_or("?").to_owned();
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return (task, seen);
        }
        assert!(started.elapsed() < within, "task {id} did not end; statuses {seen:?}, last {task}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn status_message(task: &Value) -> &str {
    task["statusMessage"].as_str().unwrap_or_default()
}

/// The receipt of the step `step` in a `test_durable_task` message or result.
fn receipt(text: &str, step: &str) -> String {
    let start = text.find(&format!("{step}@")).unwrap_or_else(|| panic!("no {step} receipt in {text:?}"));
    text[start..].split_whitespace().next().unwrap().trim_end_matches([';', ':']).to_owned()
}

fn result_text(task: &Value) -> &str {
    task["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

#[test]
fn a_task_created_on_one_instance_is_polled_answered_and_cancelled_through_another() {
    let Some(redis) = Redis::start() else { return };
    a_task_is_served_through_another_instance(&redis.env());
}

/// A task created on one of two instances sharing one Redis (reached as `reach` says), polled and answered through another,
/// and one cancelled through another.
pub(crate) fn a_task_is_served_through_another_instance(reach: &[(&str, String)]) {
    let nodes = instances_reaching(reach, &instance::new_key("k1"), LEASE_MS, 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);

    let id = create_task(a, "confirm_delete", json!({ "filename": "report.txt" }));
    let waiting = poll_until(b, &id, |t| t["status"] == "input_required");
    update(b, &id, &only_key(&waiting), json!({ "confirm": true }));
    let done = poll_until(a, &id, |t| t["status"] == "completed");
    assert_eq!(result_text(&done), "Deleted report.txt", "{done}");

    // A long computation started on A, cancelled through B.
    let id = create_task(a, "slow_compute", json!({ "seconds": 60 }));
    let cancelled = rpc(b, "tasks/cancel", json!({ "taskId": id }));
    assert!(cancelled["result"].is_object(), "{cancelled}");
    let seen = task(a, &id);
    assert_eq!(seen["status"], "cancelled", "{seen}");
    // A's handler loses its lease at its next renewal and stops; nothing it did after
    // the cancel changed the task.
    std::thread::sleep(Duration::from_millis(1500));
    let later = task(a, &id);
    assert_eq!((&later["status"], &later["statusMessage"]), (&seen["status"], &seen["statusMessage"]));
    let mut nodes = nodes.into_iter();
    let first = nodes.next().unwrap();
    first.terminate();
    let (_, log) = first.exit_within(Duration::from_secs(20));
    assert!(log.contains("lost its lease"), "A's handler did not stop: {log}");
}

#[test]
fn a_task_waiting_for_a_person_outlives_its_instance() {
    let Some(redis) = Redis::start() else { return };
    let mut nodes = instances(Some(&redis), &instance::new_key("k1"), LEASE_MS, 2);
    let (a, b, pid_a) = (nodes[0].addr, nodes[1].addr, nodes[0].pid());

    let id = create_task(a, "test_durable_task", json!({ "seconds": 0.5 }));
    let waiting = poll_until(a, &id, |t| t["status"] == "input_required");
    let ticket = receipt(status_message(&waiting), "ticket");
    assert!(ticket.starts_with(&format!("ticket@pid{pid_a}#")), "{ticket}");

    nodes[0].kill();
    update(b, &id, &only_key(&waiting), json!({ "approve": true }));
    let (done, statuses) = finish(b, &id, TAKEOVER_WITHIN);
    assert_eq!(done["status"], "completed", "{done}");
    let text = result_text(&done);
    assert_eq!(receipt(text, "ticket"), ticket, "the ticket step ran again: {text}");
    assert!(receipt(text, "shipped").starts_with(&format!("shipped@pid{}#", nodes[1].pid())), "{text}");
    assert!(!statuses.iter().any(|s| s == "input_required"), "asked again: {statuses:?}");
}

/// Starts a `test_durable_task` of `seconds` on `a`, approves it there (so `a` runs the
/// rest) and returns once `a` is working on it: the task id, and its ticket and work
/// receipts (both taken on `a`).
fn working_on(a: SocketAddr, seconds: u32) -> (String, String, String) {
    let id = create_task(a, "test_durable_task", json!({ "seconds": seconds }));
    let waiting = poll_until(a, &id, |t| t["status"] == "input_required");
    update(a, &id, &only_key(&waiting), json!({ "approve": true }));
    let working = poll_until(a, &id, |t| status_message(t).contains("working"));
    let message = status_message(&working);
    (id.clone(), receipt(message, "ticket"), receipt(message, "work"))
}

#[test]
fn a_task_computing_on_an_instance_that_dies_is_finished_by_another() {
    let Some(redis) = Redis::start() else { return };
    let mut nodes = instances(Some(&redis), &instance::new_key("k1"), LEASE_MS, 2);
    let (a, b, pid_a) = (nodes[0].addr, nodes[1].addr, nodes[0].pid());

    let (id, ticket, work) = working_on(a, 3);
    assert!(work.contains(&format!("pid{pid_a}#")), "{work}");
    nodes[0].kill();

    let (done, statuses) = finish(b, &id, TAKEOVER_WITHIN);
    assert_eq!(done["status"], "completed", "{done}");
    let text = result_text(&done);
    assert_eq!(receipt(text, "ticket"), ticket, "the ticket step ran again: {text}");
    assert_eq!(receipt(text, "work"), work, "the work step, taken on A mid-run, ran again: {text}");
    assert!(receipt(text, "shipped").starts_with(&format!("shipped@pid{}#", nodes[1].pid())), "{text}");
    assert_eq!(statuses, ["working", "completed"], "asked again, or ended otherwise");
}

#[test]
fn a_task_handed_back_at_shutdown_is_taken_over_at_once_not_after_its_lease() {
    let Some(redis) = Redis::start() else { return };
    // A lease far longer than the test's bound: only the hand-back can explain a quick takeover.
    let nodes = instances(Some(&redis), &instance::new_key("k1"), "120000", 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);
    let (id, ticket, work) = working_on(a, 2);

    let mut nodes = nodes.into_iter();
    let first = nodes.next().unwrap();
    first.terminate();
    let (exit, log) = first.exit_within(Duration::from_secs(20));
    assert!(exit.success(), "{exit}: {log}");
    assert!(log.contains("handed a running task back"), "{log}");

    let (done, _) = finish(b, &id, Duration::from_secs(20));
    assert_eq!(done["status"], "completed", "{done}");
    let text = result_text(&done);
    assert_eq!((receipt(text, "ticket"), receipt(text, "work")), (ticket, work), "{text}");
}

/// An open `subscriptions/listen` stream on `addr`, past its acknowledgement.
fn listen(addr: SocketAddr) -> (TcpStream, String) {
    let request =
        instance::request("subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }), &caps());
    let mut stream = instance::open(addr, &request);
    let mut seen = String::new();
    instance::read_until(&mut stream, &mut seen, "notifications/subscriptions/acknowledged");
    (stream, seen)
}

#[test]
fn a_change_made_on_one_instance_reaches_listeners_on_every_instance() {
    let Some(redis) = Redis::start() else { return };
    a_change_reaches_every_listener(&redis.env());
}

/// A catalog change made on one of two instances sharing one Redis (reached as `reach` says), heard by the listeners of both.
pub(crate) fn a_change_reaches_every_listener(reach: &[(&str, String)]) {
    let nodes = instances_reaching(reach, &instance::new_key("k1"), LEASE_MS, 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);
    let mut listeners = [listen(a), listen(b)];
    let toggled = call(a, "test_trigger_tool_change", json!({}));
    assert!(toggled["result"].is_object(), "{toggled}");
    // B's own catalog did not change: only the fanout can tell its listener.
    for (stream, seen) in &mut listeners {
        instance::read_until(stream, seen, "notifications/tools/list_changed");
    }
}

#[test]
fn while_redis_is_away_requests_fail_cleanly_and_nothing_is_let_through_unrecorded() {
    let Some(mut redis) = Redis::start() else { return };
    let nodes = instances(Some(&redis), &instance::new_key("k1"), LEASE_MS, 1);
    let a = nodes[0].addr;
    let (mut stream, mut seen) = listen(a);
    let first = call(a, ONCE, json!({ "call_id": "redis-away" }))["result"].clone();
    let plain = call(a, TWO_ROUNDS, json!({}))["result"].clone();

    redis.kill();
    // The round that takes a step cannot claim it, so it is refused, and since whether a
    // claim landed is not known the client is told to start the call over; a round that
    // takes none needs no guard and goes on.
    let refused = start_step(a, "redis-away", &first["requestState"]);
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("start the call over"), "{refused}");
    let key = only_key(&plain);
    let plain_round = round(a, &plain["requestState"], &key, &json!({ "name": "Ada" }));
    assert_eq!(plain_round["result"]["resultType"], "input_required", "{plain_round}");
    let no_task = call(a, "confirm_delete", json!({ "filename": "x" }));
    assert_eq!(no_task["error"]["message"], "the task store is unavailable", "{no_task}");
    // Calls that need no store still work.
    assert!(call(a, "test_simple_text", json!({}))["result"]["content"].is_array());

    // Redis comes back empty: the instance reconnects, and the listener hears that every
    // list may have changed while it was away. The guard's records are gone, so it cannot
    // tell whether a state sealed before was claimed: it refuses it (the call starts over)
    // rather than risk the step twice. A call started now takes its step.
    redis.restart();
    let started = Instant::now();
    let reopened = loop {
        let reply = start_step(a, "redis-away", &first["requestState"]);
        if reply["error"]["code"] != -32603 || started.elapsed() > Duration::from_secs(15) {
            break reply;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(reopened["error"]["code"], -32602, "refused as possibly used: {reopened}");
    // The guard's memory began again with a margin for instances whose clocks run ahead
    // of Redis's (`RedisGuard::clock_skew`): a call sealed after it takes its step.
    std::thread::sleep(Duration::from_millis(400));
    let again = call(a, ONCE, json!({ "call_id": "redis-back" }))["result"].clone();
    let stepped = start_step(a, "redis-back", &again["requestState"]);
    assert_eq!(stepped["result"]["resultType"], "input_required", "{stepped}");
    instance::read_until(&mut stream, &mut seen, "notifications/tools/list_changed");
}

/// Behind Sentinel, the primary is killed (SIGKILL) and the replica promoted while a
/// `once!` call and a task are in flight; see [`a_failover_keeps_claims_and_tasks`].
#[test]
fn a_failover_behind_sentinel_takes_no_step_twice_and_keeps_replicated_tasks() {
    let Some(mut deployment) = Sentinels::start() else { return };
    let reach = deployment.env();
    a_failover_keeps_claims_and_tasks(&reach, 1, || {
        deployment.primary.synced();
        deployment.fail_over();
    });
}

/// A Redis Cluster loses a primary (SIGKILL) and its replica takes its slots over; the
/// claims spread over the shards (each state in its digest's bucket), so whichever shard
/// they were on, see [`a_failover_keeps_claims_and_tasks`].
#[test]
fn a_cluster_failover_takes_no_step_twice_and_keeps_replicated_tasks() {
    let Some(mut cluster) = Cluster::start() else { return };
    let reach = cluster.env();
    a_failover_keeps_claims_and_tasks(&reach, 8, || {
        cluster.synced();
        cluster.fail_over();
    });
}

/// What a failover must keep, whatever the deployment. Two instances reaching Redis as
/// `reach` says claim `calls` states (a `once!` step each) and start a task that waits
/// for its answer; `fail_over` replicates everything, then kills a primary. Afterwards
/// the instances follow the new primary: every claimed state is refused (the guard sees
/// another Redis process), the task is answered and completes once, and a call started
/// afterwards takes its step once, across instances.
fn a_failover_keeps_claims_and_tasks(reach: &[(&str, String)], calls: usize, fail_over: impl FnOnce()) {
    let nodes = instances_reaching(reach, &instance::new_key("k1"), LEASE_MS, 2);
    let (a, b) = (nodes[0].addr, nodes[1].addr);
    let claimed: Vec<(String, Value)> = (0..calls)
        .map(|n| {
            let call_id = format!("failover-{n}");
            let once = call(a, ONCE, json!({ "call_id": call_id }))["result"]["requestState"].clone();
            let stepped = start_step(b, &call_id, &once);
            assert_eq!(stepped["result"]["resultType"], "input_required", "{stepped}");
            (call_id, once)
        })
        .collect();
    let id = create_task(a, "confirm_delete", json!({ "filename": "kept.txt" }));
    let waiting = poll_until(b, &id, |t| t["status"] == "input_required");

    fail_over();
    // While an instance finds the new primary its requests say "try again later"; an
    // honest client does, and a claimed state is then refused, never run again.
    for (call_id, state) in &claimed {
        let replayed = until_taken(|| start_step(a, call_id, state));
        assert_eq!(replayed["error"]["code"], -32602, "{call_id} opened after the failover: {replayed}");
    }
    let answer =
        json!({ "taskId": id, "inputResponses": { only_key(&waiting): answer::accept(json!({ "confirm": true })) } });
    let ack = until_taken(|| rpc(b, "tasks/update", answer.clone()));
    assert!(ack["result"].is_object(), "the task could not be answered after the failover: {ack}");
    let done = poll_until(a, &id, |t| t["status"] == "completed");
    assert_eq!(result_text(&done), "Deleted kept.txt", "{done}");

    // Each instance's guard notices the new Redis process within its watch's second and
    // begins the memory again with the margin for fast clocks: a call sealed after both
    // takes its step, once.
    std::thread::sleep(Duration::from_millis(1500));
    let fresh = call(a, ONCE, json!({ "call_id": "after" }))["result"].clone();
    let stepped = start_step(b, "after", &fresh["requestState"]);
    assert_eq!(stepped["result"]["resultType"], "input_required", "{stepped}");
    let again = start_step(a, "after", &fresh["requestState"]);
    assert_eq!(again["error"]["code"], -32602, "{again}");
}

/// `request`'s reply once it is no "try again later" (`-32603`), as an honest client
/// retries it (bounded).
pub(crate) fn until_taken(request: impl Fn() -> Value) -> Value {
    let started = Instant::now();
    loop {
        let reply = request();
        if reply["error"]["code"] != -32603 || started.elapsed() > TAKEOVER_WITHIN {
            return reply;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
