//! Load client for a flow that takes a `once!` step: drives the `everything` fixture's
//! `test_once_side_effect` (ask, take the step, ask, finish: three requests, the second
//! of which claims its state in the single-use guard) at full speed from closed-loop
//! workers on 127.0.0.1, and every interval prints flows/s, failures, and the server's
//! resident memory and CPU.
//!
//! ```text
//! everything --port 3000 &
//! once_load --port 3000 --pid $! --seconds 900 --workers 16
//! ```
//!
//! Bounded: it stops after `--seconds`, and every request has a deadline. A flow counts
//! as failed unless it ends with the step taken exactly once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use mcp_mrtr_examples::process::{cpu_ticks, rss_kib};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const USAGE: &str = "usage: once_load --port N --pid SERVER_PID [--seconds 900] [--workers 16] [--every 60]";
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;

struct Options {
    port: u16,
    pid: u32,
    seconds: u64,
    workers: usize,
    every: u64,
}

#[derive(Default)]
struct Counts {
    flows: AtomicU64,
    failures: AtomicU64,
    /// The next call id: zero-padded and rising, so the fixture (which remembers its
    /// last 10,000 calls and forgets the first id in order) forgets the oldest first.
    next_call: AtomicU64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = parse_args()?;
    let counts = Arc::new(Counts::default());
    let deadline = Instant::now() + Duration::from_secs(options.seconds);
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..options.workers {
        let counts = counts.clone();
        workers.spawn(async move { work(options.port, worker, deadline, &counts).await });
    }
    println!("minute  flows/s  failures  rss_kib  server_cpu_us/flow");
    let (mut last_flows, mut last_cpu, mut last_at) = (0, cpu_ticks(options.pid)?, Instant::now());
    let mut interval = tokio::time::interval(Duration::from_secs(options.every));
    interval.tick().await;
    while Instant::now() < deadline {
        interval.tick().await;
        let (flows, cpu) = (counts.flows.load(Ordering::Relaxed), cpu_ticks(options.pid)?);
        let elapsed = last_at.elapsed().as_secs_f64();
        let new_flows = flows - last_flows;
        // /proc counts CPU in clock ticks of 10 ms.
        let cpu_us_per_flow = if new_flows == 0 { 0.0 } else { (cpu - last_cpu) as f64 * 10_000.0 / new_flows as f64 };
        println!(
            "{:>6.1}  {:>7.0}  {:>8}  {:>7}  {:>8.1}",
            options.seconds.saturating_sub(deadline.saturating_duration_since(Instant::now()).as_secs()) as f64 / 60.0,
            new_flows as f64 / elapsed,
            counts.failures.load(Ordering::Relaxed),
            rss_kib(options.pid)?,
            cpu_us_per_flow,
        );
        (last_flows, last_cpu, last_at) = (flows, cpu, Instant::now());
    }
    while let Some(done) = workers.join_next().await {
        done??;
    }
    println!(
        "total: {} flows, {} failed, server RSS {} KiB",
        counts.flows.load(Ordering::Relaxed),
        counts.failures.load(Ordering::Relaxed),
        rss_kib(options.pid)?
    );
    Ok(())
}

/// One worker: flows back to back on one keep-alive connection (a new one after an error).
async fn work(port: u16, worker: usize, deadline: Instant, counts: &Counts) -> anyhow::Result<()> {
    let mut connection = None;
    while Instant::now() < deadline {
        let n = counts.next_call.fetch_add(1, Ordering::Relaxed);
        let socket = if let Some(socket) = connection.take() {
            socket
        } else {
            let socket = TcpStream::connect(("127.0.0.1", port)).await?;
            // Small requests back to back: without this, Nagle's algorithm and delayed
            // ACKs stall every round by tens of milliseconds.
            socket.set_nodelay(true)?;
            BufReader::new(socket)
        };
        match flow(port, socket, &format!("{n:012}-w{worker}")).await {
            Ok(socket) => {
                counts.flows.fetch_add(1, Ordering::Relaxed);
                connection = Some(socket);
            }
            Err(error) => {
                if counts.failures.fetch_add(1, Ordering::Relaxed) == 0 {
                    eprintln!("first failure: {error:#}");
                }
            }
        }
    }
    Ok(())
}

