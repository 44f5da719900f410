//! A 2025-11-25 upstream behind a mount (`mcp_mrtr::mount`): `everything` spoken to in a
//! 2025-11-25 session, a gateway in front, both over real HTTP on loopback. The upstream
//! asks on its call's stream and waits; the gateway holds the call open and puts each
//! question to its caller as a round, for callers of either era.

use std::time::Duration;

use futures_util::StreamExt as _;
use mcp_mrtr::client::{Answers, Client, ClientError};
use mcp_mrtr::mount::Mount;
use mcp_mrtr::protocol::ElicitResult;
use mcp_mrtr::request_state::{KeyRing, StateConfig, StateKey};
use mcp_mrtr::{ErrorCode, Server};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::scripted::{self, Shown};
use serde_json::json;

/// A gateway mounting `upstream` in a 2025-11-25 session, the upstream's tools under `up_`.
async fn gateway(upstream: &TestServer, mount: impl FnOnce(Mount) -> Mount) -> TestServer {
    let client = Client::http(upstream.url()).versions(["2025-11-25"]).relaying_questions().connect().await.unwrap();
    assert_eq!(client.server().supported_versions, ["2025-11-25"]);
    let keys = KeyRing::new(StateKey::new("k", *b"a-32-byte-key-shared-by-gateway!"));
    let server = Server::new("gateway", "1.0.0")
        .request_state(StateConfig::new(keys))
        .mount(mount(Mount::new(client).prefix("up_")).load().await.unwrap());
    TestServer::start(server).await
}

#[tokio::test]
async fn a_2025_upstream_s_questions_are_the_gateway_s_rounds_in_either_era() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream, |mount| mount).await;
    for versions in [["2026-07-28"], ["2025-11-25"]] {
        let shown = Shown::default();
        let client =
            Client::http(gateway.url()).versions(versions).answers(scripted::answers(&shown)).connect().await.unwrap();
        // Two questions, one after the other, on one held call.
        let result = client.call_tool("up_test_input_required_result_multi_round", json!({})).await.unwrap();
        assert_eq!(result.all_text(), "Ada likes green", "{versions:?}");
        // A form, a sampling request and roots, asked together.
        let result = client.call_tool("up_test_input_required_result_multiple_inputs", json!({})).await.unwrap();
        assert_eq!(result.all_text(), "Ada: Paris (2 roots)", "{versions:?}");
        let result = client.call_tool("up_test_url_elicitation", json!({})).await.unwrap();
        assert!(!result.is_error(), "{versions:?}: {}", result.all_text());
        assert_eq!(shown.lock().unwrap().len(), 4, "{versions:?}: {shown:?}");
    }
}

#[tokio::test]
async fn a_held_call_continues_only_where_it_is_held_and_while_it_is() {
    let upstream = TestServer::everything().await;
    let holding = gateway(&upstream, |mount| mount.hold_for(Duration::from_millis(300))).await;
    // Another instance: the same keys, so it opens the state, but not the held call.
    let other = gateway(&upstream, |mount| mount).await;
    let tool = "up_test_input_required_result_elicitation";
    let first = Rpc::call_tool(tool, json!({}));
    let asked = holding.call(&first).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let (key, request) = result["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    let retry = |state: &serde_json::Value| {
        Rpc::call_tool(tool, json!({}))
            .param("inputResponses", json!({ key: {"action": "accept", "content": {"name": "Ada"}} }))
            .param("requestState", state.clone())
    };
    let elsewhere = other.call(&retry(&result["requestState"])).await;
    assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");
    // Where it is held, in time, the answer reaches the upstream.
    let done = holding.call(&retry(&result["requestState"])).await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!", "{done}");
    // Answered after the hold lapsed: refused, and the caller starts over.
    let asked = holding.call(&first).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let late = holding.call(&retry(&asked["result"]["requestState"])).await;
    assert_eq!(late["error"]["code"], -32602, "{late}");
    assert!(late["error"]["message"].as_str().unwrap().contains("start the call over"), "{late}");
}

#[tokio::test]
async fn a_question_the_caller_cannot_answer_is_refused_and_the_mount_needs_a_relaying_client() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream, |mount| mount.held_calls(4)).await;
    // This caller answers forms only: the upstream's sampling request is its -32021.
    let forms = Answers::new().forms(|_| async { Ok(ElicitResult::decline()) });
    let client = Client::http(gateway.url()).answers(forms).connect().await.unwrap();
    let refused = client.call_tool("up_test_input_required_result_sampling", json!({})).await.unwrap_err();
    assert_eq!(refused.rpc().map(mcp_mrtr::Error::code), Some(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY));
    // A client that declares nothing cannot be mounted in a 2025-11-25 session.
    let plain = Client::http(upstream.url()).versions(["2025-11-25"]).connect().await.unwrap();
    let error = Mount::new(plain).load().await.unwrap_err();
    assert!(matches!(error, ClientError::Config(_)), "{error}");
}

#[tokio::test]
async fn questions_asked_together_are_one_round_and_progress_is_relayed() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream, |mount| mount).await;
    // The upstream sends its three questions as three requests: one round of the caller's.
    let asked = gateway.call(&Rpc::call_tool("up_test_input_required_result_multiple_inputs", json!({}))).await;
    let requests = asked["result"]["inputRequests"].as_object().unwrap();
    let mut methods: Vec<&str> = requests.values().map(|request| request["method"].as_str().unwrap()).collect();
    methods.sort_unstable();
    assert_eq!(methods, ["elicitation/create", "roots/list", "sampling/createMessage"], "{asked}");
    // The upstream's progress, sent on the held call's stream, reaches the caller.
    let client = Client::http(gateway.url()).connect().await.unwrap();
    let (call, progress) = client.call_tool("up_test_tool_with_progress", json!({})).with_progress();
    let updates = progress.map(|update| update.progress).collect::<Vec<_>>();
    let (result, updates) = tokio::join!(std::future::IntoFuture::into_future(call), updates);
    assert_eq!(result.unwrap().all_text(), "Progress complete");
    assert_eq!(updates, [0.0, 50.0, 100.0]);
}
