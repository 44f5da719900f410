//! An upstream's task through a mount (`mcp_mrtr::mount`): `everything` as the upstream, a
//! gateway in front, both over real HTTP on loopback. A caller that declares tasks gets the
//! upstream's task as the gateway's, and its polls, answers and cancellation pass through;
//! the id it gets reaches the task only for it, and cannot be made up.

use mcp_mrtr::client::{Answers, Client, ClientError, Started, TaskHandle};
use mcp_mrtr::mount::Mount;
use mcp_mrtr::protocol::ElicitResult;
use mcp_mrtr::{ErrorCode, Server};
use mcp_mrtr_tests::harness::{task_caps, Rpc, TestServer};
use serde_json::json;

/// The gateway, the upstream's tools under `up_`, its principal named by an `x-user` header.
async fn gateway(upstream: &TestServer) -> TestServer {
    let client = Client::http(upstream.url()).connect().await.unwrap();
    let mounted = Mount::new(client).prefix("up_").load().await.unwrap();
    let server = Server::new("gateway", "1.0.0")
        .principal(|headers| headers.get("x-user")?.to_str().ok().map(str::to_owned))
        .mount(mounted);
    TestServer::start(server).await
}

async fn started(client: &Client, tool: &str, arguments: serde_json::Value) -> TaskHandle {
    match client.call_tool(tool, arguments).start().await.unwrap() {
        Started::Task(task) => task,
        Started::Complete(result) => panic!("{tool} answered at once: {result:?}"),
    }
}

#[tokio::test]
async fn an_upstream_s_task_and_its_question_are_the_gateway_s() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream).await;
    // The upstream's task asks, inside the task, whether to delete the file.
    let answers = Answers::new().forms(|_| async { Ok(ElicitResult::accept_as(&json!({"confirm": true}))?) });
    let client = Client::http(gateway.url()).answers(answers).connect().await.unwrap();
    let discovered = &client.server().capabilities;
    assert!(discovered.extensions.as_ref().is_some_and(|e| e.contains_key("io.modelcontextprotocol/tasks")));
    let task = started(&client, "up_confirm_delete", json!({"filename": "notes.txt"})).await;
    // The gateway's id for it, not the upstream's.
    assert!(task.id().starts_with("m0."), "{}", task.id());
    assert_eq!(task.result().await.unwrap().all_text(), "Deleted notes.txt");
}

#[tokio::test]
async fn cancelling_the_gateway_s_task_cancels_the_upstream_s() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream).await;
    let client = Client::http(gateway.url()).connect().await.unwrap();
    let task = started(&client, "up_slow_compute", json!({"seconds": 60})).await;
    let id = task.id().to_owned();
    task.cancel().await.unwrap();
    match task.result().await {
        Err(ClientError::Cancelled { task_id }) => assert_eq!(task_id, id),
        other => panic!("a cancelled task: {other:?}"),
    }
}

#[tokio::test]
async fn a_caller_without_tasks_gets_the_result_in_its_request() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream).await;
    let client = Client::http(gateway.url()).tasks(false).connect().await.unwrap();
    let result = client.call_tool("up_slow_compute", json!({"seconds": 0, "label": "now"})).await.unwrap();
    assert_eq!(result.all_text(), "now finished after 0s");
    // A tool the upstream runs only as a task needs the extension, as the upstream says.
    let refused = client.call_tool("up_confirm_delete", json!({"filename": "a"})).await.unwrap_err();
    assert_eq!(refused.rpc().map(mcp_mrtr::Error::code), Some(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY));
}

#[tokio::test]
async fn a_mounted_task_s_id_reaches_it_for_its_caller_only_and_cannot_be_made_up() {
    let upstream = TestServer::everything().await;
    let gateway = gateway(&upstream).await;
    let as_user = |rpc: Rpc, user: &str| rpc.caps(task_caps()).header("x-user", Some(user));
    let created = gateway.call(&as_user(Rpc::call_tool("up_slow_compute", json!({"seconds": 60})), "ada")).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let get = |id: &str| Rpc::new("tasks/get").param("taskId", json!(id));
    let polled = gateway.call(&as_user(get(&id), "ada")).await;
    assert_eq!(polled["result"]["taskId"], json!(id), "{polled}");
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    // The upstream's own serverInfo is not passed on as the gateway's.
    assert_eq!(polled["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "gateway", "{polled}");
    // Another caller, an altered MAC, another upstream id under the same MAC: unknown.
    let (door_and_theirs, mac) = id.rsplit_once('.').unwrap();
    let flipped = format!("{door_and_theirs}.{}", mac.chars().rev().collect::<String>());
    let (door, _) = door_and_theirs.split_once('.').unwrap();
    let other_task = format!("{door}.{}.{mac}", "dGFzay0x");
    for (who, id) in [("grace", id.as_str()), ("ada", &flipped), ("ada", &other_task), ("ada", "m9.eA.eA")] {
        let refused = gateway.call(&as_user(get(id), who)).await;
        assert_eq!(refused["error"]["code"], -32602, "{who} {id}: {refused}");
    }
    // Cancelled by its caller, through the gateway.
    let cancelled = gateway.call(&as_user(Rpc::new("tasks/cancel").param("taskId", json!(id)), "ada")).await;
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
    // A caller that did not declare tasks is refused the task methods first.
    let undeclared = gateway.send(&get(&id).header("x-user", Some("ada"))).await.reply();
    assert_eq!(undeclared["error"]["code"], -32021, "{undeclared}");
}
