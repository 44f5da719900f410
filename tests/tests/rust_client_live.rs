//! The client's live side (`mcp_mrtr::client`) against `everything` over real HTTP on
//! loopback: a call's progress as a stream beside its result, the server's changes as a
//! stream (and the tool list cache a change empties), a task held by its id, cancelled,
//! cancelled by being dropped, or left to run and followed again later; and a round whose
//! connection dropped, sent again and refused when it had taken a `once!` step.

use std::future::IntoFuture;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use mcp_mrtr::client::{Answers, Change, Client, ClientError, Listen, Started};
use mcp_mrtr::protocol::{CacheHints, CacheScope, ElicitResult};
use mcp_mrtr::ErrorCode;
use mcp_mrtr_tests::harness::TestServer;
use serde_json::json;

async fn connect(server: &TestServer) -> Client {
    Client::http(format!("http://{}/mcp", server.addr)).connect().await.expect("the client connects")
}

/// Waits at most 10 s for `future`.
async fn soon<T>(future: impl IntoFuture<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), future).await.expect("within 10 s")
}

#[tokio::test]
async fn progress_arrives_as_a_stream_beside_the_result() {
    let server = TestServer::everything().await;
    let client = connect(&server).await;
    let (call, progress) = client.call_tool("test_tool_with_progress", json!({})).with_progress();
    let updates = progress.map(|update| (update.progress, update.total)).collect::<Vec<_>>();
    let (result, updates) = soon(async { tokio::join!(call.into_future(), updates) }).await;
    assert_eq!(result.unwrap().all_text(), "Progress complete");
    assert_eq!(updates, [(0.0, Some(100.0)), (50.0, Some(100.0)), (100.0, Some(100.0))]);
    // A call that asks for no progress is sent without a token, and gets none.
    assert_eq!(client.call_tool("test_tool_with_progress", json!({})).await.unwrap().all_text(), "Progress complete");
}

#[tokio::test]
async fn the_server_s_changes_arrive_as_a_stream_of_what_was_asked() {
    let server = TestServer::everything().await;
    let client = connect(&server).await;
    let mut tools_only = client.listen(Listen::new().tools()).await.unwrap();
    let mut both = client.listen(Listen::new().tools().prompts()).await.unwrap();
    client.call_tool("test_trigger_prompt_change", json!({})).await.unwrap();
    client.call_tool("test_trigger_tool_change", json!({})).await.unwrap();
    assert_eq!(soon(both.next()).await, Some(Change::Prompts));
    assert_eq!(soon(both.next()).await, Some(Change::Tools));
    // The prompt change went only where it was asked for.
    assert_eq!(soon(tools_only.next()).await, Some(Change::Tools));
    // A stream dropped ends its subscription; the others go on.
    drop(tools_only);
    client.call_tool("test_trigger_tool_change", json!({})).await.unwrap();
    assert_eq!(soon(both.next()).await, Some(Change::Tools));
}

#[tokio::test]
async fn the_tool_list_is_kept_while_fresh_and_forgotten_on_a_change() {
    let server = mcp_mrtr_examples::everything::server()
        .cache_hints(CacheHints { ttl_ms: 3_600_000, scope: CacheScope::Public });
    let server = TestServer::start(server).await;
    let client = connect(&server).await;
    let dynamic = |tools: &[mcp_mrtr::protocol::Tool]| tools.iter().any(|tool| tool.name == "test_dynamic_tool");
    let mut changes = client.listen(Listen::new().tools()).await.unwrap();
    assert!(!dynamic(&client.list_tools().await.unwrap()));
    client.call_tool("test_trigger_tool_change", json!({})).await.unwrap();
    // Fresh for an hour, the list is not asked for again...
    assert!(!dynamic(&client.list_tools().await.unwrap()));
    // ...until the change is read.
    assert_eq!(soon(changes.next()).await, Some(Change::Tools));
    assert!(dynamic(&client.list_tools().await.unwrap()));
    // A list the server marks stale at once is never kept.
    let fresh_server = TestServer::everything().await;
    let uncached = connect(&fresh_server).await;
    assert!(!dynamic(&uncached.list_tools().await.unwrap()));
    uncached.call_tool("test_trigger_tool_change", json!({})).await.unwrap();
    assert!(dynamic(&uncached.list_tools().await.unwrap()));
}

