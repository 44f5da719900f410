//! `Server::on_task_end`: the application hears of every task that ends, once, with the
//! tool and the arguments it was called with, however it ended: cancelled while running
//! or while waiting for an answer, failed, expired, or completed. It is the cleanup a
//! handler cannot do itself (a cancel drops it where it stands).

use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TestClient};
use mcp_mrtr::{TaskEnd, TaskStatus};
use serde_json::json;
use tokio::sync::mpsc;

#[derive(Deserialize, JsonSchema)]
struct SignOff {
    approved: bool,
}

/// Rolls `service` out as a task: works for a while, then asks for a sign-off.
#[tool(task = "required")]
async fn deploy(ctx: &Ctx, service: String, work_ms: u64) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    tokio::time::sleep(Duration::from_millis(work_ms)).await;
    let sign_off: SignOff = ask!(elicit format!("Sign off the rollout of {service}?"))?;
    if sign_off.approved {
        Ok(format!("{service} rolled out"))
    } else {
        Err(ToolError::protocol(mcp_mrtr::Error::internal("the rollout was not signed off")))
    }
}

/// What `deploy` is called with, as the end hook reads it back.
#[derive(Deserialize)]
struct DeployArgs {
    service: String,
}

/// A server whose end hook sends each ending down a channel.
fn server(ttl: Option<Duration>) -> (Server, mpsc::UnboundedReceiver<TaskEnd>) {
    let (ends, ended) = mpsc::unbounded_channel();
    let server =
        Server::new("deploys", "1").tool(deploy).task_ttl(ttl).task_lease(Duration::from_millis(300)).on_task_end(
            move |end| {
                let ends = ends.clone();
                async move {
                    let _ = ends.send(end);
                }
            },
        );
    (server, ended)
}

async fn next_end(ended: &mut mpsc::UnboundedReceiver<TaskEnd>) -> TaskEnd {
    tokio::time::timeout(Duration::from_secs(10), ended.recv()).await.expect("the hook ran in time").unwrap()
}

async fn start(client: &TestClient, work_ms: u64) -> String {
    let created = client.call_tool("deploy", json!({ "service": "billing", "work_ms": work_ms })).start().await;
    created.task_id().unwrap_or_else(|| panic!("a task: {created:?}")).to_owned()
}

#[tokio::test]
async fn a_cancel_while_running_or_waiting_is_told_with_the_arguments() {
    let (server, mut ended) = server(None);
    let client = TestClient::new(server);

    let running = start(&client, 60_000).await;
    client.task(&running).cancel().await.unwrap();
    let end = next_end(&mut ended).await;
    assert_eq!((end.id(), end.tool(), end.status()), (running.as_str(), "deploy", TaskStatus::Cancelled));
    assert_eq!(end.arguments()["service"], "billing", "the arguments survive the final record forgetting them");
    assert!(!end.expired() && end.error().is_none());

    let waiting = start(&client, 0).await;
    client.task(&waiting).wait_for("input_required", 500).await;
    client.task(&waiting).cancel().await.unwrap();
    let end = next_end(&mut ended).await;
    assert_eq!((end.id(), end.status()), (waiting.as_str(), TaskStatus::Cancelled));
    assert_eq!(end.arguments_as::<DeployArgs>().unwrap().service, "billing");

    // A second cancel of an ended task is acknowledged and tells nobody again.
    client.task(&waiting).cancel().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(ended.try_recv().is_err(), "each task ends once");
}

#[tokio::test]
async fn a_failure_and_a_completion_are_told_too() {
    let (server, mut ended) = server(None);
    let client = TestClient::new(server);
    for approved in [false, true] {
        let id = start(&client, 0).await;
        let task = client.task(&id);
        task.wait_for("input_required", 500).await;
        task.update([("sign_off", answer::accept(json!({ "approved": approved })))]).await.unwrap();
        let end = next_end(&mut ended).await;
        assert_eq!(end.id(), id);
        if approved {
            assert_eq!(end.status(), TaskStatus::Completed);
        } else {
            assert_eq!(end.status(), TaskStatus::Failed);
            assert!(end.error().unwrap().message.contains("not signed off"), "{:?}", end.error());
            assert!(!end.expired());
        }
    }
}

#[tokio::test]
async fn a_task_that_outlives_its_ttl_expires_while_the_record_still_says_so() {
    let (server, mut ended) = server(Some(Duration::from_secs(2)));
    let client = TestClient::new(server);
    let waiting = start(&client, 0).await;
    client.task(&waiting).wait_for("input_required", 500).await;
    let running = start(&client, 60_000).await;

    // Nobody polls: the instance's own look ends both, a little before the records go.
    let mut ends = [next_end(&mut ended).await, next_end(&mut ended).await];
    ends.sort_by_key(|end| end.id() == running);
    for (end, id) in ends.iter().zip([&waiting, &running]) {
        assert_eq!((end.id(), end.status(), end.expired()), (id.as_str(), TaskStatus::Failed, true));
    }
    let record = client.task(&waiting).get().await.unwrap();
    assert_eq!(record["status"], "failed");
    assert_eq!(record["error"]["data"]["expired"], true, "{record}");
}
