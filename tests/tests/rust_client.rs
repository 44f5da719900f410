//! The crate's own MCP client (`mcp_mrtr::client`, the `client` feature) against the
//! `everything` fixture over real HTTP on loopback: lists, calls, and every kind of question
//! a tool asks mid-call answered by the application's `Answers`, the rounds run by the
//! client and never seen by the caller.

use std::time::Duration;

use mcp_mrtr::client::{Answers, Client, ClientError, ClientLimits};
use mcp_mrtr::protocol::{ElicitAction, ElicitResult};
use mcp_mrtr::ErrorCode;
use mcp_mrtr_tests::harness::TestServer;
use mcp_mrtr_tests::scripted::{self, Shown};
use serde_json::json;

async fn connect(server: &TestServer, answers: Answers) -> Client {
    Client::http(server.url()).answers(answers).connect().await.expect("the client connects")
}

#[tokio::test]
async fn lists_and_calls_a_server_that_asks_nothing() {
    let server = TestServer::everything().await;
    let client = connect(&server, Answers::new()).await;
    assert!(client.server().supported_versions.iter().any(|v| v == "2026-07-28"));
    let tools = client.list_tools().await.unwrap();
    assert!(
        tools.iter().any(|tool| tool.name == "greet"),
        "tools: {:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    let greeted = client.call_tool("greet", json!({"name": "Ada"})).await.unwrap();
    assert_eq!(greeted.all_text(), "Hello, Ada!");
    assert!(!greeted.is_error());
    // A tool that fails is a value the model reads, not an Err.
    let failed = client.call_tool("test_error_handling", json!({})).await.unwrap();
    assert!(failed.is_error());
    assert!(failed.all_text().contains("intentionally"));
}

#[tokio::test]
async fn a_form_is_asked_and_the_call_finishes_with_its_answer() {
    let server = TestServer::everything().await;
    let shown = Shown::default();
    let client = connect(&server, scripted::answers(&shown)).await;
    let result = client.call_tool("test_input_required_result_elicitation", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "Hello, Ada!");
    assert_eq!(*shown.lock().unwrap(), ["What is your name?"]);
}

#[tokio::test]
async fn rounds_follow_each_other_until_the_tool_is_done() {
    let server = TestServer::everything().await;
    let shown = Shown::default();
    let client = connect(&server, scripted::answers(&shown)).await;
    let result = client.call_tool("test_input_required_result_multi_round", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "Ada likes green");
    // The second question names the first answer: the server kept it in its sealed state.
    assert_eq!(*shown.lock().unwrap(), ["What is your name?", "Ada, what is your favourite colour?"]);
}

#[tokio::test]
async fn a_round_of_several_kinds_is_answered_whole() {
    let server = TestServer::everything().await;
    let client = connect(&server, scripted::answers(&Shown::default())).await;
    let result = client.call_tool("test_input_required_result_multiple_inputs", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "Ada: Paris (2 roots)");
    let sampled = client.call_tool("test_sampling", json!({"prompt": "Capital of France?"})).await.unwrap();
    assert_eq!(sampled.all_text(), "LLM response: Paris");
}

#[tokio::test]
async fn declining_and_cancelling_reach_the_tool() {
    let server = TestServer::everything().await;
    for (action, said) in [(ElicitAction::Decline, "action=decline"), (ElicitAction::Cancel, "action=cancel")] {
        let answers = Answers::new().forms(move |_| async move {
            Ok(if action == ElicitAction::Decline { ElicitResult::decline() } else { ElicitResult::cancel() })
        });
        let client = connect(&server, answers).await;
        let result = client.call_tool("test_elicitation", json!({"message": "Who are you?"})).await.unwrap();
        assert!(result.all_text().ends_with(said), "{}", result.all_text());
    }
}

#[tokio::test]
async fn a_url_is_offered_and_a_prompt_asks_too() {
    let server = TestServer::everything().await;
    let shown = Shown::default();
    let client = connect(&server, scripted::answers(&shown)).await;
    let result = client.call_tool("test_url_elicitation", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "Connected: the user opened the page.");
    assert!(shown.lock().unwrap()[0].ends_with("<https://example.com/mcp-mrtr/connect>"));
    let prompt = client.get_prompt("test_input_required_result_prompt", json!({})).await.unwrap();
    assert_eq!(prompt.messages.len(), 1);
    assert!(serde_json::to_string(&prompt.messages[0]).unwrap().contains("the diff"));
}

#[tokio::test]
async fn only_what_is_answered_is_declared() {
    let server = TestServer::everything().await;
    // Without answers the server cannot ask for sampling: its -32021 comes back whole.
    let client = connect(&server, Answers::new()).await;
    let error = client.call_tool("test_missing_capability", json!({})).await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY), "{error}");
    assert!(error.rpc().unwrap().data().unwrap()["requiredCapabilities"]["sampling"].is_object());
    // Forms only: the tool asks only for the name, never for sampling.
    let forms = Answers::new().forms(|_| async { Ok(ElicitResult::accept_as(&json!({"name": "Ada"}))?) });
    let client = connect(&server, forms).await;
    let result = client.call_tool("test_input_required_result_capabilities", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "name: Ada");
}

