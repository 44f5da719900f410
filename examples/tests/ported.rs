//! The ported tools over real stdio, in both styles: the same rounds and the same answers
//! for each flow (rmcp's weather, the TypeScript SDK's two-step deploy, the Python SDK's
//! confirmed deploy), and a tampered state refused.

use crate::common;

use std::process::Command;

use serde_json::{json, Value};

/// Calls `tool` against `ported [--by-hand]`, answering each round from `answers` (one
/// map of answers per round), and returns every reply. With `tamper`, the state of the
/// first round is altered before it is presented.
fn flow(by_hand: bool, tool: &str, arguments: &Value, answers: &[Value], tamper: bool) -> Vec<Value> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ported"));
    if by_hand {
        command.arg("--by-hand");
    }
    command.env_remove("MCP_MRTR_STATE_KEYS");
    let mut server = common::Server::start(command);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {}, "url": {} } },
    });
    let mut replies = Vec::new();
    let mut retry = json!({});
    for (id, answers) in (1..).zip(std::iter::once(&Value::Null).chain(answers)) {
        let mut params = json!({ "name": tool, "arguments": arguments, "_meta": meta });
        if !answers.is_null() {
            params["inputResponses"] = answers.clone();
            params["requestState"] = retry["requestState"].clone();
        }
        server.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }));
        let reply = server.next();
        retry = reply["result"].clone();
        if tamper && id == 1 {
            let state = retry["requestState"].as_str().expect("a state");
            retry["requestState"] = json!(format!("{}x{}", &state[..state.len() - 4], &state[state.len() - 4..]));
        }
        replies.push(reply);
    }
    let (succeeded, _, stderr) = server.finish();
    assert!(succeeded, "{stderr}");
    replies
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {reply}"))
}

#[test]
fn rmcps_weather_asks_the_same_and_answers_the_same_in_both_styles() {
    let answers = [
        (json!({ "action": "accept", "content": { "city": "Paris" } }), "It is sunny in Paris."),
        (json!({ "action": "decline" }), "I cannot look up the weather without a city."),
        (json!({ "action": "cancel" }), "Weather lookup cancelled."),
    ];
    for by_hand in [true, false] {
        for (answer, says) in &answers {
            let replies = flow(by_hand, "weather", &json!({}), &[json!({ "city": answer })], false);
            let asked = &replies[0]["result"]["inputRequests"]["city"];
            assert_eq!(asked["params"]["message"], "Which city do you want the weather for?", "{}", replies[0]);
            assert_eq!(asked["params"]["requestedSchema"]["properties"]["city"]["type"], "string");
            assert_eq!(text(&replies[1]), *says, "by hand: {by_hand}");
        }
        let tampered = flow(by_hand, "weather", &json!({}), &[json!({ "city": answers[0].0 })], true);
        assert_eq!(tampered[1]["error"]["code"], -32602, "by hand: {by_hand}: {}", tampered[1]);
    }
}

#[test]
fn the_typescript_sdks_deploy_confirms_then_signs_in_in_both_styles() {
    let yes = json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
    let signed_in = json!({ "auth": { "action": "accept" } });
    for by_hand in [true, false] {
        let replies = flow(by_hand, "deploy", &json!({ "env": "prod" }), &[yes.clone(), signed_in.clone()], false);
        let confirm = &replies[0]["result"]["inputRequests"]["confirm"]["params"];
        assert_eq!(confirm["message"], "Deploy to prod?", "{}", replies[0]);
        assert_eq!(confirm["requestedSchema"]["properties"]["confirm"]["type"], "boolean");
        let auth = &replies[1]["result"]["inputRequests"]["auth"]["params"];
        assert_eq!(
            (auth["mode"].as_str(), auth["url"].as_str()),
            (Some("url"), Some("https://example.com/auth?env=prod"))
        );
        assert_eq!(text(&replies[2]), "deployed to prod", "by hand: {by_hand}");
    }
}

#[test]
fn the_python_sdks_confirmed_deploy_in_both_styles() {
    for (confirm, says) in [(true, "deployed to lab"), (false, "deployment to lab cancelled")] {
        let answer = json!({ "confirm": { "action": "accept", "content": { "confirm": confirm } } });
        for by_hand in [true, false] {
            let replies =
                flow(by_hand, "confirm_deploy", &json!({ "env": "lab" }), std::slice::from_ref(&answer), false);
            let schema = &replies[0]["result"]["inputRequests"]["confirm"]["params"]["requestedSchema"];
            assert_eq!(schema["properties"]["confirm"]["description"], "Proceed with the deployment?");
            assert_eq!(text(&replies[1]), says, "by hand: {by_hand}");
        }
    }
}
