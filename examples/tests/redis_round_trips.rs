//! What a task flow costs in Redis round trips, as a real `redis-server` sees them:
//! each `tasks/get` reads the record once, and every write is one script. No request and
//! no run reads back a record it already holds, an answer starts from the record its
//! client's poll just read, and what a handler does at once (ask, finish) goes into the
//! write that starts it (the create, the answer). Counted with `MONITOR`, which lists every command a client sent (and
//! the commands a script ran inside, marked `lua`, which are no round trip).

use crate::instance;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use instance::Redis;
use mcp_mrtr::prelude::*;
use mcp_mrtr::testing::{answer, TestClient};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    yes: bool,
}

/// Asks once, inside the task.
#[tool(task = "required")]
async fn approve(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let ok: Confirm = ask!(elicit "Proceed?")?;
    Ok(format!("approved: {}", ok.yes))
}

/// Runs one task flow (create, poll until it asks, answer, poll until it completes) and
/// returns its id and how many `tasks/*` requests it made.
async fn flow(client: &TestClient) -> (String, usize) {
    let created = client.call_tool("approve", json!({})).start().await;
    let id = created.task_id().expect("a task").to_owned();
    let task = client.task(&id);
    let mut requests = 0;
    for status in ["input_required", "completed"] {
        for poll in 0.. {
            assert!(poll < 500, "the task did not reach {status}");
            requests += 1;
            let got = task.get().await.expect("tasks/get");
            if got["status"] == status {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if status == "input_required" {
            requests += 1;
            task.update([("ok", answer::accept(json!({ "yes": true })))]).await.expect("tasks/update");
        }
    }
    (id, requests)
}

/// A `MONITOR` connection: the commands Redis runs, one line each.
struct Monitor {
    lines: BufReader<TcpStream>,
}

impl Monitor {
    fn start(port: u16) -> Self {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to redis");
        stream.set_read_timeout(Some(instance::TIMEOUT)).unwrap();
        stream.write_all(b"MONITOR\r\n").unwrap();
        let mut lines = BufReader::new(stream);
        let mut ok = String::new();
        lines.read_line(&mut ok).unwrap();
        assert_eq!(ok.trim_end(), "+OK");
        Self { lines }
    }

    /// The commands clients sent that name `key`, up to the `ECHO marker` sent after them.
    fn sent_naming(&mut self, key: &str, marker: &str) -> Vec<String> {
        let mut sent = Vec::new();
        for _ in 0..100_000 {
            let mut line = String::new();
            assert!(self.lines.read_line(&mut line).unwrap() > 0, "MONITOR ended");
            if line.contains(marker) {
                return sent;
            }
            let from_a_script = line.contains(" lua]");
            if line.contains(key) && !from_a_script {
                let command = line.split('"').nth(1).unwrap_or_default().to_ascii_uppercase();
                sent.push(command);
            }
        }
        panic!("no end marker in MONITOR's output");
    }
}

#[tokio::test]
async fn a_task_flow_reads_once_per_poll_and_writes_once_per_change() {
    let Some(redis) = Redis::start() else { return };
    let store = mcp_mrtr::redis::Redis::connect(&redis.url()).await.expect("connect to redis");
    let client = TestClient::new(
        Server::new("trips", "0").tool(approve).tasks(mcp_mrtr::tasks::TaskConfig::default().store(store.task_store())),
    );
    // The first flow loads the scripts into Redis (a `SCRIPT LOAD` and a retry each).
    flow(&client).await;

    let mut monitor = Monitor::start(redis.port());
    let (id, requests) = flow(&client).await;
    let mut marker = TcpStream::connect(("127.0.0.1", redis.port())).expect("connect to redis");
    marker.write_all(b"ECHO end-of-flow\r\n").unwrap();
    let sent =
        tokio::task::spawn_blocking(move || monitor.sent_naming(&format!("task:{id}"), "end-of-flow")).await.unwrap();

    let count = |command: &str| sent.iter().filter(|sent| *sent == command).count();
    assert_eq!(sent.len(), count("EVALSHA") + count("HGET"), "only scripts and reads: {sent:?}");
    // The create, which holds the question the handler asked at once; the answer, which
    // holds the completion of the replay it started, done at once too.
    assert_eq!(count("EVALSHA"), 2, "{sent:?}");
    // One read per tasks/get, none by a write, and none by the tasks/update: it starts
    // from the record the poll before it read (the write checks it is current).
    assert_eq!(count("HGET"), requests - 1, "{sent:?}");
}