#[tokio::test]
async fn a_task_is_held_by_its_id_and_cancelled() {
    let server = TestServer::everything().await;
    let client = connect(&server).await;
    let Started::Task(task) = client.call_tool("slow_compute", json!({"seconds": 60})).start().await.unwrap() else {
        panic!("slow_compute runs as a task for a client that declares tasks")
    };
    assert_eq!(task.status(), Some("working"));
    task.cancel().await.unwrap();
    let error = soon(task.result()).await.unwrap_err();
    assert!(matches!(error, ClientError::Cancelled { .. }), "{error}");

    // Dropped before its end, a handle cancels its task: nobody could read its result.
    let Started::Task(task) = client.call_tool("slow_compute", json!({"seconds": 60})).start().await.unwrap() else {
        panic!("a task")
    };
    let id = task.id().to_owned();
    drop(task);
    let error = soon(client.task(&id).result()).await.unwrap_err();
    assert!(matches!(error, ClientError::Cancelled { .. }), "{error}");

    // Detached, it runs on, and is followed again by its id.
    let Started::Task(task) = client.call_tool("slow_compute", json!({"seconds": 0.3})).start().await.unwrap() else {
        panic!("a task")
    };
    let id = task.detach();
    let result = soon(client.task(id).result()).await.unwrap();
    assert_eq!(result.all_text(), "slow_compute finished after 0.3s");
}

/// A TCP proxy on loopback in front of `upstream` that passes every byte both ways, except
/// that the first request carrying a `requestState` reaches the server and its response
/// never comes back: the connection is cut instead. Returns its address and how many
/// requests carrying a state went through.
async fn cutting_proxy(upstream: std::net::SocketAddr) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let with_state = Arc::new(AtomicUsize::new(0));
    let seen = with_state.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = tokio::net::TcpStream::connect(upstream).await.unwrap();
            let (mut from_client, mut to_client) = client.into_split();
            let (mut from_server, mut to_server) = server.into_split();
            let cut = Arc::new(AtomicBool::new(false));
            let (cutting, seen) = (cut.clone(), seen.clone());
            tokio::spawn(async move {
                let mut buffer = vec![0; 64 * 1024];
                while let Ok(read @ 1..) = from_client.read(&mut buffer).await {
                    let chunk = &buffer[..read];
                    if chunk.windows(14).any(|window| window == b"\"requestState\"")
                        && seen.fetch_add(1, Ordering::SeqCst) == 0
                    {
                        cutting.store(true, Ordering::SeqCst);
                    }
                    if to_server.write_all(chunk).await.is_err() {
                        return;
                    }
                }
            });
            tokio::spawn(async move {
                let mut buffer = vec![0; 64 * 1024];
                while let Ok(read @ 1..) = from_server.read(&mut buffer).await {
                    if cut.load(Ordering::SeqCst) || to_client.write_all(&buffer[..read]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (address, with_state)
}

#[tokio::test]
async fn a_round_whose_connection_dropped_is_sent_again_and_a_taken_step_refuses_it() {
    let server = TestServer::everything().await;
    let (proxy, with_state) = cutting_proxy(server.addr).await;
    let answers = || {
        Answers::new().forms(|question| {
            let ok = question.schema["properties"].get("ok").is_some();
            async move { Ok(ElicitResult::accept_as(&if ok { json!({"ok": true}) } else { json!({"name": "Ada"}) })?) }
        })
    };
    let client = Client::http(format!("http://{proxy}/mcp")).answers(answers()).connect().await.unwrap();
    // Round 2 takes the once step; its response is lost, and round 2 sent again is refused.
    let error = soon(client.call_tool("test_once_side_effect", json!({"call_id": "cut-1"}))).await.unwrap_err();
    let ClientError::RoundRefused { round, refused, .. } = &error else { panic!("{error}") };
    assert_eq!((*round, refused.code()), (2, ErrorCode::INVALID_PARAMS), "{error}");
    assert_eq!(error.code(), Some(ErrorCode::INVALID_PARAMS));
    assert_eq!(with_state.load(Ordering::SeqCst), 2, "the round was sent twice");

    // A round that takes no once step is simply run again.
    let (proxy, with_state) = cutting_proxy(server.addr).await;
    let client = Client::http(format!("http://{proxy}/mcp")).answers(answers()).connect().await.unwrap();
    let result = soon(client.call_tool("test_input_required_result_elicitation", json!({}))).await.unwrap();
    assert_eq!(result.all_text(), "Hello, Ada!");
    assert_eq!(with_state.load(Ordering::SeqCst), 2, "the round was sent twice");
}