/// One flow: call, answer "start" (the round that takes the step), answer "finish".
async fn flow(port: u16, socket: BufReader<TcpStream>, call_id: &str) -> anyhow::Result<BufReader<TcpStream>> {
    let arguments = format!(r#""arguments":{{"call_id":"{call_id}"}}"#);
    let (socket, first) = call(port, socket, &arguments, "").await?;
    let state = state_of(&first)?;
    let start = format!(r#","inputResponses":{{"start":{ACCEPT}}},"requestState":{state}"#);
    let (socket, second) = call(port, socket, &arguments, &start).await?;
    let state = state_of(&second)?;
    let finish = format!(r#","inputResponses":{{"finish":{ACCEPT}}},"requestState":{state}"#);
    let (socket, done) = call(port, socket, &arguments, &finish).await?;
    let text = done["result"]["content"][0]["text"].as_str().unwrap_or_default();
    if !text.ends_with("ran 1 time(s), finished=true") {
        bail!("unexpected end of the flow: {done}");
    }
    Ok(socket)
}

const ACCEPT: &str = r#"{"action":"accept","content":{"ok":true}}"#;

fn state_of(reply: &Value) -> anyhow::Result<String> {
    let state = &reply["result"]["requestState"];
    if !state.is_string() {
        bail!("no requestState in {reply}");
    }
    Ok(state.to_string())
}

/// One `tools/call` of the fixture's once tool on the kept connection, and its reply.
async fn call(
    port: u16,
    mut socket: BufReader<TcpStream>,
    arguments: &str,
    retry: &str,
) -> anyhow::Result<(BufReader<TcpStream>, Value)> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"test_once_side_effect",{arguments}{retry},{META}}}}}"#
    );
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: \
         test_once_side_effect\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let request = [head.as_bytes(), body.as_bytes()].concat();
    let reply = tokio::time::timeout(REQUEST_DEADLINE, async {
        socket.get_mut().write_all(&request).await?;
        read_response(&mut socket).await
    })
    .await
    .context("no answer within the deadline")??;
    Ok((socket, reply))
}

/// Reads one response with a `Content-Length` body from a kept connection.
async fn read_response(socket: &mut BufReader<TcpStream>) -> anyhow::Result<Value> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let byte = socket.read_u8().await.context("the connection closed")?;
        head.push(byte);
    }
    let head = String::from_utf8_lossy(&head);
    if !head.starts_with("HTTP/1.1 200") {
        bail!("{}", head.lines().next().unwrap_or_default());
    }
    let length: usize = head
        .lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("content-length")))
        .and_then(|(_, value)| value.trim().parse().ok())
        .context("a response without Content-Length")?;
    let mut body = vec![0; length];
    socket.read_exact(&mut body).await?;
    Ok(serde_json::from_slice(&body)?)
}

fn parse_args() -> anyhow::Result<Options> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = Options { port: 0, pid: 0, seconds: 900, workers: 16, every: 60 };
    for pair in args.chunks(2) {
        let [flag, value] = pair else { bail!("{USAGE}") };
        match flag.as_str() {
            "--port" => options.port = value.parse()?,
            "--pid" => options.pid = value.parse()?,
            "--seconds" => options.seconds = value.parse()?,
            "--workers" => options.workers = value.parse()?,
            "--every" => options.every = value.parse()?,
            _ => bail!("{USAGE}"),
        }
    }
    if options.port == 0 || options.pid == 0 || options.every == 0 {
        bail!("{USAGE}");
    }
    Ok(options)
}
