//! The HTTP status and body of every error class, on a 2026-07-28 request and on a
//! 2025-11-25 session side by side, so the two eras' transport rules cannot drift: the
//! modern revision fixes statuses per error, while a legacy session answers every request
//! with a JSON-RPC response on HTTP 200 and keeps 4xx for the transport itself (a 404
//! there means "your session is gone").

use mcp_mrtr_tests::client;
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use serde_json::{json, Value};

/// One error, provoked the same way in both eras.
struct Case {
    what: &'static str,
    method: &'static str,
    params: Value,
    /// The capabilities both clients declare.
    caps: Value,
    modern: (u16, i64),
    legacy: (u16, i64),
}

fn cases() -> Vec<Case> {
    let none = json!({});
    vec![
        Case {
            what: "unknown method",
            method: "tools/nothing",
            params: json!({}),
            caps: none.clone(),
            modern: (404, -32601),
            legacy: (200, -32601),
        },
        Case {
            what: "missing client capability",
            method: "tools/call",
            params: json!({"name": "test_elicitation", "arguments": {"message": "Who?"}}),
            caps: none.clone(),
            modern: (400, -32021),
            legacy: (200, -32021),
        },
        Case {
            what: "unknown tool",
            method: "tools/call",
            params: json!({"name": "no_such_tool", "arguments": {}}),
            caps: none.clone(),
            modern: (200, -32602),
            legacy: (200, -32602),
        },
        Case {
            what: "a cursor the server never issued",
            method: "tools/list",
            params: json!({"cursor": "bogus"}),
            caps: none.clone(),
            modern: (200, -32602),
            legacy: (200, -32602),
        },
        Case {
            what: "missing resource",
            method: "resources/read",
            params: json!({"uri": "test://nope"}),
            caps: none,
            modern: (200, -32602),
            legacy: (200, -32002),
        },
    ]
}

#[tokio::test]
async fn each_error_gets_its_era_s_status_and_a_json_rpc_body() {
    let server = TestServer::everything().await;
    for case in cases() {
        let mut modern = Rpc::new(case.method).caps(case.caps.clone());
        if let Value::Object(params) = &case.params {
            for (key, value) in params {
                modern = modern.param(key, value.clone());
            }
        }
        let response = server.send(&modern).await;
        let reply = response.reply();
        assert_eq!(
            (response.status, reply["error"]["code"].as_i64()),
            (case.modern.0, Some(case.modern.1)),
            "modern {}: {reply}",
            case.what
        );
        assert_eq!(reply["id"], 1, "modern {}", case.what);

        let (legacy, _) = Legacy::connect(server.addr, case.caps.clone()).await;
        let response = legacy.send(9, case.method, case.params.clone()).await;
        assert_eq!(response.header("content-type"), Some("application/json"), "legacy {}", case.what);
        let reply = response.reply();
        assert_eq!(
            (response.status, reply["error"]["code"].as_i64()),
            (case.legacy.0, Some(case.legacy.1)),
            "legacy {}: {reply}",
            case.what
        );
        assert_eq!(reply["id"], 9, "legacy {}", case.what);
        // The error ended the request, not the session.
        assert_eq!(legacy.call(10, "ping", json!({})).await["result"], json!({}), "legacy {}", case.what);
    }
}

#[tokio::test]
async fn a_capability_error_on_a_session_carries_its_code_and_data_in_the_body() {
    let server = TestServer::everything().await;
    let (legacy, _) = Legacy::connect(server.addr, json!({"sampling": {}})).await;
    let reply = legacy.call(3, "tools/call", json!({"name": "test_elicitation", "arguments": {"message": "x"}})).await;
    assert_eq!(reply["error"]["code"], -32021);
    assert!(reply["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(), "{reply}");
    assert!(reply["error"]["data"]["requiredCapabilities"].get("sampling").is_none(), "{reply}");
    let modern = server.send(&Rpc::call_tool("test_elicitation", json!({"message": "x"})).caps(json!({}))).await;
    assert_eq!(modern.status, 400);
    assert_eq!(modern.reply()["error"]["data"], reply["error"]["data"]);
}

#[tokio::test]
async fn an_unknown_method_leaves_a_live_session_usable() {
    let server = TestServer::everything().await;
    let (legacy, _) = Legacy::connect(server.addr, json!({})).await;
    let unknown = legacy.send(1, "resources/frobnicate", json!({})).await;
    assert_eq!((unknown.status, unknown.reply()["error"]["code"].clone()), (200, json!(-32601)));
    let tools = legacy.call(2, "tools/list", json!({})).await;
    assert!(tools["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{tools}");
}

#[tokio::test]
async fn transport_failures_keep_their_statuses_in_both_eras() {
    let server = TestServer::everything().await;
    let (legacy, _) = Legacy::connect(server.addr, json!({})).await;
    // A body that is not JSON is malformed whichever era sent it.
    let broken = client::send(server.addr, "POST", &legacy.headers("application/json"), b"{not json").await;
    assert_eq!((broken.status, broken.reply()["error"]["code"].clone()), (400, json!(-32700)));
    // A session the server does not know: 404, so the client initializes again.
    let stranger = Legacy { addr: server.addr, session: "0123456789abcdef0123456789abcdef".into() };
    let gone = stranger.send(1, "tools/list", json!({})).await;
    assert_eq!((gone.status, gone.reply().get("id").is_some()), (404, true));
    let gone = stranger.cancel(1).await;
    assert_eq!(gone.status, 404);
    // A legacy request without a session: 400.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let headers = [("content-type", "application/json"), ("mcp-protocol-version", "2025-11-25")];
    let missing = client::send(server.addr, "POST", &headers, body.as_bytes()).await;
    assert_eq!((missing.status, missing.reply()["error"]["code"].clone()), (400, json!(-32600)));
}

/// SEP-1303: arguments that do not decode are a tool execution error, in both eras: the
/// result is `isError: true` and its text names the field, so the model corrects its call
/// (a JSON-RPC error is shown to the user as a failure, and the model never reads it).
#[tokio::test]
async fn bad_arguments_are_a_tool_error_naming_the_field_in_both_eras() {
    let server = TestServer::everything().await;
    let named = |result: &Value| {
        assert_eq!(result["isError"], true, "{result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("slow_compute") && text.contains("seconds"), "{text}");
    };
    let bad = json!({"name": "slow_compute", "arguments": {"seconds": "soon"}});
    let modern = server.call(&Rpc::call_tool("slow_compute", json!({"seconds": "soon"}))).await;
    named(&modern["result"]);
    let (legacy, _) = Legacy::connect(server.addr, json!({})).await;
    named(&legacy.call(1, "tools/call", bad).await["result"]);
    // An unknown tool stays a protocol error: there is nothing for the model to correct.
    let unknown = server.call(&Rpc::call_tool("no_such_tool", json!({}))).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}
