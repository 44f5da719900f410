//! Exactly-once steps in tasks (audit 2026-12-01, B3): a run that stalls past its lease
//! is taken over, and when it wakes it must not take its next `once!` step: the run
//! claims each step in the task's record, fenced on a live lease, before the step runs.
//! Over HTTP on 127.0.0.1, deterministic: the first run blocks its worker thread (as a
//! synchronous call or CPU-bound work would) for five leases.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr_tests::harness::{task_caps, Rpc, TestServer};
use serde_json::{json, Value};

const LEASE: Duration = Duration::from_millis(300);

static PREPARED: AtomicUsize = AtomicUsize::new(0);
static CHARGES: AtomicUsize = AtomicUsize::new(0);
static STALLED: AtomicBool = AtomicBool::new(false);

/// Prepares once, stalls on its first run only, then charges once.
#[tool(task = "required")]
async fn charge_after_a_stall(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    once!(PREPARED.fetch_add(1, Ordering::SeqCst));
    if !STALLED.swap(true, Ordering::SeqCst) {
        // Blocks this worker thread: the run cannot renew its lease, and another run
        // (on the other worker) takes the task over and finishes it meanwhile.
        std::thread::sleep(LEASE * 5);
    }
    let charge = once!(CHARGES.fetch_add(1, Ordering::SeqCst) + 1);
    Ok(format!("charge #{charge}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_stalled_past_its_lease_does_not_take_its_next_step() {
    let server = Server::new("steps", "0")
        .tools(tools![charge_after_a_stall])
        .tasks(mcp_mrtr::tasks::TaskConfig::default().lease(LEASE));
    let server = TestServer::start(server).await;
    let created = server.call(&Rpc::call_tool("charge_after_a_stall", json!({})).caps(task_caps())).await;
    let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned();
    let get = Rpc::new("tasks/get").param("taskId", json!(id)).caps(task_caps());
    let mut last = Value::Null;
    for _ in 0..250 {
        last = server.call(&get).await["result"].clone();
        if last["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["result"]["content"][0]["text"], "charge #1", "{last}");
    // Let the stalled run wake and try its step; it must find its lease gone first.
    tokio::time::sleep(LEASE * 5).await;
    assert_eq!(CHARGES.load(Ordering::SeqCst), 1, "the stalled run charged again");
    assert_eq!(PREPARED.load(Ordering::SeqCst), 1, "the run that took over prepared again");
}
