//! The 2025-11-25 leg over real HTTP on 127.0.0.1: sessions, the era's utilities,
//! unstamped results, and the bridge that asks legacy clients real requests for the very
//! handlers modern clients reach through `input_required`. Every message is checked
//! against the 2025-11-25 schema.

use mcp_mrtr_tests::client;
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Value};

#[tokio::test]
async fn a_session_serves_unstamped_results_and_the_era_s_utilities() {
    let server = TestServer::everything().await;
    let (legacy, init) = Legacy::connect(server.addr, json!({})).await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["serverInfo"]["name"], "mcp-mrtr-everything");
    assert!(init["capabilities"]["tools"].is_object() && init.get("resultType").is_none());
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted =
        client::send(server.addr, "POST", &legacy.headers("application/json"), note.to_string().as_bytes()).await;
    assert_eq!(accepted.status, 202);
    assert_eq!(legacy.call(1, "ping", json!({})).await["result"], json!({}));
    assert_eq!(legacy.call(2, "logging/setLevel", json!({"level": "info"})).await["result"], json!({}));
    assert_eq!(legacy.call(3, "resources/subscribe", json!({"uri": "test://static-text"})).await["result"], json!({}));
    let tools = legacy.call(4, "tools/list", json!({})).await["result"].clone();
    assert!(tools.get("resultType").is_none() && tools.get("ttlMs").is_none() && tools.get("_meta").is_none());
    let text = legacy.call(5, "tools/call", json!({"name": "test_simple_text"})).await;
    assert_eq!(text["result"]["content"][0]["text"], "This is a simple text response for testing.");
    let missing = legacy.call(6, "resources/read", json!({"uri": "test://nope"})).await;
    assert_eq!(
        (missing["error"]["code"].clone(), missing["error"]["data"]["uri"].clone()),
        (json!(-32002), json!("test://nope"))
    );
}

#[tokio::test]
async fn sessions_must_exist_and_end_on_delete() {
    let server = TestServer::everything().await;
    let (legacy, _) = Legacy::connect(server.addr, json!({})).await;
    let no_session = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let headers = [("content-type", "application/json"), ("mcp-protocol-version", "2025-11-25")];
    let response = client::send(server.addr, "POST", &headers, no_session.to_string().as_bytes()).await;
    assert_eq!((response.status, response.reply()["id"].clone()), (400, json!(1)));
    let says = |response: &client::HttpResponse, code: i64, text: &str| {
        let error = &response.reply()["error"];
        assert_eq!(error["code"], code, "{}", response.body);
        assert!(error["message"].as_str().is_some_and(|m| m.contains(text)), "{}", response.body);
    };
    says(&response, -32600, "Mcp-Session-Id");
    let deleted = client::send(server.addr, "DELETE", &legacy.headers("application/json"), b"").await;
    assert_eq!(deleted.status, 200);
    let after = legacy.send(2, "ping", json!({})).await;
    assert_eq!(after.status, 404);
    says(&after, -32600, "session not found");
    let gone = client::send(server.addr, "DELETE", &legacy.headers("application/json"), b"").await;
    assert_eq!(gone.status, 404);
    says(&gone, -32600, "session not found");
}

#[tokio::test]
async fn unknown_versions_are_offered_the_latest_legacy_one() {
    let server = TestServer::everything().await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
    let response =
        client::send(server.addr, "POST", &[("content-type", "application/json")], init.to_string().as_bytes()).await;
    assert_eq!(response.reply()["result"]["protocolVersion"], "2025-11-25");
}

/// Opens a tools/call stream, answers the bridge's one request with `answer`, and
/// returns (the request the server sent, the final reply).
async fn bridged_call(legacy: &Legacy, tool: &str, arguments: Value, answer: Value) -> (Value, Value) {
    let mut stream = legacy.open(7, "tools/call", json!({"name": tool, "arguments": arguments})).await;
    let mut request = None;
    while let Some(message) = stream.next().await {
        if message.get("method").is_some() && message.get("id").is_some() && request.is_none() {
            legacy.answer(&message, answer.clone()).await;
            request = Some(message);
        } else if message["id"] == 7 {
            return (request.expect("the bridge asked before answering"), message);
        }
    }
    panic!("the stream ended without a reply");
}

