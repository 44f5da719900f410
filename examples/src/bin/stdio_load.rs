//! Load client for a server over stdio: it starts the server itself, as a desktop or CLI
//! host does, and drives it over the child's pipes with one request in flight.
//!
//! ```text
//! stdio_load --flow call --tool get_value -- target/release/counter
//! stdio_load --flow mrtr --tool reset -- target/release/counter
//! stdio_load --flow task -- target/release/everything --stdio
//! ```
//!
//! The first line sent is a 2025-11-25 `initialize` (what hosts send today), timed from the
//! spawn: that is the start to first answer. Then, flow after flow:
//!
//! - `call`: `tools/call` of `--tool` without arguments, as a 2025-11-25 session sends it;
//! - `mrtr`: an MRTR call of `--tool`, each question answered and the call retried until
//!   it completes, as 2026-07-28 requests (`examples/src/flows.rs`);
//! - `task`: the conformance fixtures' task flow as `flow_load` runs it, 2026-07-28 too.
//!
//! After `--warmup` flows it measures `--flows` flows: flows/s, p50 and p99 latency, the
//! server's CPU per flow (from /proc, in 10 ms ticks: keep the run long enough), and its
//! resident memory once the `initialize` was answered and after the flows. One JSON line
//! to stdout. Bounded: each request has a deadline, each flow a budget of requests, and
//! the server gets 10 s to exit once its stdin closes.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use mcp_mrtr_examples::flows::{self, Rpc};
use mcp_mrtr_examples::process::{cpu_ticks, rss_kib};
use mcp_mrtr_examples::stats::percentile;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const USAGE: &str = "usage: stdio_load --flow call|mrtr|task [--tool get_value]
                  [--flows 20000] [--warmup 1000] [--poll-ms 0] -- COMMAND [ARG …]";

#[derive(Clone, Copy, PartialEq)]
enum Flow {
    Call,
    Mrtr,
    Task,
}

struct Options {
    flow: Flow,
    flow_name: String,
    tool: String,
    flows: u64,
    warmup: u64,
    poll: Duration,
    command: Vec<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let options = parse_args()?;
    let spawned = Instant::now();
    let mut child = Command::new(&options.command[0])
        .args(&options.command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("start {}", options.command[0]))?;
    let pid = child.id().context("the server exited at once")?;
    let mut client = Client {
        stdin: child.stdin.take().context("no stdin")?,
        stdout: BufReader::new(child.stdout.take().context("no stdout")?),
        next_id: 0,
        sent: 0,
        modern: false,
        line: String::new(),
    };
    let initialize = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
        "clientInfo": {"name": "stdio_load", "version": "0"},
    });
    client.rpc("initialize", "", initialize).await.context("initialize")?;
    let first_answer = spawned.elapsed();
    client.notify("notifications/initialized").await?;
    client.modern = options.flow != Flow::Call;
    let rss_start = rss_kib(pid)?;

    for n in 0..options.warmup {
        flow(&options, &mut client, n).await.context("warm-up")?;
    }
    let (cpu_before, began) = (cpu_ticks(pid)?, Instant::now());
    let mut latencies = Vec::with_capacity(usize::try_from(options.flows).unwrap_or(0));
    let mut requests = 0;
    for n in 0..options.flows {
        let start = Instant::now();
        flow(&options, &mut client, options.warmup + n).await?;
        latencies.push(u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX));
        requests += client.sent;
    }
    let (cpu_after, seconds) = (cpu_ticks(pid)?, began.elapsed().as_secs_f64());
    let rss_end = rss_kib(pid)?;
    finish(child, client).await?;

    latencies.sort_unstable();
    let flows = options.flows as f64;
    let report = json!({
        "flow": options.flow_name,
        "flows": options.flows,
        "flows_per_s": flows / seconds,
        "requests_per_flow": requests as f64 / flows,
        "p50_ms": percentile(&latencies, 50).map(|us| us as f64 / 1000.0),
        "p99_ms": percentile(&latencies, 99).map(|us| us as f64 / 1000.0),
        // /proc counts CPU in clock ticks of 10 ms.
        "server_cpu_us_per_flow": (cpu_after - cpu_before) as f64 * 10_000.0 / flows,
        "rss_start_kib": rss_start,
        "rss_end_kib": rss_end,
        "first_answer_ms": first_answer.as_secs_f64() * 1000.0,
    });
    println!("{report}");
    Ok(())
}

