//! Load client for `subscriptions/listen`: opens many listen streams to a running
//! `everything` server on 127.0.0.1, reports the server's memory per open stream, then
//! changes the tool list a number of times and reports how many notifications per second
//! reach the listeners, and how long each took from the change to its listener (p50,
//! p99, max).
//!
//! ```text
//! everything --port 3000 &
//! listen_load --port 3000 --pid $! --listeners 1000 --changes 200
//! listen_load --port 3000 --pid $! --listeners 1000 --changes 50 --pace-ms 100   # latency unloaded
//! ```
//!
//! Past 1,024 streams, start the server with `MCP_MRTR_MAX_LISTENERS`.
//!
//! Listeners connect from many loopback addresses (127.1.0.1 onwards), 16 to an address,
//! as many clients would.
//!
//! Bounded: every wait has a deadline, and the program ends when each listener has seen
//! every change (or a deadline passes).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use mcp_mrtr_examples::process::rss_kib;
use mcp_mrtr_examples::stats::percentile;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

const USAGE: &str = "usage: listen_load --port N --pid SERVER_PID [--listeners 1000] [--changes 200] [--pace-ms 0]";
const DEADLINE: Duration = Duration::from_mins(2);
/// Listeners opened at once.
const BATCH: usize = 100;
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

struct Options {
    port: u16,
    pid: u32,
    listeners: usize,
    changes: usize,
    /// Time between two changes; 0 makes them back to back.
    pace: Duration,
}

/// When each change was made, and how long each notification took to arrive after it.
#[derive(Default)]
struct Timings {
    made_at: Mutex<Vec<Instant>>,
    delays_us: Mutex<Vec<u64>>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = parse_args()?;
    let before = rss_kib(options.pid)?;
    let opened = Instant::now();
    let mut listeners = JoinSet::new();
    let (acked_tx, mut acked_rx) = tokio::sync::mpsc::channel(options.listeners);
    let timings = Arc::new(Timings::default());
    // In batches, as clients arrive: a thousand connects at once on a small machine
    // overflow the kernel's accept queue, which measures the kernel, not the server.
    for batch in (0..options.listeners).collect::<Vec<_>>().chunks(BATCH) {
        for &id in batch {
            let (port, changes, acked, timings) = (options.port, options.changes, acked_tx.clone(), timings.clone());
            listeners.spawn(async move {
                let seen = listen(port, id, changes, &acked, &timings).await;
                // A listener that fails before its acknowledgement says so at once, rather
                // than leave the wait for acknowledgements to run out its deadline.
                if let Err(error) = &seen {
                    let _ = acked.try_send(Err(format!("listener {id}: {error:#}")));
                }
                seen
            });
        }
        for _ in batch {
            let acked =
                tokio::time::timeout(DEADLINE, acked_rx.recv()).await.context("listeners not acknowledged in time")?;
            if let Some(Err(failed)) = acked {
                bail!("{failed}");
            }
        }
    }
    let open = rss_kib(options.pid)?;
    println!(
        "{} listen streams open in {:.2?}; server RSS {before} KiB -> {open} KiB: {:.1} KiB per stream",
        options.listeners,
        opened.elapsed(),
        (open.saturating_sub(before)) as f64 / options.listeners as f64
    );

    let started = Instant::now();
    for change in 0..options.changes {
        if change > 0 && !options.pace.is_zero() {
            tokio::time::sleep(options.pace).await;
        }
        // Stamped before the call: the change is made while it runs.
        timings.made_at.lock().expect("not poisoned").push(Instant::now());
        trigger(options.port).await?;
    }
    let triggered = started.elapsed();
    let (mut delivered, mut ended_early) = (0, 0);
    while let Some(done) = tokio::time::timeout(DEADLINE, listeners.join_next()).await.context("listeners too slow")? {
        let seen = done??;
        delivered += seen;
        ended_early += usize::from(seen < options.changes);
    }
    let elapsed = started.elapsed();
    println!(
        "{} changes ({:.2?} to make) -> {delivered} notifications delivered in {:.2?}: {:.0} notifications/s; \
         {ended_early} streams ended early as too slow; server RSS now {} KiB",
        options.changes,
        triggered,
        elapsed,
        delivered as f64 / elapsed.as_secs_f64(),
        rss_kib(options.pid)?
    );
    let mut delays = std::mem::take(&mut *timings.delays_us.lock().expect("not poisoned"));
    delays.sort_unstable();
    if let (Some(p50), Some(p99), Some(max)) = (percentile(&delays, 50), percentile(&delays, 99), delays.last()) {
        println!(
            "change to delivery: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            p50 as f64 / 1000.0,
            p99 as f64 / 1000.0,
            *max as f64 / 1000.0
        );
    }
    Ok(())
}