#[tokio::test]
async fn the_bridge_asks_legacy_clients_real_requests() {
    let server = TestServer::everything().await;
    let (legacy, _) = Legacy::connect(server.addr, json!({"sampling": {}, "elicitation": {}})).await;
    let sampled = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"});
    let (asked, done) = bridged_call(&legacy, "test_sampling", json!({"prompt": "Capital of France?"}), sampled).await;
    assert_eq!(asked["method"], "sampling/createMessage");
    assert_eq!(asked["params"]["messages"][0]["content"]["text"], "Capital of France?");
    assert_eq!(asked["params"]["maxTokens"], 100);
    assert_eq!(done["result"]["content"][0]["text"], "LLM response: Paris");
    assert!(done["result"].get("resultType").is_none());

    let (asked, done) =
        bridged_call(&legacy, "test_elicitation", json!({"message": "Who?"}), json!({"action": "decline"})).await;
    assert_eq!(asked["params"]["requestedSchema"]["required"], json!(["username", "email"]));
    assert_eq!(done["result"]["content"][0]["text"], "User response: action=decline");

    // Three rounds through the bridge: the handler replays with each answer.
    let accept = |content: Value| json!({"action": "accept", "content": content});
    let (_, done) =
        bridged_call(&legacy, "test_input_required_result_elicitation", json!({}), accept(json!({"name": "Ada"})))
            .await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!");
}

#[tokio::test]
async fn asking_a_client_that_cannot_stream_or_lacks_the_capability_is_an_error() {
    let server = TestServer::everything().await;
    let (legacy, _) = Legacy::connect(server.addr, json!({"sampling": {}})).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "test_sampling", "arguments": {"prompt": "x"}}});
    let json_only =
        client::send(server.addr, "POST", &legacy.headers("application/json"), body.to_string().as_bytes()).await;
    assert_eq!(json_only.reply()["error"]["code"], -32603);
    let no_elicitation =
        legacy.send(2, "tools/call", json!({"name": "test_elicitation", "arguments": {"message": "x"}})).await;
    assert_eq!(no_elicitation.reply()["error"]["code"], -32021);
}

#[tokio::test]
async fn session_logging_follows_set_level() {
    let server = TestServer::everything().await;
    let (legacy, _) = Legacy::connect(server.addr, json!({})).await;
    let quiet = legacy.send(1, "tools/call", json!({"name": "test_tool_with_logging"})).await;
    assert_eq!(quiet.messages().len(), 1);
    legacy.call(2, "logging/setLevel", json!({"level": "debug"})).await;
    let loud = legacy.send(3, "tools/call", json!({"name": "test_tool_with_logging"})).await;
    let logs = loud.messages().iter().filter(|m| m["method"] == "notifications/message").count();
    assert_eq!(logs, 3);
}

#[tokio::test]
async fn a_modern_request_with_a_session_header_is_modern() {
    let server = TestServer::everything().await;
    let (legacy, _) = Legacy::connect(server.addr, json!({})).await;
    let modern = Rpc::new("tools/list").header("mcp-session-id", Some(&legacy.session));
    assert_eq!(server.call(&modern).await["result"]["resultType"], "complete");
}

#[tokio::test]
async fn tasks_do_not_exist_in_2025_11_25() {
    let server = TestServer::everything().await;
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let (legacy, initialized) = Legacy::connect(server.addr, tasks).await;
    // Not promised either: a session's calls never become tasks.
    let extensions = &initialized["capabilities"]["extensions"];
    assert!(extensions.get("io.modelcontextprotocol/tasks").is_none(), "{initialized}");
    assert!(extensions.get("io.modelcontextprotocol/skills").is_some(), "other extensions stay: {initialized}");
    let get = legacy.call(1, "tasks/get", json!({"taskId": "0123456789abcdef0123456789abcdef"})).await;
    assert_eq!(get["error"]["code"], -32601, "{get}");
    // A tool that may run as a task runs to its end on a session, with no task id.
    let optional = legacy.call(2, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0}})).await;
    assert!(optional["result"]["content"].is_array() && optional["result"].get("taskId").is_none(), "{optional}");
    // One that needs a task cannot be served there, whatever the session declared: it is
    // not listed, and a call by name is answered as 2025-11-25 says (issue 49).
    let listed = legacy.call(3, "tools/list", json!({})).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"slow_compute") && !names.contains(&"failing_job"), "{names:?}");
    let required = legacy.call(4, "tools/call", json!({"name": "failing_job", "arguments": {}})).await;
    assert_eq!(required["error"]["code"], -32601, "{required}");
    assert!(required["error"]["message"].as_str().unwrap().contains("only as a task"), "{required}");
    // The modern list still has it.
    let modern = server.call(&Rpc::new("tools/list")).await;
    assert!(modern["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "failing_job"), "{modern}");
}
