//! The fixture's url-mode ask, `test_url_elicitation`, as hosts that declare
//! `elicitation.url` meet it (issue 33): over real HTTP on 127.0.0.1 and a stdio pipe on
//! 2026-07-28 (an `inputRequests` entry in url mode, no elicitation id, no completion
//! notification), and through the 2025-11-25 bridge (a real `elicitation/create` with an
//! `elicitationId`, then `notifications/elicitation/complete` naming it).

use mcp_mrtr_examples::everything::{self, mrtr::CONNECT_URL};
use mcp_mrtr_tests::harness::{meta, Rpc, TestServer};
use mcp_mrtr_tests::legacy::Legacy;
use mcp_mrtr_tests::pipe::Pipe;
use serde_json::{json, Value};

fn url_caps() -> Value {
    json!({ "elicitation": { "url": {} } })
}

/// The url-mode ask of round one, checked.
fn assert_asks_url(first: &Value) {
    assert_eq!(first["resultType"], "input_required", "{first}");
    let asked = &first["inputRequests"]["connect"];
    assert_eq!(asked["method"], "elicitation/create", "{first}");
    assert_eq!(asked["params"]["mode"], "url");
    assert_eq!(asked["params"]["url"], CONNECT_URL);
    assert!(asked["params"].get("elicitationId").is_none(), "2026-07-28 has no elicitation ids: {asked}");
}

#[tokio::test]
async fn over_http_the_url_is_asked_and_consent_completes_the_call() {
    let server = TestServer::everything().await;
    let call = Rpc::call_tool("test_url_elicitation", json!({})).caps(url_caps());
    let first = server.call(&call).await["result"].clone();
    assert_asks_url(&first);
    for (action, said) in [("accept", "Connected"), ("decline", "Not connected")] {
        let retry = call
            .clone()
            .param("inputResponses", json!({ "connect": { "action": action } }))
            .param("requestState", first["requestState"].clone());
        let response = server.send(&retry).await;
        let messages = response.messages();
        assert_eq!(messages.len(), 1, "the result alone, no notification: {messages:?}");
        let text = messages[0]["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        assert!(text.starts_with(said), "{action}: {messages:?}");
    }
    // A client that declared form elicitation only cannot be asked for a URL.
    let form_only = Rpc::call_tool("test_url_elicitation", json!({})).caps(json!({ "elicitation": { "form": {} } }));
    let refused = server.send(&form_only).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    let refused = refused.reply();
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("elicitation.url"), "{refused}");
}

#[tokio::test]
async fn over_stdio_the_same_two_rounds() {
    let mut pipe = Pipe::start(everything::server());
    let mut params = json!({ "name": "test_url_elicitation", "_meta": meta(url_caps()) });
    let request =
        |id: i64, params: &Value| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    let first = pipe.round(&request(1, &params)).await["result"].clone();
    assert_asks_url(&first);
    params["inputResponses"] = json!({ "connect": { "action": "accept" } });
    params["requestState"] = first["requestState"].clone();
    let done = pipe.round(&request(2, &params)).await;
    assert_eq!(done["result"]["content"][0]["text"], "Connected: the user opened the page.", "{done}");
}

#[tokio::test]
async fn through_the_bridge_the_completion_names_the_id_it_issued() {
    let server = TestServer::everything().await;
    let (legacy, _) = Legacy::connect(server.addr, url_caps()).await;
    let mut stream = legacy.open(2, "tools/call", json!({ "name": "test_url_elicitation", "arguments": {} })).await;
    let asked = stream.next().await.expect("the bridge asks");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!((asked["params"]["mode"].clone(), asked["params"]["url"].clone()), (json!("url"), json!(CONNECT_URL)));
    let id = asked["params"]["elicitationId"].as_str().expect("an elicitationId").to_owned();
    legacy.answer(&asked, json!({ "action": "accept" })).await;
    let complete = stream.next().await.expect("the completion notification");
    assert_eq!(complete["method"], "notifications/elicitation/complete", "{complete}");
    assert_eq!(complete["params"], json!({ "elicitationId": id }));
    let done = stream.next().await.expect("the result");
    assert_eq!(done["result"]["content"][0]["text"], "Connected: the user opened the page.", "{done}");
}