/// One listen stream: says when it is acknowledged, then counts tool-list changes until
/// it has seen `changes` of them.
async fn listen(
    port: u16,
    id: usize,
    changes: usize,
    acked: &tokio::sync::mpsc::Sender<Result<(), String>>,
    timings: &Timings,
) -> anyhow::Result<usize> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"subscriptions/listen","params":{{{META},"notifications":{{"toolsListChanged":true}}}}}}"#
    );
    let stream = post(port, "subscriptions/listen", None, &body, Some(source_for(id))).await?;
    let mut lines = BufReader::new(stream).lines();
    let mut seen = 0;
    let mut acknowledged = false;
    while seen < changes {
        let line = tokio::time::timeout(DEADLINE, lines.next_line()).await.context("stream idle too long")??;
        // The server ended the stream (a listener too slow to keep up is ended).
        let Some(line) = line else { break };
        if line.contains("notifications/subscriptions/acknowledged") && !acknowledged {
            acknowledged = true;
            acked.send(Ok(())).await?;
        } else if line.contains("notifications/tools/list_changed") {
            // The n-th notification answers the n-th change: the fixture makes one change
            // per call, and a stream too slow to keep up is ended, not thinned.
            let made_at = timings.made_at.lock().expect("not poisoned").get(seen).copied();
            if let Some(made_at) = made_at {
                let delay = u64::try_from(made_at.elapsed().as_micros()).unwrap_or(u64::MAX);
                timings.delays_us.lock().expect("not poisoned").push(delay);
            }
            seen += 1;
        }
    }
    Ok(seen)
}

/// Calls the fixture's `test_trigger_tool_change`: one change of the tool list.
async fn trigger(port: u16) -> anyhow::Result<()> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"test_trigger_tool_change","arguments":{{}},{META}}}}}"#
    );
    let mut stream = post(port, "tools/call", Some("test_trigger_tool_change"), &body, None).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    if !String::from_utf8_lossy(&answer).contains("\"resultType\":\"complete\"") {
        bail!("the trigger failed: {}", String::from_utf8_lossy(&answer));
    }
    Ok(())
}

/// Listener `id`'s source address: 16 listeners per loopback address, since the server
/// lets one client hold 32 streams at most (`Subscriptions::max_streams_per_client`).
fn source_for(id: usize) -> Ipv4Addr {
    let client = id / 16;
    Ipv4Addr::new(127, 1, u8::try_from(client / 250).unwrap_or(u8::MAX), u8::try_from(1 + client % 250).unwrap_or(1))
}

async fn post(
    port: u16,
    method: &str,
    name: Option<&str>,
    body: &str,
    from: Option<Ipv4Addr>,
) -> anyhow::Result<TcpStream> {
    let mut stream = match from {
        Some(from) => {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::from((from, 0)))?;
            socket.connect(SocketAddr::from(([127, 0, 0, 1], port))).await?
        }
        None => TcpStream::connect(("127.0.0.1", port)).await?,
    };
    let name = name.map(|n| format!("Mcp-Name: {n}\r\n")).unwrap_or_default();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n\
         {name}Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    Ok(stream)
}

fn parse_args() -> anyhow::Result<Options> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = Options { port: 0, pid: 0, listeners: 1000, changes: 200, pace: Duration::ZERO };
    for pair in args.chunks(2) {
        let [flag, value] = pair else { bail!("{USAGE}") };
        match flag.as_str() {
            "--port" => options.port = value.parse()?,
            "--pid" => options.pid = value.parse()?,
            "--listeners" => options.listeners = value.parse()?,
            "--changes" => options.changes = value.parse()?,
            "--pace-ms" => options.pace = Duration::from_millis(value.parse()?),
            _ => bail!("{USAGE}"),
        }
    }
    if options.port == 0 || options.pid == 0 {
        bail!("{USAGE}");
    }
    Ok(options)
}
