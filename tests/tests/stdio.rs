//! The stdio transport, driven through `Pipe::new` on an in-memory pipe: the same code
//! path `Stdio::new()` runs on the process's stdin and stdout.

use std::time::Duration;

use mcp_mrtr::{protocol::Tool, Server, ToolError};
use mcp_mrtr_tests::client::TIMEOUT;
use mcp_mrtr_tests::harness::meta;
use mcp_mrtr_tests::schema;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

struct Pipe {
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
}

impl Pipe {
    fn start(server: Server) -> Self {
        let (input, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, output) = tokio::io::duplex(1 << 16);
        tokio::spawn(mcp_mrtr::testing::with_own_keys(server).serve(mcp_mrtr::stdio::Pipe::new(server_in, server_out)));
        Self { input, output: BufReader::new(output).lines() }
    }

    async fn send_line(&mut self, line: &str) {
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }

    async fn request(&mut self, id: i64, method: &str, mut params: Value) {
        if params.get("_meta").is_none() {
            params["_meta"] = meta(json!({}));
        }
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send_line(&line.to_string()).await;
    }

    /// The next line the server writes, checked against the schema as an answer to `method`.
    async fn next(&mut self, method: &str) -> Value {
        let message = self.next_line().await;
        schema::assert_valid_message(method, &message);
        message
    }

    /// The next line, checked against the 2025-11-25 schema.
    async fn next_legacy(&mut self, method: &str) -> Value {
        let message = self.next_line().await;
        schema::assert_valid_legacy_message(method, &message);
        message
    }

    async fn next_line(&mut self) -> Value {
        let line = tokio::time::timeout(TIMEOUT, self.output.next_line()).await.expect("an answer in time");
        serde_json::from_str(&line.unwrap().expect("the server is still writing")).unwrap()
    }
}

#[tokio::test]
async fn answers_requests_line_by_line() {
    let mut pipe = Pipe::start(mcp_mrtr_examples::everything::server());
    pipe.request(1, "server/discover", json!({})).await;
    let reply = pipe.next("server/discover").await;
    assert_eq!((reply["id"].clone(), reply["result"]["resultType"].clone()), (json!(1), json!("complete")));
    pipe.request(2, "tools/call", json!({ "name": "test_simple_text" })).await;
    assert_eq!(pipe.next("tools/call").await["result"]["content"][0]["type"], "text");
}

#[tokio::test]
async fn what_serve_returns_hands_out_the_running_servers_handle() {
    let (input, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, output) = tokio::io::duplex(1 << 16);
    let serving = mcp_mrtr::testing::with_own_keys(Server::new("late", "1.0.0"))
        .serve(mcp_mrtr::stdio::Pipe::new(server_in, server_out));
    let handle = serving.catalog();
    tokio::spawn(serving);
    let mut pipe = Pipe { input, output: BufReader::new(output).lines() };
    let late = Tool::new("late").description("Registered once serving started");
    let late = late.handler(|_ctx, _args: Map<String, Value>| async { Ok::<_, ToolError>("here") });
    handle.tools().add(late).unwrap();
    pipe.request(1, "tools/call", json!({ "name": "late" })).await;
    assert_eq!(pipe.next("tools/call").await["result"]["content"][0]["text"], "here");
}

#[tokio::test]
async fn envelope_and_version_errors_echo_the_id() {
    let mut pipe = Pipe::start(mcp_mrtr_examples::everything::server());
    pipe.request(1, "server/discover", json!({ "_meta": { "io.modelcontextprotocol/clientCapabilities": {} } })).await;
    assert_eq!(pipe.next("server/discover").await["error"]["code"], -32602);
    let mut old = meta(json!({}));
    old["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    pipe.request(2, "server/discover", json!({ "_meta": old })).await;
    let reply = pipe.next("server/discover").await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(2), json!(-32022)));
    pipe.request(3, "ping", json!({})).await;
    assert_eq!(pipe.next("ping").await["error"]["code"], -32601);
    pipe.send_line(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#).await;
    assert_eq!(pipe.next("tools/list").await["error"]["code"], -32602);
}

#[tokio::test]
async fn initialize_opens_a_legacy_session_whose_questions_are_real_requests() {
    let mut pipe = Pipe::start(mcp_mrtr_examples::everything::server());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}}, "clientInfo": {"name": "c", "version": "1"}}});
    pipe.send_line(&init.to_string()).await;
    let reply = pipe.next_legacy("initialize").await;
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25");
    pipe.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    pipe.send_line(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert_eq!(pipe.next_legacy("ping").await["result"], json!({}));
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "test_sampling", "arguments": {"prompt": "Hi?"}}});
    pipe.send_line(&call.to_string()).await;
    let asked = pipe.next_legacy("tools/call").await;
    assert_eq!(asked["method"], "sampling/createMessage");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "Hello"}, "model": "m"}});
    pipe.send_line(&answer.to_string()).await;
    let done = pipe.next_legacy("tools/call").await;
    assert_eq!(done["result"]["content"][0]["text"], "LLM response: Hello");
    assert!(done["result"].get("resultType").is_none());
}

