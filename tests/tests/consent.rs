//! Consent that a person gave (issue 20): a client may answer a call's first questions
//! before they are asked, but such an answer must not reach further. Inside a task only
//! an answer to the task's open question counts, and an `ask!(fresh, …)` counts only an
//! answer to the question as the server asked it. Over HTTP on 127.0.0.1.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::answer;
use mcp_mrtr_tests::harness::{task_caps, Rpc, TestServer};
use serde_json::{json, Value};

#[derive(Deserialize, JsonSchema)]
struct Target {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

static DEPLOYS: AtomicUsize = AtomicUsize::new(0);

/// Asks where to deploy, goes on as a task, works, then asks for a sign-off under a key a
/// client can guess.
#[tool(task = "required")]
async fn deploy(ctx: &Ctx, id: String) -> Result<String, ToolError> {
    let target: Target = ask!(elicit "Where to?")?;
    ctx.continue_as_task().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let signoff: Confirm = ask!(key = format!("signoff-{id}"), elicit format!("Deploy {id} to {}?", target.name))?;
    if !signoff.ok {
        return Ok("not deployed".into());
    }
    let n = once!(DEPLOYS.fetch_add(1, Ordering::SeqCst) + 1);
    Ok(format!("deploy #{n} of {id} to {}", target.name))
}

/// Charges once the payment is confirmed, with a fresh answer.
#[tool]
async fn pay(amount: u32) -> Result<String, ToolError> {
    let confirm: Confirm = ask!(fresh, elicit format!("Pay {amount}?"))?;
    Ok(format!("paid: {}", confirm.ok))
}

/// The same without `fresh`: a form the client may fill in before it is asked.
#[tool]
async fn note(amount: u32) -> Result<String, ToolError> {
    let confirm: Confirm = ask!(elicit format!("Note {amount}?"))?;
    Ok(format!("noted: {}", confirm.ok))
}

fn yes() -> Value {
    answer::accept(json!({ "ok": true }))
}

#[tokio::test]
async fn an_answer_sent_before_anything_was_asked_does_not_reach_a_question_inside_a_task() {
    let server = TestServer::start(Server::new("consent", "0").tools(tools![deploy, pay, note])).await;
    let first = Rpc::call_tool("deploy", json!({ "id": "dep-1" })).caps(task_caps()).param(
        "inputResponses",
        json!({ "target": answer::accept(json!({ "name": "prod" })), "signoff-dep-1": yes() }),
    );
    let created = server.call(&first).await;
    let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned();
    let get = Rpc::new("tasks/get").param("taskId", json!(id)).caps(task_caps());
    let mut task = Value::Null;
    for _ in 0..250 {
        task = server.call(&get).await["result"].clone();
        if task["status"] != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(task["status"], "input_required", "the sign-off was taken from the first request: {task}");
    assert_eq!(task["inputRequests"]["signoff-dep-1"]["params"]["message"], "Deploy dep-1 to prod?", "{task}");
    assert_eq!(DEPLOYS.load(Ordering::SeqCst), 0);
    // Answered to the open question, it counts.
    let update =
        Rpc::new("tasks/update").param("taskId", json!(id)).param("inputResponses", json!({ "signoff-dep-1": yes() }));
    server.call(&update.caps(task_caps())).await;
    for _ in 0..250 {
        task = server.call(&get).await["result"].clone();
        if task["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(task["result"]["content"][0]["text"], "deploy #1 of dep-1 to prod", "{task}");
}

#[tokio::test]
async fn a_fresh_ask_counts_only_an_answer_to_the_question_as_asked() {
    let server = TestServer::start(Server::new("consent", "0").tools(tools![deploy, pay, note])).await;
    // Answered before it was asked: a form may be, a payment may not.
    let early =
        |tool: &str| Rpc::call_tool(tool, json!({ "amount": 5 })).param("inputResponses", json!({ "confirm": yes() }));
    let noted = server.call(&early("note")).await;
    assert_eq!(noted["result"]["content"][0]["text"], "noted: true", "{noted}");
    let asked = server.call(&early("pay")).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "a payment was confirmed unasked: {asked}");
    assert_eq!(asked["result"]["inputRequests"]["confirm"]["params"]["message"], "Pay 5?");
    // Answered to the question as asked (the state says what was asked), it counts.
    let paid = early("pay").param("requestState", asked["result"]["requestState"].clone());
    let paid = server.call(&paid).await;
    assert_eq!(paid["result"]["content"][0]["text"], "paid: true", "{paid}");
}
