//! The flows whose cost CI guards (`.ci/costs.sh`): each runs a given number of times in
//! one process, on a current-thread runtime, so that callgrind's count of instructions,
//! taken at two numbers of runs, gives what one flow costs, start-up aside. Instructions,
//! not seconds: the same binary and inputs count the same whatever else the machine does.
//!
//! ```text
//! costs FLOW RUNS      # RUNS runs of FLOW (after one, not counted apart, that warms it up)
//! costs --list         # the flows, one a line
//! ```
//!
//! `http-*` flows go over one keep-alive HTTP/1.1 connection on 127.0.0.1 to the
//! `everything` fixture served in the same process (the client writes and reads raw bytes:
//! next to nothing); `local-*` flows go through the in-process client
//! (`mcp_mrtr::testing::TestClient`).

use std::fmt::Write as _;
use std::net::SocketAddr;

use anyhow::{bail, Context as _};
use mcp_mrtr::prelude::*;
use mcp_mrtr::tasks::{TaskConfig, TaskLimits};
use mcp_mrtr::testing::{answer, TestClient};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const FLOWS: [&str; 10] = [
    "http-list",
    "http-call",
    "http-elicitation",
    "http-multi-round",
    "http-once",
    "http-task",
    "local-call",
    "local-elicitation",
    "local-once",
    "local-task",
];

/// Continues as a task and ends at once: a task created, run and finished in the one
/// write that stores it, read back by one poll.
#[tool(task = "required")]
async fn costs_quick_task(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    Ok("done".into())
}

/// The fixture, taking tasks as fast as one client makes them (the default rate, a burst
/// of 16 then one a second, is for a server shared by strangers).
fn server() -> Server {
    let limits = TaskLimits::default().creation_rate(1e6, 1_000_000).max_live_tasks_per_client(1_000_000);
    mcp_mrtr_examples::everything::server().tool(costs_quick_task).tasks(TaskConfig::default().limits(limits))
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (flow, runs) = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["--list"] => {
            println!("{}", FLOWS.join("\n"));
            return Ok(());
        }
        [flow, runs] if FLOWS.contains(flow) => ((*flow).to_owned(), runs.parse::<u32>().context("RUNS")?),
        _ => bail!("usage: costs FLOW RUNS | costs --list (flows: {})", FLOWS.join(", ")),
    };
    // One thread: nothing runs beside the flows, and the count is the same run after run.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        if let Some(flow) = flow.strip_prefix("http-") {
            let mut http = Http::start().await?;
            for n in 0..=runs {
                http.flow(flow, n).await?;
            }
        } else {
            let client = TestClient::new(server());
            let flow = flow.trim_start_matches("local-");
            for n in 0..=runs {
                local(&client, flow, n).await?;
            }
        }
        Ok(())
    })
}

/// One flow through the in-process client.
async fn local(client: &TestClient, flow: &str, n: u32) -> anyhow::Result<()> {
    let yes = || answer::accept(json!({ "ok": true }));
    let done = match flow {
        "call" => client.call_tool("test_simple_text", json!({})).start().await,
        "elicitation" => {
            let mut call = client.call_tool("test_input_required_result_elicitation", json!({}));
            call.start().await;
            call.answer([("user_name", answer::accept(json!({ "name": "Ada" })))]).await
        }
        "once" => {
            let mut call = client.call_tool("test_once_side_effect", json!({ "call_id": format!("local-{n}") }));
            call.start().await;
            call.answer([("start", yes())]).await;
            call.answer([("finish", yes())]).await
        }
        "task" => {
            let created = client.call_tool("costs_quick_task", json!({})).start().await;
            let id = created.task_id().context("a task")?.to_owned();
            // The run writes how it ended in a task of its own: on this one thread, it has
            // once the client yields.
            tokio::task::yield_now().await;
            let task = client.task(&id).get().await.map_err(|e| anyhow::anyhow!("{e:?}"))?;
            anyhow::ensure!(task["status"] == "completed", "the task ended {task}");
            return Ok(());
        }
        _ => bail!("no local flow {flow}"),
    };
    anyhow::ensure!(done.complete().is_some(), "the {flow} flow did not complete");
    Ok(())
}

/// The fixture served over HTTP in this process, and one connection to it.
struct Http {
    socket: TcpStream,
    addr: SocketAddr,
    id: u64,
}

