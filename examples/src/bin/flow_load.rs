//! Load client for whole flows over Streamable HTTP (MCP 2026-07-28), against one server
//! or several instances it spreads requests over itself:
//!
//! - `list`: one `tools/list`;
//! - `elicitation`, `multi_round`: the conformance fixture's MRTR tools, every question
//!   answered and the call retried with the state until it completes;
//! - `task`: `confirm_delete` as a task (the tasks extension): create, poll `tasks/get`
//!   until it asks, answer with `tasks/update`, poll until it completes;
//! - `once`: `test_once_side_effect`, an MRTR call whose second round takes a `once!`
//!   step, so it claims its state in the single-use guard (Redis's, when shared).
//!
//! ```text
//! everything --port 3000 &
//! flow_load --flow task --url http://127.0.0.1:3000/mcp --pid $! --seconds 10 --workers 16
//! flow_load --flow multi_round --url http://127.0.0.1:3001/mcp --url http://127.0.0.1:3002/mcp
//! ```
//!
//! Closed-loop workers, each with one keep-alive connection per URL; a flow's requests go
//! round robin over the URLs, so every round may land on another instance. After a
//! warm-up it counts flows, requests per flow and flow latency, and with `--pid` (repeat
//! it per instance) the servers' CPU per flow. Answers are built from each question, so
//! any server with the conformance fixtures serves (rmcp's conformance server too).
//! Bounded: it stops after `--seconds`, each request has a deadline and each flow a
//! budget of requests. One JSON line to stdout; the first failure to stderr.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use mcp_mrtr_examples::flows::{self, Rpc};
use mcp_mrtr_examples::process::cpu_ticks;
use mcp_mrtr_examples::stats::percentile;
use serde_json::{json, Value};
use tokio::net::TcpStream;

const USAGE: &str =
    "usage: flow_load --flow list|elicitation|multi_round|task|once --url http://127.0.0.1:PORT/mcp [--url …]
                 [--pid SERVER_PID …] [--seconds 10] [--warmup 2] [--workers 16] [--poll-ms 1]";

#[derive(Clone, Copy, PartialEq)]
enum Flow {
    List,
    Elicitation,
    MultiRound,
    Task,
    Once,
}

struct Options {
    flow: Flow,
    flow_name: String,
    urls: Vec<hyper::Uri>,
    pids: Vec<u32>,
    seconds: u64,
    warmup: u64,
    workers: usize,
    poll: Duration,
}

#[derive(Default)]
struct Counts {
    flows: AtomicU64,
    failures: AtomicU64,
    requests: AtomicU64,
    latencies_us: Mutex<Vec<u64>>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let options = Arc::new(parse_args()?);
    let counts = Arc::new(Counts::default());
    let start = Instant::now();
    let window =
        (start + Duration::from_secs(options.warmup), start + Duration::from_secs(options.warmup + options.seconds));
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..options.workers {
        let (options, counts) = (options.clone(), counts.clone());
        workers.spawn(async move { work(&options, worker, window, &counts).await });
    }
    tokio::time::sleep_until(window.0.into()).await;
    let cpu_before = total_cpu(&options.pids)?;
    tokio::time::sleep_until(window.1.into()).await;
    let cpu_after = total_cpu(&options.pids)?;
    while let Some(done) = workers.join_next().await {
        done??;
    }
    let flows = counts.flows.load(Ordering::Relaxed);
    let mut latencies = std::mem::take(&mut *counts.latencies_us.lock().expect("not poisoned"));
    latencies.sort_unstable();
    let percentile = |pct| percentile(&latencies, pct).map(|us| us as f64 / 1000.0);
    // /proc counts CPU in clock ticks of 10 ms.
    let cpu_us_per_flow =
        (!options.pids.is_empty() && flows > 0).then(|| (cpu_after - cpu_before) as f64 * 10_000.0 / flows as f64);
    let report = json!({
        "flow": options.flow_name,
        "instances": options.urls.len(),
        "workers": options.workers,
        "seconds": options.seconds,
        "flows": flows,
        "flows_per_s": flows as f64 / options.seconds as f64,
        "failures": counts.failures.load(Ordering::Relaxed),
        "requests_per_flow": if flows == 0 { 0.0 } else { counts.requests.load(Ordering::Relaxed) as f64 / flows as f64 },
        "p50_ms": percentile(50),
        "p99_ms": percentile(99),
        "server_cpu_us_per_flow": cpu_us_per_flow,
    });
    println!("{report}");
    Ok(())
}

fn total_cpu(pids: &[u32]) -> anyhow::Result<u64> {
    pids.iter().map(|&pid| cpu_ticks(pid)).sum()
}