#[tokio::test]
async fn rounds_are_bounded_and_failed_answers_are_named() {
    let server = TestServer::everything().await;
    let mut limits = ClientLimits::default();
    limits.max_rounds = 1;
    let client = Client::http(server.url())
        .answers(scripted::answers(&Shown::default()))
        .limits(limits)
        .connect()
        .await
        .unwrap();
    let error = client.call_tool("test_input_required_result_multi_round", json!({})).await.unwrap_err();
    assert!(matches!(error, ClientError::TooManyRounds { rounds: 1 }), "{error}");

    let failing = Answers::new().forms(|_| async { Err("the terminal was closed".into()) });
    let client = connect(&server, failing).await;
    let error = client.call_tool("test_input_required_result_elicitation", json!({})).await.unwrap_err();
    assert!(matches!(&error, ClientError::Answer { key, .. } if key == "user_name"), "{error}");
    assert!(error.to_string().contains("the terminal was closed"));
}

#[tokio::test]
async fn what_cannot_be_reached_says_why() {
    let error = Client::http("ftp://127.0.0.1/mcp").connect().await.unwrap_err();
    assert!(matches!(error, ClientError::Config(_)), "{error}");
    // A port nobody listens on (bound, then released).
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let error = Client::http(format!("http://{free}/mcp")).connect().await.unwrap_err();
    assert!(matches!(error, ClientError::Connect(_)), "{error}");
    // A server that never answers is bounded by the request timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut limits = ClientLimits::default();
    limits.request_timeout = Duration::from_millis(300);
    let address = silent.local_addr().unwrap();
    let error = Client::http(format!("http://{address}/mcp")).limits(limits).connect().await.unwrap_err();
    assert!(matches!(error, ClientError::Timeout { .. }), "{error}");
    drop(silent);
}

#[tokio::test]
async fn a_reply_on_an_event_stream_is_read_past_its_notifications() {
    let server = TestServer::everything().await;
    let client = connect(&server, Answers::new()).await;
    // A progress token makes the server answer on an event stream, progress first.
    let params = json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 7}});
    let result = client.request("tools/call", params).await.unwrap();
    assert_eq!(result["content"][0]["text"], "Progress complete");
}

#[tokio::test]
async fn a_name_that_is_not_plain_ascii_travels_in_its_header_wrapped() {
    let server = TestServer::everything().await;
    let client = connect(&server, Answers::new()).await;
    // The server compared the wrapped Mcp-Name with the body and found them equal: its
    // refusal is of the tool, not of the header (-32020).
    let error = client.call_tool("météo du jour", json!({})).await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::INVALID_PARAMS), "{error}");
}

/// Routes a job to a region.
#[mcp_mrtr::tool]
async fn route_job(
    /// Where to run.
    #[mcp(header = "Region")]
    region: String,
    /// How many workers.
    #[mcp(header = "Workers")]
    workers: Option<u32>,
) -> Result<String, mcp_mrtr::ToolError> {
    Ok(format!("{region}/{workers:?}"))
}

#[tokio::test]
async fn mirrored_parameters_travel_in_their_headers_too() {
    let server = TestServer::start(mcp_mrtr::Server::new("h", "0").tool(route_job)).await;
    let client = connect(&server, Answers::new()).await;
    // Called before any listing: the client lists the tools to learn the headers. The
    // server refuses a call whose Mcp-Param-* headers are missing or disagree (-32020).
    let routed = client.call_tool("route_job", json!({"region": "Zürich", "workers": 3})).await.unwrap();
    assert_eq!(routed.all_text(), "Zürich/Some(3)");
    let routed = client.call_tool("route_job", json!({"region": " eu-west "})).await.unwrap();
    assert_eq!(routed.all_text(), " eu-west /None");
}

