//! `once!` means once per *call* (fifth audit, D1): whatever states of one call a client
//! presents (the same one twice, siblings minted by rounds that take no step, forks, in
//! parallel), each step of the call runs at most once, and a first honest presentation
//! is never refused. Over HTTP on 127.0.0.1; across instances on a shared guard.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcp_mrtr::context::InputRequired;
use mcp_mrtr::prelude::*;
use mcp_mrtr::request_state::{KeyRing, MemoryGuard, StateConfig, StateGuard, StateKey};
use mcp_mrtr::testing::answer;
use mcp_mrtr_tests::harness::{Rpc, SharedGuard, TestServer, USED};
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

/// Three steps: one before the first ask, one after each answer. Keys `first`, `second`.
#[tool]
async fn chain(call: String) -> Result<String, ToolError> {
    let a = once!(take(&call, 'a'));
    let first: Confirm = ask!(elicit "First?")?;
    let b = once!(take(&call, 'b'));
    let second: Confirm = ask!(elicit format!("b ran {b}. Second?"))?;
    let c = once!(take(&call, 'c'));
    Ok(format!("a={a} b={b} c={c} ok={}", first.ok && second.ok))
}

fn go() -> mcp_mrtr::question::Elicit<Confirm> {
    mcp_mrtr::question::Elicit::new("Go on?")
}

/// Built by hand: a reusable state, then a single-use one whose reading hands off.
#[tool]
async fn handoff(ctx: &Ctx, call: String) -> Result<String, ToolError> {
    match ctx.request_state::<u32>().await? {
        None => ctx.input_required(InputRequired::new().ask("go", &go()).state(&1u32)).await,
        Some(1) => ctx.input_required(InputRequired::new().ask("go", &go()).state(&2u32).single_use()).await,
        Some(_) => Ok(format!("handed off {}", take(&call, 'h'))),
    }
}

fn server(key: &StateKey, guard: impl StateGuard) -> Server {
    Server::new("once-per-call", "0")
        .tools(tools![chain, handoff])
        .request_state(StateConfig::new(KeyRing::new(key.clone())).single_use(guard))
}

fn call(name: &str, id: &str) -> Rpc {
    Rpc::call_tool(name, json!({ "call": id }))
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

/// The audit's repro: a state presented without its answer mints a sibling; neither it,
/// nor the original once claimed, nor any sibling of it, takes the step again.
#[tokio::test]
async fn no_sibling_state_takes_a_step_another_took() {
    let server = TestServer::start(server(&StateKey::random(), MemoryGuard::new())).await;
    let rpc = call("chain", "siblings");
    let s1 = state_of(&server.call(&rpc).await);
    let sibling = state_of(&server.call(&present(&rpc, &s1, None)).await);
    assert_ne!(sibling, s1, "a round without a step seals a fresh state");
    let stepped = server.call(&present(&rpc, &s1, Some(json!({ "first": ok() })))).await;
    assert_eq!(stepped["result"]["inputRequests"]["second"]["params"]["message"], "b ran 1. Second?", "{stepped}");
    for state in [&s1, &sibling] {
        let again = server.call(&present(&rpc, state, Some(json!({ "first": ok() })))).await;
        assert_eq!(again["error"], json!({ "code": -32602, "message": USED }), "{again}");
    }
    // Even the claimed state still mints siblings (its round takes no step), and none
    // of them takes the step.
    let mut from = s1.clone();
    for _ in 0..3 {
        from = state_of(&server.call(&present(&rpc, &from, None)).await);
        let again = server.call(&present(&rpc, &from, Some(json!({ "first": ok() })))).await;
        assert_eq!(again["error"]["message"], USED, "{again}");
    }
    assert_eq!(taken("siblings", 'b'), 1, "step b ran twice");
    let done = server.call(&present(&rpc, &state_of(&stepped), Some(json!({ "second": ok() })))).await;
    assert_eq!(done["result"]["content"][0]["text"], "a=1 b=1 c=1 ok=true", "{done}");
}

/// Siblings presented at once, on four worker threads: exactly one takes the step.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn siblings_presented_in_parallel_take_the_step_once() {
    let server = Arc::new(TestServer::start(server(&StateKey::random(), MemoryGuard::new())).await);
    let rpc = call("chain", "parallel-siblings");
    let mut states = vec![state_of(&server.call(&rpc).await)];
    for _ in 0..7 {
        let last = states.last().unwrap().clone();
        states.push(state_of(&server.call(&present(&rpc, &last, None)).await));
    }
    let mut parallel = tokio::task::JoinSet::new();
    for state in states {
        let (server, request) = (server.clone(), present(&rpc, &state, Some(json!({ "first": ok() }))));
        parallel.spawn(async move { server.call(&request).await });
    }
    let mut stepped = 0;
    while let Some(reply) = parallel.join_next().await {
        let reply = reply.unwrap();
        if reply["result"]["resultType"] == "input_required" {
            stepped += 1;
        } else {
            assert_eq!(reply["error"]["message"], USED, "{reply}");
        }
    }
    assert_eq!((stepped, taken("parallel-siblings", 'b')), (1, 1));
}

