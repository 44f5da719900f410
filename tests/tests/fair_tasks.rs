//! Task bounds (`TaskLimits`) over HTTP on 127.0.0.1, each client on a
//! loopback address of its own: a flood of tasks from one client is refused at its
//! share while another client's task is created and completes promptly; the total is
//! refused, never evicted; creation has a rate; arguments are kept as the tool decodes
//! them, within a cap; runs wait for a slot and stop at their time limit; finished tasks
//! are kept for a shorter time. Small limits, bounded loops and waits.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_mrtr::prelude::*;
use mcp_mrtr::{handler::TaskSupport, protocol::Tool, tasks::TaskLimits, ToolRoute};
use mcp_mrtr_tests::client;
use mcp_mrtr_tests::harness::{task_caps, Rpc, TestServer};
use serde_json::{json, Map, Value};

const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const HONEST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// Holds its task for a minute: what a flood is made of.
#[tool(task = "required")]
async fn hold(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    tokio::time::sleep(Duration::from_mins(1)).await;
    Ok("held".into())
}

/// A short job, reporting progress.
#[tool(task = "required")]
async fn quick(
    ctx: &Ctx,
    /// Echoed back.
    label: String,
) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    ctx.progress(1.0).of(1.0).message("almost").await;
    Ok(format!("quick {label}"))
}

fn server(limits: TaskLimits) -> Server {
    Server::new("fair-tasks", "0")
        .tools(tools![hold, quick])
        .tasks(mcp_mrtr::tasks::TaskConfig::default().limits(limits))
}

fn call(name: &str, arguments: Value) -> Rpc {
    Rpc::call_tool(name, arguments).caps(task_caps())
}

/// Sends `rpc` from `source` and returns the JSON-RPC reply (HTTP 200 expected).
async fn send(server: &TestServer, source: IpAddr, rpc: &Rpc) -> Value {
    let headers = rpc.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let response = client::send_from(source, server.addr, "POST", &headers, &rpc.body()).await;
    assert_eq!(response.status, 200, "{}", response.body);
    response.reply()
}

/// Creates a task from `source`: its id, or the error.
async fn create(server: &TestServer, source: IpAddr, rpc: &Rpc) -> Result<String, Value> {
    let reply = send(server, source, rpc).await;
    match reply["result"]["taskId"].as_str() {
        Some(id) => Ok(id.to_owned()),
        None => Err(reply["error"].clone()),
    }
}

fn task_rpc(method: &str, id: &str) -> Rpc {
    Rpc::new(method).param("taskId", json!(id)).caps(task_caps())
}

/// Polls `tasks/get` every 10 ms, at most `tries` times, until the task is `status`.
async fn wait_for(server: &TestServer, source: IpAddr, id: &str, status: &str, tries: u32) -> Value {
    let mut last = Value::Null;
    for _ in 0..tries {
        last = send(server, source, &task_rpc("tasks/get", id)).await;
        if last["result"]["status"] == status {
            return last["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} did not become {status}: {last}");
}

#[tokio::test]
async fn a_task_flood_from_one_client_leaves_room_for_another() {
    let limits =
        TaskLimits::default().max_live_tasks(12).max_live_tasks_per_client(4).creation_rate(50.0, 8).max_runs(6);
    let server = Arc::new(TestServer::start(server(limits)).await);

    // The attacker starts tasks until it is refused: at its share of 4.
    let mut held = Vec::new();
    let refusal = loop {
        assert!(held.len() <= 4, "more tasks than the share were created");
        match create(&server, ATTACKER, &call("hold", json!({}))).await {
            Ok(id) => held.push(id),
            Err(error) => break error,
        }
    };
    assert_eq!(held.len(), 4);
    assert_eq!(refusal["data"]["limit"], "liveTasksPerClient", "{refusal}");
    assert!(refusal["message"].as_str().unwrap().contains("cancel one with tasks/cancel"), "{refusal}");

    // It keeps at it (bounded: 2 s or 400 attempts) while the honest client works.
    let stop = Arc::new(AtomicBool::new(false));
    let attack = tokio::spawn({
        let (server, stop) = (server.clone(), stop.clone());
        async move {
            let mut created = 0;
            for _ in 0..400 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                if create(&server, ATTACKER, &call("hold", json!({}))).await.is_ok() {
                    created += 1;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            created
        }
    });

    let started = Instant::now();
    let id = create(&server, HONEST, &call("quick", json!({ "label": "honest" }))).await.expect("the honest task");
    let done = wait_for(&server, HONEST, &id, "completed", 200).await;
    assert_eq!(done["result"]["content"][0]["text"], "quick honest");
    assert_eq!(done["statusMessage"], "almost", "the last status message is in the final record");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "the honest task took {took:?}");

    stop.store(true, Ordering::SeqCst);
    assert_eq!(attack.await.unwrap(), 0, "every further attempt of the attacker was refused");

    // Cancelling one of its tasks frees a place in its share (once its rate has refilled).
    send(&server, ATTACKER, &task_rpc("tasks/cancel", &held[0])).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    create(&server, ATTACKER, &call("hold", json!({}))).await.expect("a cancelled task no longer counts");
}

#[tokio::test]
async fn a_full_server_refuses_new_tasks_and_ends_none() {
    let limits = TaskLimits::default().max_live_tasks(4).max_live_tasks_per_client(2);
    let server = TestServer::start(server(limits)).await;
    let mut held = Vec::new();
    for last in [2, 4] {
        let source = IpAddr::V4(Ipv4Addr::new(127, 0, 0, last));
        for _ in 0..2 {
            held.push(create(&server, source, &call("hold", json!({}))).await.expect("within the total"));
        }
    }
    let refused = create(&server, HONEST, &call("hold", json!({}))).await.unwrap_err();
    assert_eq!(refused["data"]["limit"], "liveTasks", "{refused}");
    assert_eq!(refused["data"]["max"], 4);
    for id in &held {
        let task = send(&server, ATTACKER, &task_rpc("tasks/get", id)).await;
        assert_eq!(task["result"]["status"], "working", "nobody was evicted: {task}");
    }
}

#[tokio::test]
async fn task_creation_has_a_rate_per_client() {
    let limits = TaskLimits::default().creation_rate(0.5, 2);
    let server = TestServer::start(server(limits)).await;
    for n in 0..2 {
        create(&server, ATTACKER, &call("quick", json!({ "label": n.to_string() }))).await.expect("within the burst");
    }
    let refused = create(&server, ATTACKER, &call("quick", json!({ "label": "3" }))).await.unwrap_err();
    assert_eq!(refused["data"]["limit"], "taskCreationRate", "{refused}");
    let retry = refused["data"]["retryAfterMs"].as_u64().unwrap();
    assert!(retry > 0 && retry <= 2_000, "{refused}");
    create(&server, HONEST, &call("quick", json!({ "label": "other" })))
        .await
        .expect("another client has its own rate");
}

#[tokio::test]
async fn unused_arguments_are_not_kept_and_large_ones_are_refused() {
    let server = TestServer::start(server(TaskLimits::default().max_arguments(1024))).await;
    // 200 kB the tool does not read: dropped, so the task fits.
    let junk = "x".repeat(200_000);
    let id = create(&server, HONEST, &call("quick", json!({ "label": "lean", "junk": junk })))
        .await
        .expect("unused fields do not count");
    let done = wait_for(&server, HONEST, &id, "completed", 200).await;
    assert_eq!(done["result"]["content"][0]["text"], "quick lean");

    let refused = create(&server, HONEST, &call("quick", json!({ "label": "y".repeat(2_000) }))).await.unwrap_err();
    assert_eq!(refused["code"], -32602, "{refused}");
    assert_eq!(refused["data"]["limit"], "taskArguments");
    assert_eq!(refused["data"]["max"], 1024);
    assert!(refused["message"].as_str().unwrap().contains("pass large inputs by reference"), "{refused}");
}

/// A task tool built by hand that sleeps `ms` and counts its runs.
fn sleeper(name: &str, ms: u64, runs: Arc<AtomicUsize>) -> ToolRoute {
    Tool::new(name)
        .handler(move |_ctx, _: Map<String, Value>| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<_, ToolError>(format!("slept {ms} ms"))
            }
        })
        .task(TaskSupport::Required)
}