#[tokio::test]
async fn a_2025_session_asks_through_the_same_answers() {
    let server = TestServer::everything().await;
    let shown = Shown::default();
    let client =
        Client::http(server.url()).versions(["2025-11-25"]).answers(scripted::answers(&shown)).connect().await.unwrap();
    assert_eq!(client.server().supported_versions, ["2025-11-25"]);
    assert!(client.list_tools().await.unwrap().iter().any(|tool| tool.name == "greet"));
    // The server's bridge asks with real requests on the call's stream; the same answers
    // answer them, and the caller reads the same result as over 2026-07-28.
    let result = client.call_tool("test_input_required_result_multi_round", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "Ada likes green");
    assert_eq!(*shown.lock().unwrap(), ["What is your name?", "Ada, what is your favourite colour?"]);
    let result = client.call_tool("test_input_required_result_multiple_inputs", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "Ada: Paris (2 roots)");
    // Declining reaches the tool as over 2026-07-28.
    let forms_only = Answers::new().forms(|_| async { Ok(ElicitResult::decline()) });
    let client = Client::http(server.url()).versions(["2025-11-25"]).answers(forms_only).connect().await.unwrap();
    let declined = client.call_tool("test_elicitation", json!({"message": "Who?"})).await.unwrap();
    assert!(declined.all_text().ends_with("action=decline"), "{}", declined.all_text());
}

/// A server that speaks only 2025-11-25, as one written before 2026 answers: `server/discover`
/// is refused until a session is open, and every request after `initialize` must carry
/// the session it opened.
async fn legacy_only(headers: axum::http::HeaderMap, body: String) -> axum::response::Response {
    use axum::response::IntoResponse;
    let json = |status: u16, value: serde_json::Value| {
        let status = axum::http::StatusCode::from_u16(status).unwrap();
        (status, [("content-type", "application/json"), ("mcp-session-id", "s-1")], value.to_string()).into_response()
    };
    let message: serde_json::Value = serde_json::from_str(&body).unwrap();
    let id = message["id"].clone();
    let session = headers.get("mcp-session-id").and_then(|v| v.to_str().ok());
    let version = headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok());
    match message["method"].as_str() {
        Some("initialize") => {
            assert_eq!(message["params"]["protocolVersion"], "2025-11-25");
            assert!(message["params"]["capabilities"]["elicitation"].is_object());
            let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}});
            json(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
        }
        Some("notifications/initialized") if session == Some("s-1") => axum::http::StatusCode::ACCEPTED.into_response(),
        Some("tools/list") if session == Some("s-1") && version == Some("2025-11-25") => {
            // A session's request carries no 2026-07-28 envelope.
            assert!(message["params"]["_meta"].get("io.modelcontextprotocol/protocolVersion").is_none(), "{message}");
            let tools = json!([{"name": "old_tool", "inputSchema": {"type": "object"}}]);
            json(200, json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}))
        }
        _ => {
            let error = json!({"code": -32000, "message": "Bad Request: Server not initialized"});
            json(400, json!({"jsonrpc": "2.0", "id": id, "error": error}))
        }
    }
}

#[tokio::test]
async fn a_server_without_discover_gets_a_2025_session_unless_told_otherwise() {
    let app = axum::Router::new().route("/mcp", axum::routing::post(legacy_only));
    let server = TestServer::start_router(app, std::future::pending()).await;
    let client = connect(&server, scripted::answers(&Shown::default())).await;
    assert_eq!(client.server().supported_versions, ["2025-11-25"]);
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.iter().map(|tool| tool.name.as_str()).collect::<Vec<_>>(), ["old_tool"]);
    // A client that speaks 2026-07-28 only says why it cannot talk to it.
    let error = Client::http(server.url()).versions(["2026-07-28"]).connect().await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode(-32000)), "{error}");
    let error = Client::http(server.url()).versions(["2024-11-05"]).connect().await.unwrap_err();
    assert!(matches!(error, ClientError::Config(_)), "{error}");
}

#[tokio::test]
async fn a_call_that_becomes_a_task_is_followed_to_its_result() {
    let server = TestServer::everything().await;
    let shown = Shown::default();
    let client = connect(&server, scripted::answers(&shown)).await;
    // Two questions the task asks at once, answered through one tasks/update.
    let result = client.call_tool("multi_input", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "Reviewers: Ada then Ada");
    // A round of the call first, then the task.
    let result = client.call_tool("test_tool_with_task", json!({})).await.unwrap();
    assert_eq!(result.all_text(), "Hello, Ada! (async)");
    // A tool error ends the task completed, a value; a JSON-RPC error ends it failed.
    assert!(client.call_tool("failing_job", json!({})).await.unwrap().is_error());
    let error = client.call_tool("protocol_error_job", json!({})).await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::INTERNAL_ERROR), "{error}");
    // Without the extension declared, a tool that runs only as a task refuses the call.
    let without = Client::http(server.url()).answers(scripted::answers(&shown)).tasks(false).connect().await.unwrap();
    let error = without.call_tool("multi_input", json!({})).await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY), "{error}");
}
