//! Graceful shutdown over real sockets on 127.0.0.1: a request in flight finishes, new
//! connections are refused, a request past the bound is cut, listen streams and legacy
//! questions end at once, idle keep-alive connections close, and the tasks running here
//! are handed back. Every wait is bounded; durations are only checked as "within N s".

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr::{catalog::Subscriptions, http::HttpConfig, http::ListenerLimits, protocol::Tool, ToolRoute};
use mcp_mrtr_tests::client::{self, TIMEOUT};
use mcp_mrtr_tests::harness::{default_caps, Rpc};
use mcp_mrtr_tests::legacy::Legacy;
use mcp_mrtr_tests::DropFlag;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

/// A bound no test should reach: when shutdown ends well before it, something other
/// than the bound ended it.
const LONG_BOUND: Duration = Duration::from_mins(1);

/// A handler that says it started and then waits until the test releases it.
#[derive(Clone, Default)]
struct Gate {
    started: Arc<Notify>,
    release: Arc<Notify>,
}

impl Gate {
    fn tool(&self) -> ToolRoute {
        let gate = self.clone();
        Tool::new("gated").handler(move |_ctx, _args: Map<String, Value>| {
            let gate = gate.clone();
            async move {
                gate.started.notify_one();
                gate.release.notified().await;
                Ok::<_, ToolError>("released")
            }
        })
    }

    async fn wait_started(&self) {
        tokio::time::timeout(TIMEOUT, self.started.notified()).await.expect("the handler started in time");
    }
}

/// Set when a handler's future is dropped.
#[derive(Clone, Default)]
struct Dropped(Arc<AtomicBool>);

impl Dropped {
    fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

struct SetOnDrop(Dropped);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0 .0.store(true, Ordering::SeqCst);
    }
}

/// A handler that never finishes; `dropped` tells when it was stopped.
fn endless(started: Arc<Notify>, dropped: Dropped) -> ToolRoute {
    Tool::new("endless").handler(move |_ctx, _args: Map<String, Value>| {
        let (started, guard) = (started.clone(), SetOnDrop(dropped.clone()));
        async move {
            let _guard = guard;
            started.notify_one();
            std::future::pending::<Result<String, ToolError>>().await
        }
    })
}

/// A server serving HTTP on 127.0.0.1 until the test says stop.
struct Serving {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    served: JoinHandle<Result<(), mcp_mrtr::serve::ServeError>>,
}

impl Serving {
    async fn start(server: Server, limits: ListenerLimits) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = mcp_mrtr::testing::with_own_keys(server);
        let serving = server.serve(mcp_mrtr::http::Http::listener(listener).limits(limits));
        let task = tokio::spawn(serving.with_graceful_shutdown(async move {
            let _ = stopped.await;
        }));
        Self { addr, stop: Some(stop), served: task }
    }

    /// Starts the shutdown.
    fn shut_down(&mut self) {
        let _ = self.stop.take().expect("shut down once").send(());
    }

    /// Waits until serving has returned, at most `within`.
    async fn stopped(self, within: Duration) {
        let served = tokio::time::timeout(within, self.served).await.expect("serving ended within the bound");
        served.expect("the server did not panic").expect("serving ended without error");
    }
}

/// Whether a connection to `addr` is refused now, trying for a while (the accept loop
/// closes the listener as soon as it sees the signal, not at the instant it is sent).
async fn refused_soon(addr: SocketAddr) -> bool {
    for _ in 0..200 {
        match TcpStream::connect(addr).await {
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => return true,
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    false
}

/// Opens a request and leaves its answer to be read.
async fn open(addr: SocketAddr, rpc: &Rpc) -> TcpStream {
    let headers = rpc.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    client::open(addr, &headers, &rpc.body()).await
}

/// Reads a socket to its end (or its reset); returns what arrived.
async fn read_all(mut socket: TcpStream) -> String {
    let mut raw = Vec::new();
    let read = tokio::time::timeout(TIMEOUT, socket.read_to_end(&mut raw)).await.expect("the socket ended in time");
    if let Err(error) = read {
        assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset, "{error}");
    }
    String::from_utf8_lossy(&raw).into_owned()
}

/// The JSON-RPC messages in a raw response: its JSON body, or its SSE `data:` lines.
fn messages(raw: &str) -> Vec<Value> {
    let (_, body) = raw.split_once("\r\n\r\n").expect("a response head");
    if raw.contains("text/event-stream") {
        body.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| serde_json::from_str(d.trim()).unwrap()).collect()
    } else {
        vec![serde_json::from_str(body).expect("a JSON body")]
    }
}

