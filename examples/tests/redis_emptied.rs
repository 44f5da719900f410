//! A real `redis-server` emptied while calls are in flight (a restart without
//! persistence, a `FLUSHALL`): the claims of the single-use guard are gone, yet a state
//! claimed before must not open again, or its `once!` step runs twice (what the soak
//! harness of issue 24 found: 31 steps taken twice). States sealed before the guard's
//! memory began are refused; calls started afterwards work.

use crate::instance;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};

use instance::Redis;
use mcp_mrtr::prelude::*;
use mcp_mrtr::request_state::StateConfig;
use serde_json::{json, Value};

static STEPS: AtomicUsize = AtomicUsize::new(0);

#[derive(Deserialize, JsonSchema)]
struct Go {
    go: bool,
}

/// Asks, charges once, asks for a receipt note.
#[tool]
async fn charge() -> Result<String, ToolError> {
    let first: Go = ask!(elicit "Charge?")?;
    let charged = once!(STEPS.fetch_add(1, Ordering::SeqCst) + 1);
    let note: Go = ask!(elicit "Receipt?")?;
    Ok(format!("charge {charged} ({}, {})", first.go, note.go))
}

fn caps() -> Value {
    json!({ "elicitation": {} })
}

#[allow(clippy::needless_pass_by_value, reason = "called with json! literals")]
fn round(addr: SocketAddr, answers: Value, state: Option<&Value>) -> Value {
    let mut params = json!({ "name": "charge", "arguments": {}, "inputResponses": answers });
    if let Some(state) = state {
        params["requestState"] = state.clone();
    }
    instance::call(addr, &instance::request("tools/call", params, &caps()))
}

fn accept(go: bool) -> Value {
    json!({ "action": "accept", "content": { "go": go } })
}

/// `FLUSHALL` on the Redis at `url`, as an inline command.
fn flush(url: &str) {
    let port: u16 = url.trim_end_matches('/').rsplit(':').next().unwrap().parse().unwrap();
    let mut redis = TcpStream::connect(("127.0.0.1", port)).unwrap();
    redis.write_all(b"FLUSHALL\r\n").unwrap();
    let mut reply = [0u8; 5];
    redis.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+OK\r\n");
}

#[test]
fn a_state_claimed_before_redis_was_emptied_does_not_open_again() {
    let Some(redis) = Redis::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let addr = runtime.block_on(async {
        let store = mcp_mrtr::redis::Redis::connect(&redis.url()).await.expect("redis");
        let server = Server::new("charges", "1")
            .tool(charge)
            .request_state(StateConfig::default().single_use(store.state_guard()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(server.serve(mcp_mrtr::http::Http::listener(listener)));
        addr
    });
    let first = round(addr, json!({}), None);
    let sealed = first["result"]["requestState"].clone();
    let stepped = round(addr, json!({ "first": accept(true) }), Some(&sealed));
    assert_eq!(stepped["result"]["resultType"], "input_required", "{stepped}");
    assert_eq!(STEPS.load(Ordering::SeqCst), 1);

    flush(&redis.url());
    let replayed = round(addr, json!({ "first": accept(true) }), Some(&sealed));
    assert!(replayed["error"].is_object(), "a state claimed before the flush opened again: {replayed}");
    assert_eq!(STEPS.load(Ordering::SeqCst), 1, "the step ran twice");

    // A call started after the flush is served as ever.
    let again = round(addr, json!({}), None);
    let fresh = again["result"]["requestState"].clone();
    let stepped = round(addr, json!({ "first": accept(true) }), Some(&fresh));
    let done = round(addr, json!({ "note": accept(true) }), Some(&stepped["result"]["requestState"]));
    assert_eq!(done["result"]["content"][0]["text"], "charge 2 (true, true)", "{done}");
}
