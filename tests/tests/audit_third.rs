//! Regressions of the 2026-12-02 audit that a client reaches on the wire: a `traceparent`
//! that panicked the envelope parser (C1) over real HTTP on 127.0.0.1 and over a stdio
//! pipe, each answered while the server goes on serving.

use mcp_mrtr_tests::harness::{meta, Rpc, TestServer};
use mcp_mrtr_tests::pipe::Pipe;
use serde_json::json;

/// `traceparent`s of 55+ bytes with a multi-byte character in their first two bytes:
/// slicing `[..2]` of either panicked `TraceParent::parse`.
fn panicking_traceparents() -> [String; 2] {
    [format!("\u{20ac}{}", "0".repeat(53)), format!("0\u{20ac}{}", "0".repeat(52))]
}

#[tokio::test]
async fn c1_over_http_a_multibyte_traceparent_is_answered_and_the_next_request_too() {
    let server = TestServer::everything().await;
    for traceparent in panicking_traceparents() {
        let reply = server.call(&Rpc::new("tools/list").meta_key("traceparent", json!(traceparent))).await;
        assert!(reply["result"]["tools"].is_array(), "an invalid traceparent is as if absent: {reply}");
    }
    let reply = server.call(&Rpc::call_tool("test_simple_text", json!({}))).await;
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
}

#[tokio::test]
async fn c1_over_stdio_a_multibyte_traceparent_is_answered_and_the_server_reads_on() {
    let mut pipe = Pipe::start(mcp_mrtr_examples::everything::server());
    for (id, traceparent) in (1..).zip(panicking_traceparents()) {
        let mut meta = meta(json!({}));
        meta["traceparent"] = json!(traceparent);
        let reply = pipe
            .round(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": { "_meta": meta } }))
            .await;
        assert_eq!(reply["id"], id, "{reply}");
        assert!(reply["result"]["tools"].is_array(), "{reply}");
    }
    let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "test_simple_text", "_meta": meta(json!({})) } });
    assert_eq!(pipe.round(&call).await["result"]["resultType"], "complete");
    pipe.finish().await;
}
