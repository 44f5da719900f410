//! `Server::on_task_end`: the application hears of every task that ends, once, with the
//! tool and the arguments it was called with, however it ended: cancelled while running
//! or while waiting for an answer, failed, expired, or completed. It is the cleanup a
//! handler cannot do itself (a cancel drops it where it stands).

use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TestClient};
use mcp_mrtr::{tasks::TaskEnd, tasks::TaskStatus};
use serde_json::json;
use tokio::sync::mpsc;

#[derive(Deserialize, JsonSchema)]
struct SignOff {
    approved: bool,
}

/// What the deploys hold, by task: the state the end hook cleans up.
#[derive(Default)]
struct Holds(std::sync::Mutex<Vec<String>>);

/// Rolls `service` out as a task: holds it, works for a while, then asks for a sign-off.
#[tool(task = "required")]
async fn deploy(ctx: &Ctx, State(holds): State<Holds>, service: String, work_ms: u64) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let task = ctx.task_id().expect("running as a task");
    once!(holds.0.lock().unwrap().push(task));
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

/// A server whose end hook releases what the task held and sends the ending down a
/// channel, with the default lease (the expiry notice must not depend on it).
fn server(ttl: Option<Duration>) -> (Server, mpsc::UnboundedReceiver<TaskEnd>) {
    let (ends, ended) = mpsc::unbounded_channel();
    let hook = move |end: TaskEnd| {
        let ends = ends.clone();
        async move {
            let holds = end.state::<Holds>().expect("the hook reaches the server's state");
            holds.0.lock().unwrap().retain(|task| task != end.id());
            let _ = ends.send(end);
        }
    };
    let server = Server::new("deploys", "1")
        .tool(deploy)
        .with_state(Holds::default())
        .tasks(mcp_mrtr::tasks::TaskConfig::default().ttl(ttl).on_end(hook));
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
async fn a_failure_a_decline_and_a_completion_are_told_too() {
    let (server, mut ended) = server(None);
    let client = TestClient::new(server);
    let refused = answer::accept(json!({ "approved": false }));
    for (answer, kind) in
        [(refused, "failed"), (answer::decline(), "declined"), (answer::accept(json!({ "approved": true })), "done")]
    {
        let id = start(&client, 0).await;
        let task = client.task(&id);
        task.wait_for("input_required", 500).await;
        task.update([("sign_off", answer)]).await.unwrap();
        let end = next_end(&mut ended).await;
        assert_eq!(end.id(), id);
        match kind {
            "failed" => {
                assert_eq!(end.status(), TaskStatus::Failed);
                assert!(end.error().unwrap().message.contains("not signed off"), "{:?}", end.error());
                assert!(!end.expired() && !end.succeeded());
            }
            // `?` on a declined form is a tool error: completed, yet not a success.
            "declined" => {
                assert_eq!(end.status(), TaskStatus::Completed);
                assert!(!end.succeeded() && end.is_tool_error(), "{:?}", end.result());
            }
            _ => assert!(end.succeeded(), "{:?}", end.result()),
        }
        assert!(end.state::<Holds>().unwrap().0.lock().unwrap().is_empty(), "released by the hook");
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
    let holds = ends[0].state::<Holds>().unwrap();
    assert!(holds.0.lock().unwrap().is_empty(), "the hook released what both tasks held");
    let record = client.task(&waiting).get().await.unwrap();
    assert_eq!(record["status"], "failed");
    assert_eq!(record["error"]["data"]["expired"], true, "{record}");
}