/// A server holding one call at its gate, told to shut down: its listener is closed.
async fn shut_down_with_a_call_held() -> (Gate, Serving, TcpStream) {
    let gate = Gate::default();
    let mut serving = Serving::start(Server::new("drain", "0").tool(gate.tool()), ListenerLimits::default()).await;
    let call = open(serving.addr, &Rpc::call_tool("gated", json!({}))).await;
    gate.wait_started().await;
    serving.shut_down();
    assert!(refused_soon(serving.addr).await, "the listener stayed open");
    (gate, serving, call)
}

#[tokio::test]
async fn a_request_in_flight_when_shutdown_starts_completes() {
    let (gate, serving, call) = shut_down_with_a_call_held().await;
    gate.release.notify_one();
    let answer = read_all(call).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(messages(&answer)[0]["result"]["content"][0]["text"], "released");
    serving.stopped(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_new_connection_after_shutdown_started_is_refused_while_the_drain_runs() {
    let (gate, serving, call) = shut_down_with_a_call_held().await;
    // Still draining (the call is held), and still refusing.
    for _ in 0..3 {
        let error = TcpStream::connect(serving.addr).await.expect_err("refused");
        assert_eq!(error.kind(), std::io::ErrorKind::ConnectionRefused);
    }
    assert!(!serving.served.is_finished());
    gate.release.notify_one();
    read_all(call).await;
    serving.stopped(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_request_that_outlives_the_bound_is_cut_and_serving_ends_soon_after() {
    let (started, dropped) = (Arc::new(Notify::new()), Dropped::default());
    let limits = ListenerLimits::default().shutdown_timeout(Duration::from_millis(300));
    let mut serving =
        Serving::start(Server::new("cut", "0").tool(endless(started.clone(), dropped.clone())), limits).await;
    let call = open(serving.addr, &Rpc::call_tool("endless", json!({}))).await;
    tokio::time::timeout(TIMEOUT, started.notified()).await.expect("the handler started");
    serving.shut_down();
    // The bound plus generous slack for a busy machine.
    serving.stopped(Duration::from_millis(300) + Duration::from_secs(5)).await;
    assert!(dropped.is_set(), "the handler still runs after serving ended");
    let answer = read_all(call).await;
    assert!(answer.is_empty(), "a cut request gets no answer: {answer}");
}

#[tokio::test]
async fn an_open_listen_stream_ends_with_its_result_and_does_not_delay_shutdown() {
    // Served through the lower-level entry point, mounted beside a route of the app's own.
    let server = mcp_mrtr::testing::with_own_keys(
        Server::new("live", "0")
            .subscriptions(Subscriptions::default())
            .tool(Tool::new("noop").handler(|_ctx, _args: Map<String, Value>| async { Ok::<_, ToolError>("ok") })),
    );
    let handle = server.catalog();
    let limits = ListenerLimits::default().shutdown_timeout(LONG_BOUND);
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .merge(server.into_router(HttpConfig::default()).expect("a router"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task =
        tokio::spawn(mcp_mrtr::http::serve_router(listener, app).limits(limits).with_graceful_shutdown(async move {
            let _ = stopped.await;
        }));
    let rpc =
        Rpc::new("subscriptions/listen").id(json!("l-1")).param("notifications", json!({"toolsListChanged": true}));
    let stream = open(addr, &rpc).await;
    for _ in 0..500 {
        if handle.listeners() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(handle.listeners(), 1, "the listen stream did not open");
    let _ = stop.send(());
    let answer = read_all(stream).await;
    let messages = messages(&answer);
    assert_eq!(messages[0]["method"], "notifications/subscriptions/acknowledged", "{answer}");
    let last = messages.last().unwrap();
    assert_eq!(
        (last["id"].clone(), last["result"]["resultType"].clone()),
        (json!("l-1"), json!("complete")),
        "{answer}"
    );
    // Far sooner than the 60 s bound.
    let ended = tokio::time::timeout(Duration::from_secs(10), task).await.expect("shutdown was not held open");
    ended.unwrap().unwrap();
}

#[tokio::test]
async fn a_legacy_question_waiting_for_its_client_is_withdrawn_at_shutdown() {
    let limits = ListenerLimits::default().shutdown_timeout(LONG_BOUND);
    let mut serving = Serving::start(mcp_mrtr_examples::everything::server(), limits).await;
    let (client, _) = Legacy::connect(serving.addr, json!({"elicitation": {}})).await;
    let mut call =
        client.open(1, "tools/call", json!({"name": "test_input_required_result_elicitation", "arguments": {}})).await;
    let asked = call.next().await.expect("the bridge asks");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    serving.shut_down();
    let rest = call.rest().await;
    let withdrawn = &rest[0];
    assert_eq!(withdrawn["method"], "notifications/cancelled", "{rest:?}");
    assert_eq!(withdrawn["params"]["requestId"], asked["id"]);
    let reply = rest.last().unwrap();
    assert_eq!(reply["id"], 1);
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("shutting down"), "{reply}");
    serving.stopped(Duration::from_secs(10)).await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_closes_at_shutdown() {
    let limits = ListenerLimits::default().shutdown_timeout(LONG_BOUND);
    let mut serving = Serving::start(mcp_mrtr_examples::everything::server(), limits).await;
    let rpc = Rpc::call_tool("test_simple_text", json!({}));
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost:{}\r\nContent-Length: {}\r\n",
        serving.addr.port(),
        rpc.body().len()
    );
    for (name, value) in rpc.headers() {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    let mut socket = TcpStream::connect(serving.addr).await.unwrap();
    socket.write_all(format!("{head}\r\n").as_bytes()).await.unwrap();
    socket.write_all(&rpc.body()).await.unwrap();
    // The whole answer, then nothing: the connection stays open for the next request.
    let mut answer = Vec::new();
    while !String::from_utf8_lossy(&answer).contains("This is a simple text response") {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(TIMEOUT, socket.read(&mut buf)).await.expect("answered in time").unwrap();
        assert!(n > 0, "closed before answering");
        answer.extend_from_slice(&buf[..n]);
    }
    serving.shut_down();
    let rest = read_all(socket).await;
    assert!(rest.is_empty(), "{rest}");
    serving.stopped(Duration::from_secs(10)).await;
}

static TASK_DROPPED: AtomicBool = AtomicBool::new(false);

/// Computes for ten minutes, unless it is dropped first.
#[tool(task = "required")]
async fn ten_minutes() -> Result<String, ToolError> {
    let _flag = DropFlag(&TASK_DROPPED);
    tokio::time::sleep(Duration::from_mins(10)).await;
    Ok("done".into())
}

#[tokio::test]
async fn the_tasks_running_here_are_handed_back_once_the_drain_is_done() {
    let limits = ListenerLimits::default().shutdown_timeout(LONG_BOUND);
    let mut serving = Serving::start(Server::new("tasks", "0").tool(ten_minutes), limits).await;
    let mut caps = default_caps();
    caps["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
    let rpc = Rpc::call_tool("ten_minutes", json!({})).caps(caps);
    let headers = rpc.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let created = client::send(serving.addr, "POST", &headers, &rpc.body()).await;
    assert_eq!(created.reply()["result"]["resultType"], "task", "{}", created.body);
    assert!(!TASK_DROPPED.load(Ordering::SeqCst));
    serving.shut_down();
    // No request is in flight, so the 60 s bound is not what ends it.
    serving.stopped(Duration::from_secs(10)).await;
    assert!(TASK_DROPPED.load(Ordering::SeqCst), "the task's handler still runs");
}
