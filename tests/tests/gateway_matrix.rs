//! The mount's whole matrix, over real HTTP on loopback: {2026-07-28, 2025-11-25 caller} ×
//! {2026-07-28, 2025-11-25 upstream} × {a form, a URL, sampling, roots, a `once!` step
//! between two questions, a task's question}. `everything` is the upstream, spoken to in
//! either revision; the caller is the crate's client in either.

use std::sync::atomic::{AtomicU32, Ordering};

use mcp_mrtr::client::{Client, Started};
use mcp_mrtr::mount::Mount;
use mcp_mrtr::request_state::{KeyRing, StateConfig, StateKey};
use mcp_mrtr::{ErrorCode, Server};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::scripted::{self, Shown};
use serde_json::json;

const ERAS: [&str; 2] = ["2026-07-28", "2025-11-25"];

/// A gateway sealing with the key `gw`, mounting `upstream` spoken to in `era`.
async fn gateway(upstream: &TestServer, era: &str) -> TestServer {
    let client = Client::http(upstream.url()).versions([era]).relaying_questions().connect().await.unwrap();
    let keys = KeyRing::new(StateKey::new("gw", *b"the gateway's own 32-byte key..."));
    let mounted = Mount::new(client).prefix("up_").load().await.unwrap();
    TestServer::start(Server::new("gateway", "1.0.0").request_state(StateConfig::new(keys)).mount(mounted)).await
}

static CALLS: AtomicU32 = AtomicU32::new(0);

#[tokio::test]
async fn every_question_crosses_the_hop_in_every_era_combination() {
    let upstream = TestServer::everything().await;
    for upstream_era in ERAS {
        let gateway = gateway(&upstream, upstream_era).await;
        for caller_era in ERAS {
            let cell = format!("{caller_era} caller, {upstream_era} upstream");
            let client = Client::http(gateway.url())
                .versions([caller_era])
                .answers(scripted::answers(&Shown::default()))
                .connect()
                .await
                .unwrap();
            let text = |tool: &'static str, arguments: serde_json::Value| {
                let client = &client;
                async move { client.call_tool(tool, arguments).await.map(|result| result.all_text()) }
            };
            assert_eq!(text("up_test_input_required_result_elicitation", json!({})).await.unwrap(), "Hello, Ada!");
            let url = text("up_test_url_elicitation", json!({})).await.unwrap();
            assert_eq!(url, "Connected: the user opened the page.", "{cell}");
            let sampled = text("up_test_input_required_result_sampling", json!({})).await.unwrap();
            assert_eq!(sampled, "The model says: Paris", "{cell}");
            let roots = text("up_test_input_required_result_list_roots", json!({})).await.unwrap();
            assert_eq!(roots, "Found 2 root(s)", "{cell}");
            // A once! step between two questions runs once, whichever way the rounds go.
            let call_id = format!("matrix-{}", CALLS.fetch_add(1, Ordering::SeqCst));
            let once = text("up_test_once_side_effect", json!({ "call_id": call_id })).await.unwrap();
            assert_eq!(once, format!("call {call_id}: the once step ran 1 time(s), finished=true"), "{cell}");
            // A task's question: where both sides speak 2026-07-28, the upstream's task is
            // the caller's; elsewhere there are no tasks, and a tool that runs only as one
            // is not served.
            let task = client.call_tool("up_confirm_delete", json!({"filename": "a.txt"})).start().await;
            match (caller_era, upstream_era, task) {
                ("2026-07-28", "2026-07-28", Ok(Started::Task(task))) => {
                    assert_eq!(task.result().await.unwrap().all_text(), "Deleted a.txt", "{cell}");
                }
                // The upstream's session does not list it: an unknown tool here.
                (_, "2025-11-25", Err(error)) => assert_eq!(error.code(), Some(ErrorCode(-32602)), "{cell}: {error}"),
                // The upstream needs tasks, which a 2025-11-25 session cannot declare: what
                // this server answers such a caller for a task-only tool of its own.
                ("2025-11-25", _, Err(error)) => assert_eq!(error.code(), Some(ErrorCode(-32601)), "{cell}: {error}"),
                (_, _, other) => panic!("{cell}: {other:?}"),
            }
        }
    }
}

#[tokio::test]
async fn the_caller_holds_the_gateway_s_state_only_and_a_tampered_one_is_refused() {
    let upstream = TestServer::everything().await;
    for upstream_era in ERAS {
        let gateway = gateway(&upstream, upstream_era).await;
        let tool = "up_test_input_required_result_elicitation";
        let asked = gateway.call(&Rpc::call_tool(tool, json!({}))).await;
        let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
        // Sealed with the gateway's key: the upstream's own state (a 2026-07-28 upstream
        // seals with a random key of its own) is inside, encrypted, never on this wire.
        assert!(state.starts_with("v3.gw."), "{upstream_era}: {state}");
        let key = asked["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
        let mut tampered = state.clone();
        let last = tampered.pop().unwrap();
        tampered.push(if last == 'A' { 'B' } else { 'A' });
        let retry = |state: &str| {
            Rpc::call_tool(tool, json!({}))
                .param("inputResponses", json!({ key.clone(): {"action": "accept", "content": {"name": "Ada"}} }))
                .param("requestState", json!(state))
        };
        let refused = gateway.call(&retry(&tampered)).await;
        assert_eq!(refused["error"]["code"], -32602, "{upstream_era}: {refused}");
        // The upstream was not reached by it: the held call (or the upstream's state) is
        // still there for the genuine retry.
        let done = gateway.call(&retry(&state)).await;
        assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!", "{upstream_era}: {done}");
    }
}