/// Two instances on one guard (as on one Redis): a sibling minted by one instance does
/// not take on the other the step the first took.
#[tokio::test]
async fn across_instances_a_sibling_does_not_take_the_step_again() {
    let (key, guard) = (StateKey::random(), SharedGuard::default());
    let a = TestServer::start(server(&key, guard.clone())).await;
    let b = TestServer::start(server(&key, guard)).await;
    let rpc = call("chain", "two-instances");
    let s1 = state_of(&a.call(&rpc).await);
    let sibling = state_of(&b.call(&present(&rpc, &s1, None)).await);
    state_of(&b.call(&present(&rpc, &s1, Some(json!({ "first": ok() })))).await);
    let again = a.call(&present(&rpc, &sibling, Some(json!({ "first": ok() })))).await;
    assert_eq!(again["error"]["message"], USED, "{again}");
    assert_eq!(taken("two-instances", 'b'), 1);
}

/// A hand-built single-use state is read once per call and round: two forks of the
/// round before (its state reusable) each seal one, and only one of them is read.
#[tokio::test]
async fn forks_of_a_hand_built_single_use_state_are_read_once() {
    let server = TestServer::start(server(&StateKey::random(), MemoryGuard::new())).await;
    let rpc = call("handoff", "forks");
    let reusable = state_of(&server.call(&rpc).await);
    let forks: Vec<Value> = futures_util::future::join_all(
        (0..2).map(|_| async { server.call(&present(&rpc, &reusable, Some(json!({ "go": ok() })))).await }),
    )
    .await
    .iter()
    .map(state_of)
    .collect();
    assert_ne!(forks[0], forks[1]);
    let first = server.call(&present(&rpc, &forks[0], Some(json!({ "go": ok() })))).await;
    assert_eq!(first["result"]["content"][0]["text"], "handed off 1", "{first}");
    let second = server.call(&present(&rpc, &forks[1], Some(json!({ "go": ok() })))).await;
    assert_eq!(second["error"]["message"], USED, "{second}");
    assert_eq!(taken("forks", 'h'), 1);
}

/// A state says when it was sealed (D6): a restart that lowers the state lifetime does
/// not make a state claimed before the restart look sealed after it.
#[tokio::test]
async fn a_shorter_lifetime_after_a_restart_does_not_reopen_a_claimed_state() {
    let key = StateKey::random();
    let before = TestServer::start(server(&key, MemoryGuard::new())).await;
    let rpc = call("chain", "restart-shorter-ttl");
    let s1 = state_of(&before.call(&rpc).await);
    state_of(&before.call(&present(&rpc, &s1, Some(json!({ "first": ok() })))).await);
    drop(before);
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    // The same server restarted with a tenth of the lifetime and a guard that remembers
    // nothing from before.
    let shorter = StateConfig::new(KeyRing::new(key.clone()))
        .ttl(std::time::Duration::from_mins(1))
        .single_use(MemoryGuard::new());
    let after = TestServer::start(Server::new("once-per-call", "0").tools(tools![chain]).request_state(shorter)).await;
    let again = after.call(&present(&rpc, &s1, Some(json!({ "first": ok() })))).await;
    assert_eq!(again["error"]["message"], USED, "{again}");
    assert_eq!(taken("restart-shorter-ttl", 'b'), 1);
}