/// One worker: flows back to back over its connections (each reopened after an error);
/// only flows that run wholly inside the window count.
async fn work(options: &Options, worker: usize, window: (Instant, Instant), counts: &Counts) -> anyhow::Result<()> {
    let mut client = Client { urls: &options.urls, connections: Vec::new(), next: worker, sent: 0 };
    let mut n = 0u64;
    while Instant::now() < window.1 {
        n += 1;
        client.sent = 0;
        let began = Instant::now();
        let outcome = flow(options, &mut client, &format!("w{worker}-{n}.txt")).await;
        let ended = Instant::now();
        let counted = began >= window.0 && ended <= window.1;
        match outcome {
            Ok(()) if counted => {
                counts.flows.fetch_add(1, Ordering::Relaxed);
                counts.requests.fetch_add(client.sent, Ordering::Relaxed);
                let micros = u64::try_from((ended - began).as_micros()).unwrap_or(u64::MAX);
                counts.latencies_us.lock().expect("not poisoned").push(micros);
            }
            Ok(()) => {}
            Err(error) => {
                client.connections.clear();
                if counted && counts.failures.fetch_add(1, Ordering::Relaxed) == 0 {
                    eprintln!("first failure: {error:#}");
                }
                // Not a spin: a refused or broken flow waits a little before the next.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    Ok(())
}

async fn flow(options: &Options, client: &mut Client<'_>, filename: &str) -> anyhow::Result<()> {
    match options.flow {
        Flow::List => {
            let listed = client.rpc("tools/list", "", json!({})).await?;
            if listed["tools"].as_array().is_none_or(Vec::is_empty) {
                bail!("no tools listed: {listed}");
            }
            Ok(())
        }
        Flow::Elicitation => flows::rounds(client, "test_input_required_result_elicitation", json!({})).await,
        Flow::MultiRound => flows::rounds(client, "test_input_required_result_multi_round", json!({})).await,
        Flow::Task => flows::task(client, options.poll, filename).await,
        Flow::Once => flows::rounds(client, "test_once_side_effect", json!({"call_id": filename})).await,
    }
}

/// A worker's connections, one per URL, used round robin request by request.
struct Client<'a> {
    urls: &'a [hyper::Uri],
    connections: Vec<Option<SendRequest<Full<Bytes>>>>,
    next: usize,
    /// Requests sent in the current flow.
    sent: u64,
}

impl Rpc for Client<'_> {
    /// Sends one request to the next URL; returns its result (a JSON-RPC error as an
    /// error), read from a JSON body or from the response event of an SSE body.
    async fn rpc(&mut self, method: &str, name: &str, mut params: Value) -> anyhow::Result<Value> {
        flows::count_request(&mut self.sent)?;
        let at = self.next % self.urls.len();
        self.next = self.next.wrapping_add(1);
        if self.connections.len() != self.urls.len() {
            self.connections = (0..self.urls.len()).map(|_| None).collect();
        }
        let url = &self.urls[at];
        let authority = url.authority().context("the url has no host")?.as_str();
        let sender = match &mut self.connections[at] {
            Some(sender) => sender,
            slot @ None => slot.insert(connect(authority).await?),
        };
        params["_meta"] = flows::modern_meta();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
        let mut request = hyper::Request::post(url.path())
            .header("host", authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if !name.is_empty() {
            request = request.header("mcp-name", name);
        }
        let request = request.body(Full::new(Bytes::from(body)))?;
        let exchange = async {
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            let status = response.status();
            let bytes = response.into_body().collect().await?.to_bytes();
            anyhow::Ok((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(flows::REQUEST_DEADLINE, exchange)
            .await
            .context("no answer within the deadline")??;
        if !status.is_success() {
            bail!("{method}: HTTP {status}: {}", String::from_utf8_lossy(&bytes));
        }
        let reply = json_of(&bytes).with_context(|| format!("{method}: {}", String::from_utf8_lossy(&bytes)))?;
        if let Some(error) = reply.get("error") {
            bail!("{method}: {error}");
        }
        reply.get("result").cloned().with_context(|| format!("{method}: no result in {reply}"))
    }
}

async fn connect(authority: &str) -> anyhow::Result<SendRequest<Full<Bytes>>> {
    let socket = TcpStream::connect(authority).await.with_context(|| format!("connect to {authority}"))?;
    // Small requests back to back: without this, Nagle's algorithm and delayed ACKs stall
    // every round by tens of milliseconds.
    socket.set_nodelay(true)?;
    let (sender, connection) = http1::handshake(TokioIo::new(socket)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

/// The JSON-RPC response in a body: the body itself, or the last response event of SSE.
fn json_of(bytes: &[u8]) -> anyhow::Result<Value> {
    let text = std::str::from_utf8(bytes)?;
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Ok(value);
    }
    let reply = text
        .lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some());
    reply.context("no JSON-RPC response in the body")
}

fn parse_args() -> anyhow::Result<Options> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = Options {
        flow: Flow::List,
        flow_name: String::new(),
        urls: Vec::new(),
        pids: Vec::new(),
        seconds: 10,
        warmup: 2,
        workers: 16,
        poll: Duration::from_millis(1),
    };
    for pair in args.chunks(2) {
        let [flag, value] = pair else { bail!("{USAGE}") };
        match flag.as_str() {
            "--flow" => {
                options.flow = match value.as_str() {
                    "list" => Flow::List,
                    "elicitation" => Flow::Elicitation,
                    "multi_round" => Flow::MultiRound,
                    "task" => Flow::Task,
                    "once" => Flow::Once,
                    _ => bail!("{USAGE}"),
                };
                options.flow_name.clone_from(value);
            }
            "--url" => options.urls.push(value.parse()?),
            "--pid" => options.pids.push(value.parse()?),
            "--seconds" => options.seconds = value.parse()?,
            "--warmup" => options.warmup = value.parse()?,
            "--workers" => options.workers = value.parse()?,
            "--poll-ms" => options.poll = Duration::from_millis(value.parse()?),
            _ => bail!("{USAGE}"),
        }
    }
    let plain_http = options.urls.iter().all(|url| url.scheme_str() == Some("http"));
    if options.flow_name.is_empty()
        || options.urls.is_empty()
        || !plain_http
        || options.seconds == 0
        || options.workers == 0
    {
        bail!("{USAGE}");
    }
    Ok(options)
}