/// Runs flow number `n`, counting its requests afresh in `client.sent`.
async fn flow(options: &Options, client: &mut Client, n: u64) -> anyhow::Result<()> {
    client.sent = 0;
    match options.flow {
        Flow::Call => {
            let result =
                client.rpc("tools/call", &options.tool, json!({"name": options.tool, "arguments": {}})).await?;
            if result["isError"] == json!(true) {
                bail!("{} failed: {result}", options.tool);
            }
            Ok(())
        }
        Flow::Mrtr => flows::rounds(client, &options.tool, json!({})).await,
        Flow::Task => flows::task(client, options.poll, &format!("stdio-{n}.txt")).await,
    }
}

/// Closes the server's stdin, which ends a stdio server, and waits for it to exit.
async fn finish(mut child: Child, client: Client) -> anyhow::Result<()> {
    drop(client);
    if let Ok(status) = tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
        status?;
        return Ok(());
    }
    child.kill().await?;
    bail!("the server did not exit within 10 s of its stdin closing")
}

/// The pipes to the server, one request in flight.
struct Client {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// Requests sent in the current flow.
    sent: u64,
    /// Whether requests carry the 2026-07-28 envelope.
    modern: bool,
    line: String,
}

impl Client {
    async fn notify(&mut self, method: &str) -> anyhow::Result<()> {
        let line = format!("{}\n", json!({"jsonrpc": "2.0", "method": method}));
        self.stdin.write_all(line.as_bytes()).await?;
        Ok(())
    }

    /// The next line that answers request `id`; notifications and anything else between
    /// are skipped.
    async fn answer(&mut self, id: u64) -> anyhow::Result<Value> {
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line).await? == 0 {
                bail!("the server closed its stdout");
            }
            let message: Value =
                serde_json::from_str(&self.line).with_context(|| format!("not JSON: {}", self.line.trim_end()))?;
            if message.get("method").is_none() && message["id"] == json!(id) {
                return Ok(message);
            }
        }
    }
}

impl Rpc for Client {
    async fn rpc(&mut self, method: &str, _name: &str, mut params: Value) -> anyhow::Result<Value> {
        flows::count_request(&mut self.sent)?;
        if self.modern {
            params["_meta"] = flows::modern_meta();
        }
        self.next_id += 1;
        let id = self.next_id;
        let line = format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.stdin.write_all(line.as_bytes()).await?;
        let reply = tokio::time::timeout(flows::REQUEST_DEADLINE, self.answer(id))
            .await
            .with_context(|| format!("{method}: no answer within the deadline"))??;
        if let Some(error) = reply.get("error") {
            bail!("{method}: {error}");
        }
        reply.get("result").cloned().with_context(|| format!("{method}: no result in {reply}"))
    }
}

fn parse_args() -> anyhow::Result<Options> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|arg| arg == "--").context(USAGE)?;
    let mut options = Options {
        flow: Flow::Call,
        flow_name: String::new(),
        tool: "get_value".into(),
        flows: 20_000,
        warmup: 1_000,
        poll: Duration::ZERO,
        command: args[split + 1..].to_vec(),
    };
    for pair in args[..split].chunks(2) {
        let [flag, value] = pair else { bail!("{USAGE}") };
        match flag.as_str() {
            "--flow" => {
                options.flow = match value.as_str() {
                    "call" => Flow::Call,
                    "mrtr" => Flow::Mrtr,
                    "task" => Flow::Task,
                    _ => bail!("{USAGE}"),
                };
                options.flow_name.clone_from(value);
            }
            "--tool" => options.tool.clone_from(value),
            "--flows" => options.flows = value.parse()?,
            "--warmup" => options.warmup = value.parse()?,
            "--poll-ms" => options.poll = Duration::from_millis(value.parse()?),
            _ => bail!("{USAGE}"),
        }
    }
    if options.flow_name.is_empty() || options.command.is_empty() || options.flows == 0 {
        bail!("{USAGE}");
    }
    Ok(options)
}