impl Http {
    async fn start() -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let served = mcp_mrtr::testing::with_own_keys(server());
        tokio::spawn(async move { served.serve(mcp_mrtr::http::Http::listener(listener)).await });
        Ok(Self { socket: TcpStream::connect(addr).await?, addr, id: 0 })
    }

    async fn flow(&mut self, flow: &str, n: u32) -> anyhow::Result<()> {
        let caps = json!({ "elicitation": { "form": {} } });
        let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
        let result = match flow {
            // Read as bytes: parsing the whole list would cost the client more than the
            // server spends on it.
            "list" => {
                let listed = self.send("tools/list", json!({}), &caps).await?;
                let complete = br#""resultType":"complete""#;
                let complete = listed.windows(complete.len()).any(|w| w == complete);
                anyhow::ensure!(complete, "tools/list: {}", String::from_utf8_lossy(&listed));
                return Ok(());
            }
            "call" => self.tool("test_simple_text", json!({}), None, &caps).await?,
            "elicitation" => {
                let asked = self.tool("test_input_required_result_elicitation", json!({}), None, &caps).await?;
                let answers = json!({ "user_name": answer::accept(json!({ "name": "Ada" })) });
                self.tool("test_input_required_result_elicitation", json!({}), Some((answers, &asked)), &caps).await?
            }
            "multi-round" => {
                let tool = "test_input_required_result_multi_round";
                let asked = self.tool(tool, json!({}), None, &caps).await?;
                let name = json!({ "step1": answer::accept(json!({ "name": "Ada" })) });
                let asked = self.tool(tool, json!({}), Some((name, &asked)), &caps).await?;
                let color = json!({ "step2": answer::accept(json!({ "color": "green" })) });
                self.tool(tool, json!({}), Some((color, &asked)), &caps).await?
            }
            "once" => {
                let (tool, arguments) = ("test_once_side_effect", json!({ "call_id": format!("http-{n}") }));
                let asked = self.tool(tool, arguments.clone(), None, &caps).await?;
                let start = json!({ "start": answer::accept(json!({ "ok": true })) });
                let asked = self.tool(tool, arguments.clone(), Some((start, &asked)), &caps).await?;
                let finish = json!({ "finish": answer::accept(json!({ "ok": true })) });
                self.tool(tool, arguments, Some((finish, &asked)), &caps).await?
            }
            "task" => {
                let created = self.tool("costs_quick_task", json!({}), None, &tasks).await?;
                let id = created["taskId"].clone();
                let task = self.call("tasks/get", json!({ "taskId": id }), &tasks).await?;
                anyhow::ensure!(task["status"] == "completed", "the task ended {task}");
                return Ok(());
            }
            _ => bail!("no http flow {flow}"),
        };
        anyhow::ensure!(result["resultType"] == "complete", "the {flow} flow ended {result}");
        Ok(())
    }

    /// A `tools/call` of `tool`, retried with `answers` to the round `asked` when given.
    async fn tool(
        &mut self,
        tool: &str,
        arguments: Value,
        retry: Option<(Value, &Value)>,
        caps: &Value,
    ) -> anyhow::Result<Value> {
        let mut params = json!({ "name": tool, "arguments": arguments });
        if let Some((answers, asked)) = retry {
            params["inputResponses"] = answers;
            params["requestState"] = asked["requestState"].clone();
        }
        self.call("tools/call", params, caps).await
    }

    /// One request on the connection: its result.
    async fn call(&mut self, method: &str, params: Value, caps: &Value) -> anyhow::Result<Value> {
        let reply: Value = serde_json::from_slice(&self.send(method, params, caps).await?)?;
        reply.get("result").cloned().with_context(|| format!("{method}: {reply}"))
    }

    /// One request on the connection: the body of its response.
    async fn send(&mut self, method: &str, mut params: Value, caps: &Value) -> anyhow::Result<Vec<u8>> {
        self.id += 1;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
        });
        let name = params["name"].as_str().or_else(|| params["taskId"].as_str()).map(str::to_owned);
        let body = json!({ "jsonrpc": "2.0", "id": self.id, "method": method, "params": params }).to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, \
             text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        if let Some(name) = name {
            let _ = write!(head, "Mcp-Name: {name}\r\n");
        }
        self.socket.write_all(format!("{head}\r\n{body}").as_bytes()).await?;
        self.response().await
    }

    /// The body of the next response on the connection (its length given by its head).
    async fn response(&mut self) -> anyhow::Result<Vec<u8>> {
        let mut seen = Vec::with_capacity(1024);
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(at) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let read = self.socket.read(&mut chunk).await?;
            anyhow::ensure!(read > 0, "the server closed the connection");
            seen.extend_from_slice(&chunk[..read]);
        };
        let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .context("a response with a length")?
            .trim()
            .parse()?;
        while seen.len() < end + length {
            let read = self.socket.read(&mut chunk).await?;
            anyhow::ensure!(read > 0, "the server closed the connection mid-body");
            seen.extend_from_slice(&chunk[..read]);
        }
        Ok(seen[end..end + length].to_vec())
    }
}
