//! A real `redis-server` that goes back in time while calls are in flight: emptied (a
//! restart without persistence, a `FLUSHALL`), restarted from a snapshot older than its
//! last claims (the third audit's C4), or replaced by a replica that had not received
//! them yet (a failover; replication is asynchronous). Each time the single-use guard's
//! claims are gone, yet a state claimed before must not open again, or its `once!` step
//! runs twice (what the soak harness of issue 24 found: 31 steps taken twice). States
//! sealed before the guard's memory began are refused; calls started afterwards work.

use crate::instance;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use instance::Redis;
use mcp_mrtr::prelude::*;
use mcp_mrtr::request_state::{Claim, Consumed, KeyRing, StateConfig, StateGuard, StateKey};
use serde_json::{json, Value};

/// How many `once!` steps the server of one test took.
#[derive(Clone, Default)]
struct Steps(Arc<AtomicUsize>);

impl Steps {
    fn taken(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

#[derive(Deserialize, JsonSchema)]
struct Go {
    go: bool,
}

/// Asks, charges once, asks for a receipt note.
#[tool]
async fn charge(State(steps): State<Steps>) -> Result<String, ToolError> {
    let first: Go = ask!(elicit "Charge?")?;
    let charged = once!(steps.0.fetch_add(1, Ordering::SeqCst) + 1);
    let note: Go = ask!(elicit "Receipt?")?;
    Ok(format!("charge {charged} ({}, {})", first.go, note.go))
}

/// An instance of the server on a port of its own, with its guard in `redis`; instances
/// given the same key open each other's states.
fn instance(runtime: &tokio::runtime::Runtime, redis: &Redis, keys: &KeyRing, steps: &Steps) -> SocketAddr {
    runtime.block_on(async {
        let store = mcp_mrtr::redis::Redis::connect(&redis.url()).await.expect("redis");
        let server = Server::new("charges", "1")
            .tool(charge)
            .with_state(steps.clone())
            .request_state(StateConfig::new(keys.clone()).single_use(store.state_guard()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(server.serve(mcp_mrtr::http::Http::listener(listener)));
        begun(redis);
        addr
    })
}

/// Waits until the guard made its memory begin, as it does when it is made: a claim that
/// came first would begin it with the margin for fast clocks, and refuse a call sealed
/// just before.
fn begun(redis: &Redis) {
    for _ in 0..200 {
        if redis.command(&["EXISTS", "mcp-mrtr:state:since"]) == ":1" {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the guard's memory did not begin");
}

#[allow(clippy::needless_pass_by_value, reason = "called with json! literals")]
fn round(addr: SocketAddr, answers: Value, state: Option<&Value>) -> Value {
    let mut params = json!({ "name": "charge", "arguments": {}, "inputResponses": answers });
    if let Some(state) = state {
        params["requestState"] = state.clone();
    }
    instance::call(addr, &instance::request("tools/call", params, &json!({ "elicitation": {} })))
}

fn accept(go: bool) -> Value {
    json!({ "action": "accept", "content": { "go": go } })
}

/// Starts a call and takes its `once!` step: the state that step claimed, to present again.
fn step_once(addr: SocketAddr) -> Value {
    let first = round(addr, json!({}), None);
    let sealed = first["result"]["requestState"].clone();
    let stepped = round(addr, json!({ "first": accept(true) }), Some(&sealed));
    assert_eq!(stepped["result"]["resultType"], "input_required", "{stepped}");
    sealed
}

/// A whole call, started now: what an honest client does once Redis is back.
fn whole_call(addr: SocketAddr) -> Value {
    let first = round(addr, json!({}), None);
    let stepped = round(addr, json!({ "first": accept(true) }), Some(&first["result"]["requestState"]));
    round(addr, json!({ "note": accept(true) }), Some(&stepped["result"]["requestState"]))
}

/// What must hold once Redis forgot: the claimed state presented again is refused, and
/// refused as a state (while the instance reconnects to Redis it answers `-32603`, and an
/// honest client retries), so the server's steps stay at `taken`; and a call started
/// afterwards takes its step, as charge `taken + 1`. The guard starts its memory again
/// with a margin for fast clocks (250 ms by default): a call sealed within it is refused
/// too, so the honest client's next call waits it out.
fn refused_then_a_new_call_works(addr: SocketAddr, claimed: &Value, steps: &Steps, taken: usize) {
    let replayed = crate::many_instances::until_taken(|| round(addr, json!({ "first": accept(true) }), Some(claimed)));
    assert_eq!(replayed["error"]["code"], -32602, "a claimed state opened again: {replayed}");
    assert_eq!(steps.taken(), taken, "the step ran twice");
    std::thread::sleep(Duration::from_millis(400));
    let done = whole_call(addr);
    assert_eq!(done["result"]["content"][0]["text"], format!("charge {} (true, true)", taken + 1), "{done}");
}

#[test]
fn a_state_claimed_before_redis_was_emptied_does_not_open_again() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (steps, keys) = (Steps::default(), KeyRing::new(StateKey::random()));
    let addr = instance(&runtime, &redis, &keys, &steps);
    let claimed = step_once(addr);
    assert_eq!(steps.taken(), 1);

    assert_eq!(redis.command(&["FLUSHALL"]), "+OK");
    refused_then_a_new_call_works(addr, &claimed, &steps, 1);
}

/// The audit's C4: Redis restarts from a snapshot taken before the claim. The guard's
/// memory key is in the snapshot, so its presence alone proves nothing.
#[test]
fn a_restart_from_an_older_snapshot_does_not_reopen_a_claimed_state() {
    let Some(mut redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (steps, keys) = (Steps::default(), KeyRing::new(StateKey::random()));
    let addr = instance(&runtime, &redis, &keys, &steps);
    // Everything up to here is in the snapshot: the guard's memory, and one finished step.
    let _ = whole_call(addr);
    assert_eq!(redis.command(&["SAVE"]), "+OK");
    let claimed = step_once(addr);
    assert_eq!(steps.taken(), 2);

    redis.restart();
    // The memory, the first claim and the guard's books (its clients by size and by end, its count).
    assert_eq!(redis.command(&["DBSIZE"]), ":5", "the snapshot was loaded: the memory, the first claim, the books");
    refused_then_a_new_call_works(addr, &claimed, &steps, 2);
}

/// A failover to a replica that had not received the last claim: the state is claimed
/// through the primary, then presented to an instance that talks to the promoted
/// replica, as every instance does once the failover is done.
#[test]
fn a_failover_to_a_lagging_replica_does_not_reopen_a_claimed_state() {
    let Some(primary) = Redis::start() else { return };
    let replica = Redis::replica_of(&primary);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (steps, keys) = (Steps::default(), KeyRing::new(StateKey::random()));
    let before = instance(&runtime, &primary, &keys, &steps);
    let _ = whole_call(before);
    primary.synced();
    // The link breaks: what the primary takes from now on, the replica never sees.
    assert_eq!(replica.command(&["REPLICAOF", "NO", "ONE"]), "+OK");
    let claimed = step_once(before);
    assert_eq!(steps.taken(), 2);

    let after = instance(&runtime, &replica, &keys, &steps);
    refused_then_a_new_call_works(after, &claimed, &steps, 2);
}

/// The audit's C5: the moment the memory begins is Redis's, and a state sealed just
/// before it by an instance whose clock runs ahead (here by 200 ms) still counts
/// as sealed before.
#[test]
fn a_fast_sealing_clock_cannot_pass_a_state_off_as_newer() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = mcp_mrtr::redis::Redis::connect(&redis.url()).await.expect("redis");
        let guard = store.state_guard();
        begun(&redis);
        let expires = SystemTime::now() + Duration::from_mins(10);
        let ahead = SystemTime::now() + Duration::from_millis(200);
        let claim = Claim::new([7; 32], 1, expires).issued_at(ahead);
        assert_eq!(guard.consume(&claim).await, Consumed::First);
        assert_eq!(redis.command(&["FLUSHALL"]), "+OK");
        assert_eq!(guard.consume(&claim).await, Consumed::Again, "claimed twice across the flush");

        // With no margin the same state passes: what the margin is for.
        assert_eq!(redis.command(&["FLUSHALL"]), "+OK");
        let trusting = store.state_guard().clock_skew(Duration::ZERO);
        begun(&redis);
        let other = Claim::new([8; 32], 1, expires).issued_at(SystemTime::now() + Duration::from_millis(200));
        assert_eq!(trusting.consume(&other).await, Consumed::First);
        assert_eq!(redis.command(&["FLUSHALL"]), "+OK");
        assert_eq!(trusting.consume(&other).await, Consumed::First, "a clock ahead passes without a margin");
    });
}

/// The fifth audit's D2: a full Redis under a `volatile-*` policy evicts the claims
/// (they expire with their states, so they are the first to go under `volatile-ttl`).
/// The guard reads Redis's eviction count with its memory, so a claim evicted does not
/// make its state open again: the memory starts over, as after a restart.
#[test]
fn a_claim_evicted_by_a_full_redis_does_not_reopen_a_claimed_state() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (steps, keys) = (Steps::default(), KeyRing::new(StateKey::random()));
    let addr = instance(&runtime, &redis, &keys, &steps);
    let claimed = step_once(addr);
    assert_eq!(steps.taken(), 1);

    // Filler that lives an hour, into a Redis with little room: it evicts what expires
    // soonest (from a sample of keys at a time), until the claim is gone.
    let claims: Vec<String> = redis.keys("mcp-mrtr:state:claims:*");
    assert!(!claims.is_empty(), "no claim in Redis");
    assert_eq!(redis.command(&["CONFIG", "SET", "maxmemory-policy", "volatile-ttl"]), "+OK");
    assert_eq!(redis.command(&["CONFIG", "SET", "maxmemory", "3mb"]), "+OK");
    let filler = "x".repeat(16 * 1024);
    let evicted = (0..20_000).any(|n| {
        let reply = redis.command(&["SET", &format!("filler:{n}"), &filler, "EX", "3600"]);
        assert_eq!(reply, "+OK", "filler {n}");
        claims.iter().all(|claim| redis.command(&["EXISTS", claim]) == ":0")
    });
    assert!(evicted, "Redis never evicted the claim");
    assert_eq!(redis.command(&["CONFIG", "SET", "maxmemory", "0"]), "+OK");

    refused_then_a_new_call_works(addr, &claimed, &steps, 1);
}

/// D2's other half: one client cannot make the guard's Redis hold more than its share.
/// Past it, its oldest entries are given up and their states refused from then on;
/// another client's claims are untouched.
#[test]
fn one_client_holds_at_most_its_share_of_the_guards_redis() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = mcp_mrtr::redis::Redis::connect(&redis.url()).await.expect("redis");
        let guard = store.state_guard().share(4);
        begun(&redis);
        let now = SystemTime::now();
        let claim = |n: u8, owner: u32| {
            Claim::new([n; 32], owner, now + Duration::from_mins(10) + Duration::from_secs(n.into())).issued_at(now)
        };
        assert_eq!(guard.consume(&claim(100, 2)).await, Consumed::First);
        for n in 0..10 {
            assert_eq!(guard.consume(&claim(n, 1)).await, Consumed::First, "claim {n}");
        }
        assert_eq!(redis.command(&["ZCARD", "mcp-mrtr:state:claims:00000001"]), ":4");
        assert_eq!(guard.consume(&claim(0, 1)).await, Consumed::Again, "given up, and refused");
        assert_eq!(guard.consume(&claim(5, 1)).await, Consumed::Again, "below the floor");
        assert_eq!(guard.consume(&claim(9, 1)).await, Consumed::Again, "held");
        assert_eq!(guard.consume(&claim(100, 2)).await, Consumed::Again, "the other client kept its entry");
        assert_eq!(guard.consume(&claim(101, 2)).await, Consumed::First);
    });
}
