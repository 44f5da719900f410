//! Every way of running a server checks and applies the same things (issue 50): a server
//! that `serve` refuses is refused by `TestClient` too, with the same message (tests must
//! not pass for a server that will not start), and `Server::handler_timeout` means the same
//! over HTTP, stdio and in-process.

use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr::protocol::Tool;
use mcp_mrtr::testing::TestClient;
use mcp_mrtr_tests::harness::{meta, refusal, Rpc, TestServer};
use mcp_mrtr_tests::pipe::Pipe;
use serde_json::{json, Map, Value};

/// Says hello.
#[tool]
async fn hello() -> Result<String, ToolError> {
    Ok("hello".into())
}

/// A street address: no form can hold it.
#[derive(Deserialize, JsonSchema)]
struct Nested {
    /// Where.
    address: Street,
}

/// A street.
#[derive(Deserialize, JsonSchema)]
struct Street {
    /// Its name.
    street: String,
}

/// Asks for a type no form can hold.
#[tool]
async fn nested_form() -> Result<String, ToolError> {
    let nested: Nested = ask!(elicit "Where?")?;
    Ok(nested.address.street)
}

/// A count the server keeps.
struct Counter;

/// Reads the counter.
#[tool]
async fn count(State(_counter): State<Counter>) -> Result<String, ToolError> {
    Ok("1".into())
}

fn raw(name: &str) -> mcp_mrtr::ToolRoute {
    Tool::new(name).handler(|_ctx, _: Map<String, Value>| async { Ok::<_, ToolError>("") })
}

/// Every kind of mistake the builder reports when serving starts.
fn refused_servers() -> Vec<(&'static str, Server)> {
    let base = || Server::new("s", "1");
    vec![
        ("two tools with one name", base().tool(hello).tool(hello)),
        ("a tool name with a space", base().tool(raw("two words"))),
        ("a form type that cannot be a form", base().tool(nested_form)),
        ("a State<T> never given", base().tool(count)),
        ("the same resource twice", {
            let resource = || {
                mcp_mrtr::protocol::Resource::new("r://a", "a").handler(|_ctx| async {
                    Ok::<_, ToolError>(mcp_mrtr::protocol::ResourceContents::text("r://a", "text/plain", ""))
                })
            };
            base().resource(resource()).resource(resource())
        }),
    ]
}

#[tokio::test]
async fn the_test_client_refuses_what_serving_refuses_with_the_same_words() {
    for (what, server) in refused_servers() {
        let served = refusal(server.clone());
        let (_input, reader) = tokio::io::duplex(64);
        let (writer, _output) = tokio::io::duplex(64);
        let piped = server.clone().serve(mcp_mrtr::stdio::Pipe::new(reader, writer)).await;
        assert_eq!(piped.expect_err(what).to_string(), served, "{what}: stdio and HTTP say the same");
        let tested = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| TestClient::new(server)));
        let panic = tested.err().unwrap_or_else(|| panic!("{what}: TestClient accepted a server serve refuses"));
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert_eq!(message, served, "{what}");
    }
}

/// A tool that takes longer than the server allows.
fn slow_server() -> Server {
    let slow = Tool::new("slow").handler(|_ctx, _: Map<String, Value>| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok::<_, ToolError>("done")
    });
    Server::new("slow", "1").tool(slow).handler_timeout(Some(Duration::from_millis(100)))
}

#[tokio::test]
async fn the_handler_timeout_is_the_same_over_http_stdio_and_in_process() {
    let expected = json!("timed out after 100ms");
    let http = TestServer::start(slow_server()).await.call(&Rpc::call_tool("slow", json!({}))).await;
    assert_eq!(http["error"]["message"], expected, "HTTP: {http}");

    let mut pipe = Pipe::start(slow_server());
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "_meta": meta(json!({}))}});
    let stdio = pipe.round(&call).await;
    assert_eq!(stdio["error"]["message"], expected, "stdio: {stdio}");

    let in_process = TestClient::new(slow_server()).call_tool("slow", json!({})).start().await;
    let error = in_process.error().expect("timed out in process too");
    assert_eq!(json!(error.message()), expected);
}
