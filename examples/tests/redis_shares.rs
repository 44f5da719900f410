//! The sixth audit's N2: the single-use guard in Redis had a share per client but no total,
//! and a client was a number each process hashed with a key of its own, so one client
//! reaching N instances held N shares. Under `noeviction` a full Redis refuses every claim
//! and every task write. Now a client is the same number on every instance that shares the
//! key ring, and the guard holds at most its capacity, every client's together: the
//! heaviest gives way. A real `redis-server` on 127.0.0.1, real instances of `everything`.

use crate::instance;

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use instance::{Instance, Redis};
use mcp_mrtr::request_state::{Claim, Consumed, StateGuard};
use mcp_mrtr::testing::answer;
use serde_json::{json, Value};

/// The fixture's tool whose second round takes a `once!` step.
const ONCE: &str = "test_once_side_effect";

fn rpc(addr: SocketAddr, params: Value) -> Value {
    instance::call(addr, &instance::request("tools/call", params, &json!({ "elicitation": {} })))
}

/// A call of [`ONCE`] on `addr`, taken to its step: one claim in the guard.
fn step_once(addr: SocketAddr, call_id: &str) {
    let first = rpc(addr, json!({ "name": ONCE, "arguments": { "call_id": call_id } }));
    let stepped = rpc(
        addr,
        json!({
            "name": ONCE,
            "arguments": { "call_id": call_id },
            "requestState": first["result"]["requestState"],
            "inputResponses": { "start": answer::accept(json!({ "ok": true })) },
        }),
    );
    assert_eq!(stepped["result"]["resultType"], "input_required", "{stepped}");
}

/// The guard's sets of claims, one per client it counts.
fn claim_sets(redis: &Redis) -> Vec<String> {
    redis.keys("mcp-mrtr:state:claims:*")
}

#[test]
fn one_client_is_one_owner_on_every_instance_sharing_the_key_ring() {
    let Some(redis) = Redis::start() else { return };
    let keys = instance::new_key("k1");
    let mut env = vec![("MCP_MRTR_STATE_KEYS", keys.as_str())];
    let reach = redis.env();
    env.extend(reach.iter().map(|(name, value)| (*name, value.as_str())));
    let (a, b) = (Instance::start_with(&env), Instance::start_with(&env));

    step_once(a.addr, "on-a");
    step_once(b.addr, "on-b");
    step_once(a.addr, "on-a-again");
    let sets = claim_sets(&redis);
    assert_eq!(sets.len(), 1, "one client counted as one per instance it reached: {sets:?}");
    assert_eq!(redis.command(&["ZCARD", &sets[0]]), ":3", "its three claims, in its one share");
    assert_eq!(redis.cli(&["GET", "mcp-mrtr:state:held"]), "5", "the books weigh them: 3, and 2 for their client");
}

/// What the guard's claims weigh in Redis, read from Redis itself: each client's claims,
/// and two more for each client holding any (its keys and its place in the books).
fn weight(redis: &Redis) -> usize {
    claim_sets(redis)
        .iter()
        .map(|set| redis.command(&["ZCARD", set]).trim_start_matches(':').parse::<usize>().unwrap())
        .filter(|claims| *claims > 0)
        .map(|claims| claims + 2)
        .sum()
}

#[test]
fn two_guards_on_one_redis_hold_at_most_their_capacity_and_the_heaviest_gives_way() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        // Two instances' guards: each its own connection, the same Redis and settings.
        let mut guards = Vec::new();
        for _ in 0..2 {
            let store = mcp_mrtr::redis::Redis::connect(&redis.url()).await.expect("redis");
            guards.push(store.state_guard().share(6).capacity(20));
        }
        let guard = |n: u32| &guards[usize::try_from(n % 2).unwrap()];
        let now = SystemTime::now();
        let claim = |n: u32, owner: u32| {
            let mut digest = [0u8; 32];
            digest[..4].copy_from_slice(&n.to_be_bytes());
            Claim::new(digest, owner, now + Duration::from_mins(10) + Duration::from_secs(n.into())).issued_at(now)
        };
        // The memory begins when a guard is made; a claim before it would be refused.
        tokio::time::sleep(Duration::from_millis(300)).await;

        // A heavy client through both instances, at its share (6 claims, weighing 8), then
        // five light ones (1 claim, weighing 3): never refused for room, and the heavy one
        // makes it, oldest first.
        for n in 0..6 {
            assert_eq!(guard(n).consume(&claim(n, 1)).await, Consumed::First, "heavy {n}");
        }
        for owner in 2..=6 {
            assert_eq!(guard(owner).consume(&claim(100 + owner, owner)).await, Consumed::First, "light {owner}");
        }
        assert_eq!(weight(&redis), 20, "the guard's Redis holds its capacity");
        assert_eq!(redis.cli(&["GET", "mcp-mrtr:state:held"]), "20", "and its books say so");
        assert_eq!(redis.command(&["ZCARD", "mcp-mrtr:state:claims:00000001"]), ":3", "the heaviest gave way");
        for n in 0..3 {
            assert_eq!(guard(n + 1).consume(&claim(n, 1)).await, Consumed::Again, "given up, and refused: {n}");
        }
        for owner in 2..=6 {
            assert_eq!(
                guard(owner + 1).consume(&claim(100 + owner, owner)).await,
                Consumed::Again,
                "light {owner} kept"
            );
        }

        // However many clients come, through either instance, Redis holds no more.
        for owner in 10..60 {
            assert_eq!(guard(owner).consume(&claim(1_000 + owner, owner)).await, Consumed::First, "client {owner}");
            assert!(weight(&redis) <= 20, "past the capacity after client {owner}: {}", weight(&redis));
        }
        assert_eq!(redis.cli(&["GET", "mcp-mrtr:state:held"]), weight(&redis).to_string());
    });
}