/// Asks, becomes a task, then takes a step.
#[tool(task = "optional")]
async fn escalating(ctx: &Ctx, call: String) -> Result<String, ToolError> {
    let go: Confirm = ask!(elicit "Go?")?;
    ctx.continue_as_task().await;
    let step = once!(take(&call, 't'));
    Ok(format!("step {step} (go: {})", go.ok))
}

/// Two siblings of one state each become a task: the step is the call's, so only one of
/// the two tasks takes it.
#[tokio::test]
async fn siblings_that_become_tasks_take_the_step_once() {
    let server = TestServer::start(
        Server::new("once-per-call", "0")
            .tools(tools![escalating])
            .tasks(mcp_mrtr::tasks::TaskConfig::default())
            .request_state(StateConfig::new(KeyRing::new(StateKey::random())).single_use(MemoryGuard::new())),
    )
    .await;
    let rpc = call("escalating", "tasks").caps(mcp_mrtr_tests::harness::task_caps());
    let s1 = state_of(&server.call(&rpc).await);
    let sibling = state_of(&server.call(&present(&rpc, &s1, None)).await);
    let mut ended = Vec::new();
    for state in [&s1, &sibling] {
        let created = server.call(&present(&rpc, state, Some(json!({ "go": ok() })))).await;
        let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned();
        let get = Rpc::new("tasks/get").param("taskId", json!(id)).caps(mcp_mrtr_tests::harness::task_caps());
        let mut task = Value::Null;
        for _ in 0..250 {
            task = server.call(&get).await["result"].clone();
            if task["status"] == "completed" || task["status"] == "failed" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        ended.push(task);
    }
    assert_eq!(ended[0]["status"], "completed", "{}", ended[0]);
    assert_eq!(ended[1]["status"], "failed", "the sibling's task took the step again: {}", ended[1]);
    assert_eq!(taken("tasks", 't'), 1);
}

/// A call can be kept going by sealing sibling after sibling, each living `ttl` from its
/// own sealing: a step's claim is kept until the call's end, not the claiming state's, so
/// a sibling sealed after that state expired still meets it. And the call ends.
#[tokio::test]
async fn a_sibling_sealed_after_the_claiming_state_expired_still_meets_the_claim() {
    use std::time::Duration;
    let config = |lifetime| {
        StateConfig::new(KeyRing::new(StateKey::parse("k:o5WMhaOlbyC4Nt5itdSSUxDZt4b7QPFI4Z65QlesZMw").unwrap()))
            .ttl(Duration::from_secs(2))
            .call_lifetime(lifetime)
            .single_use(MemoryGuard::new())
    };
    let server = TestServer::start(
        Server::new("once-per-call", "0").tools(tools![chain]).request_state(config(Duration::from_mins(1))),
    )
    .await;
    let rpc = call("chain", "late-sibling");
    let s1 = state_of(&server.call(&rpc).await);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let sibling = state_of(&server.call(&present(&rpc, &s1, None)).await);
    state_of(&server.call(&present(&rpc, &s1, Some(json!({ "first": ok() })))).await);
    tokio::time::sleep(Duration::from_millis(1_900)).await;
    let later = state_of(&server.call(&present(&rpc, &sibling, None)).await);
    // s1, which took the step, expired over a second ago.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let again = server.call(&present(&rpc, &later, Some(json!({ "first": ok() })))).await;
    assert_eq!(again["error"]["message"], USED, "{again}");
    assert_eq!(taken("late-sibling", 'b'), 1);

    // Past the call's lifetime no state of it opens, however fresh.
    let short = TestServer::start(
        Server::new("once-per-call", "0").tools(tools![chain]).request_state(config(Duration::from_millis(300))),
    )
    .await;
    let rpc = call("chain", "short-lived");
    let first = state_of(&short.call(&rpc).await);
    let fresh = state_of(&short.call(&present(&rpc, &first, None)).await);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let over = short.call(&present(&rpc, &fresh, None)).await;
    assert_eq!(over["error"]["message"], mcp_mrtr_tests::harness::REJECTED, "{over}");
}

/// A call's end is sealed with its start (the sixth audit's N1): a rolling deploy that
/// raises the call lifetime does not let a late sibling of a call begun before it open
/// past the end its claims were kept for, and take a step again.
#[tokio::test]
async fn a_longer_call_lifetime_after_a_deploy_does_not_reopen_a_call_begun_before() {
    use std::time::Duration;
    let (key, guard) = (StateKey::random(), SharedGuard::default());
    let config = |lifetime| {
        StateConfig::new(KeyRing::new(key.clone()))
            .ttl(Duration::from_secs(3))
            .call_lifetime(lifetime)
            .single_use(guard.clone())
    };
    let serve = |lifetime| Server::new("once-per-call", "0").tools(tools![chain]).request_state(config(lifetime));
    let before = TestServer::start(serve(Duration::from_secs(1))).await;
    let rpc = call("chain", "raised-lifetime");
    let s1 = state_of(&before.call(&rpc).await);
    state_of(&before.call(&present(&rpc, &s1, Some(json!({ "first": ok() })))).await);
    let sibling = state_of(&before.call(&present(&rpc, &s1, None)).await);
    // The deploy: the same keys and guard, an hour's lifetime. The call's claims were
    // kept for its one second, and that second is over.
    let after = TestServer::start(serve(Duration::from_hours(1))).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let late = after.call(&present(&rpc, &sibling, Some(json!({ "first": ok() })))).await;
    assert_eq!(late["error"]["message"], mcp_mrtr_tests::harness::REJECTED, "{late}");
    assert_eq!(taken("raised-lifetime", 'b'), 1);
}

/// A small deterministic generator (xorshift64*), so a failing sequence can be named by
/// its seed and run again.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        usize::try_from(self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33).unwrap() % n
    }
}

