//! The client's live side (`mcp_mrtr::client`) against `everything` over real HTTP on
//! loopback: a call's progress as a stream beside its result, the server's changes as a
//! stream (and the tool list cache a change empties), and a task held by its id,
//! cancelled, cancelled by being dropped, or left to run and followed again later.

use std::future::IntoFuture;
use std::time::Duration;

use mcp_mrtr::client::{Change, Client, ClientError, Listen, Started};
use mcp_mrtr::protocol::{CacheHints, CacheScope};
use mcp_mrtr_tests::harness::TestServer;
use serde_json::json;

async fn connect(server: &TestServer) -> Client {
    Client::http(format!("http://{}/mcp", server.addr)).connect().await.expect("the client connects")
}

/// Waits at most 10 s for `future`.
async fn soon<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), future).await.expect("within 10 s")
}

#[tokio::test]
async fn progress_arrives_as_a_stream_beside_the_result() {
    let server = TestServer::everything().await;
    let client = connect(&server).await;
    let (call, mut progress) = client.call_tool("test_tool_with_progress", json!({})).with_progress();
    let updates = async {
        let mut seen = Vec::new();
        while let Some(update) = progress.next().await {
            seen.push((update.progress, update.total));
        }
        seen
    };
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