#[tokio::test]
async fn bad_lines_get_errors_and_the_connection_survives() {
    let mut pipe = Pipe::start(mcp_mrtr_examples::everything::server());
    pipe.send_line("{not json").await;
    assert_eq!(pipe.next("server/discover").await["error"]["code"], -32700);
    pipe.send_line("").await;
    pipe.send_line(r#"[{"jsonrpc":"2.0","id":1,"method":"server/discover"}]"#).await;
    assert_eq!(pipe.next("server/discover").await["error"]["code"], -32600);
    let huge =
        format!(r#"{{"jsonrpc":"2.0","id":5,"method":"x","params":{{"pad":"{}"}}}}"#, "y".repeat(5 * 1024 * 1024));
    pipe.send_line(&huge).await;
    let too_long = pipe.next("server/discover").await;
    assert_eq!(too_long["error"]["code"], -32600);
    assert!(too_long["error"]["message"].as_str().unwrap().contains("longer than"));
    pipe.request(6, "server/discover", json!({})).await;
    assert_eq!(pipe.next("server/discover").await["id"], 6);
}

#[tokio::test]
async fn progress_comes_before_the_reply() {
    let mut pipe = Pipe::start(mcp_mrtr_examples::everything::server());
    let mut with_token = meta(json!({}));
    with_token["progressToken"] = json!("p");
    pipe.request(7, "tools/call", json!({ "name": "test_tool_with_progress", "_meta": with_token })).await;
    for expected in [0, 50, 100] {
        let note = pipe.next("tools/call").await;
        assert_eq!(
            (note["method"].clone(), note["params"]["progress"].as_f64()),
            (json!("notifications/progress"), Some(f64::from(expected)))
        );
    }
    assert_eq!(pipe.next("tools/call").await["id"], 7);
}

/// Tells the test when the handler holding it is dropped (cancelled or finished).
struct DropSignal(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(signal) = self.0.take() {
            let _ = signal.send(());
        }
    }
}

#[tokio::test]
async fn cancelled_requests_stay_silent() {
    let (started, has_started) = tokio::sync::oneshot::channel();
    let (dropped, was_dropped) = tokio::sync::oneshot::channel();
    let signals = std::sync::Mutex::new(Some((started, dropped)));
    let slow =
        Tool::new("slow").description("Waits far longer than the test").handler(move |_ctx, _: Map<String, Value>| {
            let (started, dropped) = signals.lock().unwrap().take().expect("called once");
            let _ = started.send(());
            let signal = DropSignal(Some(dropped));
            async move {
                let _signal = signal;
                tokio::time::sleep(Duration::from_hours(1)).await;
                Ok::<_, ToolError>("finished")
            }
        });
    let mut pipe = Pipe::start(Server::new("slow", "0").tool(slow));
    pipe.request(1, "tools/call", json!({ "name": "slow" })).await;
    tokio::time::timeout(TIMEOUT, has_started).await.expect("the handler started").unwrap();
    pipe.send_line(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#).await;
    // Only a cancellation drops the handler this side of an hour.
    tokio::time::timeout(TIMEOUT, was_dropped).await.expect("the cancelled handler was dropped").unwrap();
    // And nothing was written for it: the next lines answer the next requests.
    for id in [2, 3] {
        pipe.request(id, "server/discover", json!({})).await;
        assert_eq!(pipe.next("server/discover").await["id"], id);
    }
}

/// Asks the user to open a page.
#[mcp_mrtr::tool]
async fn authorize() -> Result<String, ToolError> {
    mcp_mrtr::ask!(key = "authorize", elicit_url "Authorize access", "https://example.com/auth")?;
    Ok("authorized".into())
}

#[tokio::test]
async fn legacy_url_elicitations_carry_an_elicitation_id() {
    let mut pipe = Pipe::start(Server::new("url", "0").tool(authorize));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"url": {}}}, "clientInfo": {"name": "c", "version": "1"}}});
    pipe.send_line(&init.to_string()).await;
    pipe.next_legacy("initialize").await;
    pipe.send_line(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"authorize"}}"#).await;
    let asked = pipe.next_legacy("tools/call").await;
    assert_eq!(asked["params"]["mode"], "url");
    assert!(asked["params"]["elicitationId"].as_str().is_some_and(|id| !id.is_empty()), "{asked}");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}});
    pipe.send_line(&answer.to_string()).await;
    assert_eq!(pipe.next_legacy("tools/call").await["result"]["content"][0]["text"], "authorized");
}

/// Stdio has no time limit of its own (its one client can cancel), but the server's
/// `handler_timeout` is one setting for every transport.
#[tokio::test]
async fn the_servers_handler_timeout_bounds_a_handler_over_stdio_too() {
    let slow = Tool::new("slow").description("Sleeps.").handler(|_ctx, _args: Map<String, Value>| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok::<_, ToolError>("woke")
    });
    let mut pipe = Pipe::start(Server::new("slow", "1").tool(slow).handler_timeout(Some(Duration::from_millis(200))));
    pipe.request(1, "tools/call", json!({ "name": "slow", "arguments": {} })).await;
    let reply = pipe.next("tools/call").await;
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(reply["error"]["message"], "timed out after 200ms", "{reply}");
}