/// Property: any sequence of presentations of any states of one call, each with its
/// answer or without, one at a time or several at once, takes no step twice; and a
/// presentation whose step nobody took yet (or that takes none) is never refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_presentations_of_one_calls_states_never_take_a_step_twice() {
    let key = StateKey::random();
    let guard = SharedGuard::default();
    let instances =
        [TestServer::start(server(&key, guard.clone())).await, TestServer::start(server(&key, guard)).await];
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let id = format!("random-{seed}");
        let rpc = call("chain", &id);
        // Every state seen, with the key it asks: `first` (answering takes b) or
        // `second` (answering takes c).
        let first = instances[0].call(&rpc).await;
        let mut states: Vec<(Value, String)> = vec![(state_of(&first), "first".into())];
        for _ in 0..14 {
            // One to three presentations at once, each of any state seen so far.
            let picks: Vec<(usize, bool, usize)> =
                (0..=rng.below(3)).map(|_| (rng.below(states.len()), rng.below(3) > 0, rng.below(2))).collect();
            let requests = picks.iter().map(|&(state, answered, on)| {
                let (token, asks) = &states[state];
                let answers = answered.then(|| json!({ asks.as_str(): ok() }));
                let (request, instance) = (present(&rpc, token, answers), &instances[on]);
                async move { instance.call(&request).await }
            });
            let untaken = |asks: &str| taken(&id, if asks == "first" { 'b' } else { 'c' }) == 0;
            let open_before: Vec<bool> = picks.iter().map(|&(state, _, _)| untaken(&states[state].1)).collect();
            let open_before_all = open_before.clone();
            let replies = futures_util::future::join_all(requests).await;
            for ((reply, &(state, answered, _)), open) in replies.iter().zip(&picks).zip(open_before) {
                let asks = states[state].1.clone();
                let context = format!("seed {seed}, state {state} asking {asks}, answered {answered}: {reply}");
                if reply["error"].is_object() {
                    assert!(answered, "a round that takes no step was refused; {context}");
                    assert!(!open || picks.len() > 1, "a first honest presentation was refused; {context}");
                    assert_eq!(reply["error"]["message"], USED, "{context}");
                    continue;
                }
                if reply["result"]["resultType"] == "input_required" {
                    let next = reply["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
                    states.push((state_of(reply), next));
                }
            }
            // Of the answered presentations whose step was open, one took it.
            for (&(state, answered, _), open) in picks.iter().zip(&open_before_all) {
                let step = if states[state].1 == "first" { 'b' } else { 'c' };
                let n = taken(&id, step);
                assert!(!answered || !*open || n == 1, "seed {seed}: step {step} was open, and taken {n} times");
            }
            for step in ['a', 'b', 'c'] {
                assert!(taken(&id, step) <= 1, "seed {seed}: step {step} ran {} times", taken(&id, step));
            }
        }
        assert_eq!(taken(&id, 'a'), 1, "seed {seed}: the step before the first ask runs in the first round");
    }
}
