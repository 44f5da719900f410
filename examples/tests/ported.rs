//! The ported weather tool over real stdio, in both styles: the same rounds and the same
//! answers for an accepted, a declined and a cancelled city, and a tampered state refused.

use crate::common;

use std::process::Command;

use serde_json::{json, Value};

/// Runs one call to its end against `ported [--by-hand]` with `answer` to the city
/// question, checking the first round on the way; returns the final reply.
fn call(by_hand: bool, answer: &Value, tamper: bool) -> Value {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ported"));
    if by_hand {
        command.arg("--by-hand");
    }
    command.env_remove("MCP_MRTR_STATE_KEYS");
    let mut server = common::Server::start(command);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
    });
    let mut send = |id: u32, extra: Value| -> Value {
        let mut params = json!({ "name": "weather", "arguments": {}, "_meta": meta });
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        server.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }));
        server.next()
    };
    let first = send(1, json!({}));
    let asked = &first["result"]["inputRequests"]["city"];
    assert_eq!(asked["method"], "elicitation/create", "{first}");
    assert_eq!(asked["params"]["message"], "Which city do you want the weather for?");
    assert_eq!(asked["params"]["requestedSchema"]["properties"]["city"]["type"], "string");
    let mut state = first["result"]["requestState"].as_str().expect("a state").to_owned();
    if tamper {
        state.insert(state.len() - 4, 'x');
    }
    let done = send(2, json!({ "inputResponses": { "city": answer.clone() }, "requestState": state }));
    let (succeeded, _, stderr) = server.finish();
    assert!(succeeded, "{stderr}");
    done
}

#[test]
fn both_ports_ask_the_same_and_answer_the_same() {
    let answers = [
        (json!({ "action": "accept", "content": { "city": "Paris" } }), "It is sunny in Paris."),
        (json!({ "action": "decline" }), "I cannot look up the weather without a city."),
        (json!({ "action": "cancel" }), "Weather lookup cancelled."),
    ];
    for by_hand in [true, false] {
        for (answer, says) in &answers {
            let done = call(by_hand, answer, false);
            assert_eq!(done["result"]["content"][0]["text"], *says, "by hand: {by_hand}: {done}");
        }
        let tampered = call(by_hand, &answers[0].0, true);
        assert_eq!(tampered["error"]["code"], -32602, "by hand: {by_hand}: {tampered}");
    }
}
