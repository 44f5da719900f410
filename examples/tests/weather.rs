//! The weather example over real stdio: it asks for the city, then answers.

use crate::common;

use std::process::Command;

use serde_json::{json, Value};

#[test]
fn weather_asks_for_the_city_then_reports() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_weather"));
    command.env_remove("MCP_MRTR_STATE_KEYS");
    let mut server = common::Server::start(command);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
    });
    let mut call = |id: u32, extra: Value| -> Value {
        let mut params = json!({ "name": "weather", "arguments": {}, "_meta": meta });
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        server.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }));
        server.next()
    };
    let first = call(1, json!({}));
    assert_eq!(
        first["result"]["inputRequests"]["place"]["params"]["message"],
        "Which city do you want the weather for?"
    );
    let state = first["result"]["requestState"].clone();
    let answers = json!({ "place": { "action": "accept", "content": { "city": "Lyon" } } });
    let done = call(2, json!({ "inputResponses": answers, "requestState": state }));
    assert_eq!(done["result"]["content"][0]["text"], "It is sunny in Lyon.");
    let (succeeded, _, stderr) = server.finish();
    assert!(succeeded, "{stderr}");
}
