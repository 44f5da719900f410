//! The `everything` binary as instances behind a load balancer would run it: SIGTERM
//! while a slow call is in flight (over HTTP and over stdio), and a rolling rotation of
//! the state keys across two instances whose rounds alternate. Real processes, real
//! sockets on 127.0.0.1; every wait is bounded.

use crate::common;
use crate::instance;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use instance::{Instance, TIMEOUT};
use mcp_mrtr::testing::answer;
use serde_json::{json, Value};

/// The one message of every refused `requestState`.
const REJECTED: &str = "Invalid requestState: it is tampered, expired, or belongs to another request";

/// How long a process gets to exit after SIGTERM: its 10 s bound plus slack.
const EXIT_BOUND: Duration = Duration::from_secs(20);

#[test]
fn sigterm_lets_the_slow_call_in_flight_finish_and_the_process_exits_zero() {
    let server = Instance::start(None);
    let call =
        instance::request("tools/call", json!({ "name": "slow_compute", "arguments": { "seconds": 2 } }), &json!({}));
    let mut socket = instance::open(server.addr, &with_progress_token(call));
    // The first progress report (after a second) proves the handler runs.
    let mut seen = String::new();
    instance::read_until(&mut socket, &mut seen, "notifications/progress");
    server.terminate();
    let (status, messages) = instance::finish(socket, seen);
    assert_eq!(status, 200);
    let reply = messages.last().expect("a reply");
    assert_eq!(reply["result"]["content"][0]["text"], "slow_compute finished after 2s", "{reply}");
    let addr = server.addr;
    let (exit, log) = server.exit_within(EXIT_BOUND);
    assert!(exit.success(), "{exit}: {log}");
    assert!(log.contains("shutting down") && log.contains("drained=1 cut=0"), "{log}");
    assert!(std::net::TcpStream::connect(addr).is_err(), "still listening after exit");
}

#[test]
fn sigterm_over_stdio_lets_the_slow_call_finish_and_the_process_exits_zero() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_everything"))
        .arg("--stdio")
        .env("RUST_LOG", "warn")
        .env_remove("MCP_MRTR_STATE_KEYS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start everything --stdio");
    let lines = common::forward(child.stdout.take().unwrap());
    let call =
        instance::request("tools/call", json!({ "name": "slow_compute", "arguments": { "seconds": 2 } }), &json!({}));
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", with_progress_token(call)).unwrap();
    let first: Value = serde_json::from_str(&lines.recv_timeout(TIMEOUT).expect("a progress line")).unwrap();
    assert_eq!(first["method"], "notifications/progress", "{first}");
    instance::terminate(&child);
    let mut last = first;
    while last.get("id").is_none() {
        last = serde_json::from_str(&lines.recv_timeout(TIMEOUT).expect("the reply")).unwrap();
    }
    assert_eq!(last["result"]["content"][0]["text"], "slow_compute finished after 2s", "{last}");
    // stdin stays open: the process must not wait for the client's next line to exit.
    let exit = instance::exit_within(&mut child, EXIT_BOUND);
    assert!(exit.success(), "{exit}");
    drop(stdin);
}

fn with_progress_token(mut request: Value) -> Value {
    request["params"]["_meta"]["progressToken"] = json!("p-1");
    request
}

/// The tool whose flow takes three requests: two questions in two rounds.
const TWO_ROUNDS: &str = "test_input_required_result_multi_round";

fn round(state: Option<&Value>, answers: &Value) -> Value {
    let mut params = json!({ "name": TWO_ROUNDS, "arguments": {}, "inputResponses": answers });
    if let Some(state) = state {
        params["requestState"] = state.clone();
    }
    instance::request("tools/call", params, &json!({ "elicitation": {} }))
}

/// The only key of a round's questions, and the id of the key that sealed its state.
fn asked(result: &Value) -> (String, String) {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let keys: Vec<&String> = result["inputRequests"].as_object().expect("questions").keys().collect();
    let state = result["requestState"].as_str().expect("a sealed state");
    let key_id = state.split('.').nth(1).expect("version.key id.body").to_owned();
    (keys[0].clone(), key_id)
}

/// One flow of three requests on `first`, `second`, `first`, checking which key sealed
/// each round.
fn flow(first: &Instance, first_seals: &str, second: &Instance, second_seals: &str) {
    let one = instance::call(first.addr, &round(None, &json!({})))["result"].clone();
    let (key, sealed) = asked(&one);
    assert_eq!(sealed, first_seals);
    let name = json!({ key: answer::accept(json!({ "name": "Ada" })) });
    let two = instance::call(second.addr, &round(Some(&one["requestState"]), &name))["result"].clone();
    let (key, sealed) = asked(&two);
    assert_eq!(sealed, second_seals, "round 2 was sealed by the second instance's current key");
    let color = json!({ key: answer::accept(json!({ "color": "green" })) });
    let three = instance::call(first.addr, &round(Some(&two["requestState"]), &color));
    assert_eq!(three["result"]["content"][0]["text"], "Ada likes green", "{three}");
}

#[test]
fn a_rolling_key_rotation_keeps_every_round_open_on_both_instances_until_the_old_key_retires() {
    let (k1, k2) = (instance::new_key("k1"), instance::new_key("k2"));
    let rings = [k1.clone(), format!("{k1},{k2}"), format!("{k2},{k1}"), k2];
    let seals = ["k1", "k1", "k2", "k2"];
    // One instance moves to the next ring at a time, as a rolling deploy does.
    let steps = [(0, 0), (1, 0), (1, 1), (2, 1), (2, 2), (3, 2), (3, 3)];
    let mut instances = [Instance::start(Some(&rings[0])), Instance::start(Some(&rings[0]))];
    let mut phases = [0, 0];
    // A first round sealed with k1 and never answered (states are single-use).
    let mut sealed_by_k1 = Value::Null;
    for (a, b) in steps {
        for (i, phase) in [a, b].into_iter().enumerate() {
            if phases[i] != phase {
                let next = Instance::start(Some(&rings[phase]));
                std::mem::replace(&mut instances[i], next).stop();
                phases[i] = phase;
            }
        }
        let [first, second] = &instances;
        flow(first, seals[a], second, seals[b]);
        flow(second, seals[b], first, seals[a]);
        if seals[b] == "k1" {
            sealed_by_k1 = instance::call(second.addr, &round(None, &json!({})))["result"].clone();
        }
        if (a, b) == (2, 2) {
            // k2 seals everywhere now, and k1 still opens: a state from before opens on
            // the instance that did not seal it (and is restarted before the last check).
            let opened =
                instance::call(first.addr, &round(Some(&sealed_by_k1["requestState"]), &name_answer(&sealed_by_k1)));
            assert_eq!(opened["result"]["resultType"], "input_required", "{opened}");
        }
    }
    // k1 is retired on both, which have never seen the state: it is refused, uniformly.
    for server in &instances {
        let refused =
            instance::call(server.addr, &round(Some(&sealed_by_k1["requestState"]), &name_answer(&sealed_by_k1)));
        assert_eq!(refused["error"], json!({ "code": -32602, "message": REJECTED }), "{refused}");
    }
    for server in instances {
        server.stop();
    }
}

/// An answer to the first round's question of `result`.
fn name_answer(result: &Value) -> Value {
    let (key, _) = asked(result);
    json!({ key: answer::accept(json!({ "name": "Grace" })) })
}