#[tokio::test]
async fn a_run_past_its_time_limit_fails_the_task_and_a_tool_can_have_its_own() {
    let runs = Arc::new(AtomicUsize::new(0));
    let limits = TaskLimits::default().run_timeout(Some(Duration::from_millis(200)));
    let server = Server::new("timeouts", "0")
        .tool(sleeper("stuck", 60_000, runs.clone()))
        .tool(sleeper("patient", 400, runs.clone()).task_timeout(Duration::from_secs(30)))
        .tasks(mcp_mrtr::tasks::TaskConfig::default().limits(limits));
    let server = TestServer::start(server).await;

    let stuck = create(&server, HONEST, &call("stuck", json!({}))).await.unwrap();
    let patient = create(&server, HONEST, &call("patient", json!({}))).await.unwrap();
    let failed = wait_for(&server, HONEST, &stuck, "failed", 200).await;
    assert_eq!(failed["error"]["code"], -32603);
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("the task timed out after 200ms"), "{message}");
    let done = wait_for(&server, HONEST, &patient, "completed", 200).await;
    assert_eq!(done["result"]["content"][0]["text"], "slept 400 ms", "the tool's own limit applies");
}

#[tokio::test]
async fn runs_past_the_limit_wait_their_turn() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Server::new("queue", "0")
        .tool(sleeper("slow", 300, runs.clone()))
        .tool(sleeper("fast", 1, runs.clone()))
        .tasks(mcp_mrtr::tasks::TaskConfig::default().limits(TaskLimits::default().max_runs(1)));
    let server = TestServer::start(server).await;
    let slow = create(&server, HONEST, &call("slow", json!({}))).await.unwrap();
    let fast = create(&server, HONEST, &call("fast", json!({}))).await.expect("created, not refused");
    // The fast task waits for the slow one's slot: it is still working while the slow one runs.
    assert_eq!(send(&server, HONEST, &task_rpc("tasks/get", &fast)).await["result"]["status"], "working");
    wait_for(&server, HONEST, &slow, "completed", 200).await;
    wait_for(&server, HONEST, &fast, "completed", 200).await;
}

#[tokio::test]
async fn finished_tasks_are_kept_for_a_shorter_time() {
    let server = TestServer::start(server(TaskLimits::default().keep_finished(Duration::from_millis(300)))).await;
    let id = create(&server, HONEST, &call("quick", json!({ "label": "brief" }))).await.unwrap();
    let done = wait_for(&server, HONEST, &id, "completed", 200).await;
    let ttl = done["ttlMs"].as_u64().unwrap();
    assert!(ttl < 3_600_000, "ttlMs says the shorter retention: {ttl}");
    for _ in 0..100 {
        if send(&server, HONEST, &task_rpc("tasks/get", &id)).await["error"]["code"] == -32602 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the finished task {id} was kept past 300 ms");
}
