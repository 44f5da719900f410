//! The HTTP transport under abuse, with small `HttpLimits`: slow or silent connections are
//! closed by their deadlines, a connection past the cap is refused with a 503 when none
//! can give way for it, a stream
//! nobody reads is dropped and its handler cancelled, a handler past its time limit
//! fails, and a request past the handler cap is told the server is busy. Each test also
//! checks that a normal request is still served.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_mrtr::http::{HttpConfig, HttpLimits, ListenerLimits};
use mcp_mrtr::{protocol::Tool, Server, ToolError};
use mcp_mrtr_tests::client::{self, TIMEOUT};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::listen::ListenStream;
use mcp_mrtr_tests::DropFlag;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Short deadlines, so a test sees them pass; the connection cap is 8.
fn small_limits() -> (HttpLimits, ListenerLimits) {
    let endpoint = HttpLimits::default().body_timeout(Duration::from_millis(200));
    let listener = ListenerLimits::default()
        .header_timeout(Duration::from_millis(200))
        .write_timeout(Duration::from_millis(200))
        .max_connections(8);
    (endpoint, listener)
}

async fn everything_with((limits, listener): (HttpLimits, ListenerLimits)) -> TestServer {
    let config = HttpConfig::default().limits(limits);
    TestServer::start_listening(mcp_mrtr_examples::everything::server(), config, listener).await
}

/// Whether the server closes `stream` within `TIMEOUT`, with what it sent before.
async fn closed_by_server(stream: &mut TcpStream) -> Option<String> {
    let mut seen = Vec::new();
    match tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut seen)).await {
        Ok(_) => Some(String::from_utf8_lossy(&seen).into_owned()),
        Err(_) => None,
    }
}

async fn assert_served(server: &TestServer) {
    let reply = server.call(&Rpc::new("tools/list")).await;
    assert!(reply["result"]["tools"].is_array(), "{reply}");
}

#[tokio::test]
async fn slow_headers_and_idle_connections_are_closed_by_the_header_deadline() {
    let server = everything_with(small_limits()).await;
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    let dripping = async {
        // One byte every 50 ms: the head would take seconds, far past the 200 ms deadline.
        for byte in b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if slow.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(TIMEOUT, dripping).await.expect("the drip ends");
    assert!(closed_by_server(&mut slow).await.is_some(), "a slow-header connection stays open");
    assert!(closed_by_server(&mut silent).await.is_some(), "a silent connection stays open");

    // A keep-alive connection idle after its response is closed too.
    let mut idle = TcpStream::connect(server.addr).await.unwrap();
    idle.write_all(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
    let answered = closed_by_server(&mut idle).await.expect("an idle keep-alive connection stays open");
    assert!(answered.starts_with("HTTP/1.1 405"), "{answered}");
    assert_served(&server).await;
}

#[tokio::test]
async fn a_body_that_stops_arriving_gets_408_and_the_connection_closes() {
    let server = everything_with(small_limits()).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(b"{\"jsonrpc\":").await.unwrap();
    let answered = closed_by_server(&mut stream).await.expect("a stalled body keeps its connection");
    assert!(answered.starts_with("HTTP/1.1 408"), "{answered}");
    assert_served(&server).await;
}

#[tokio::test]
async fn connections_past_the_cap_are_refused_with_503_only_when_none_can_give_way() {
    // Long header deadline: the held connections must outlive the test's checks.
    let (limits, listener) = small_limits();
    let server = everything_with((limits, listener.header_timeout(Duration::from_secs(10)))).await;
    // Idle keep-alive connections give way to a new one: the cap refuses nobody.
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(keep_alive_connection(&server).await);
    }
    assert_served(&server).await;
    drop(idle);
    // Listen streams of this same client (127.0.0.1) are busy, and nobody holds more than
    // the newcomer's client would: a connection past the cap is refused.
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(listen_stream(&server).await);
    }
    let mut extra = TcpStream::connect(server.addr).await.unwrap();
    let refused = closed_by_server(&mut extra).await.expect("a connection past the cap is left waiting");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.to_ascii_lowercase().contains("retry-after: 1"), "{refused}");

    held.pop();
    // The server frees the slot when it sees the close; give it a few tries.
    for attempt in 0..50 {
        let mut probe = TcpStream::connect(server.addr).await.unwrap();
        probe.write_all(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.unwrap();
        let answer = closed_by_server(&mut probe).await.expect("answered");
        if answer.starts_with("HTTP/1.1 405") {
            return;
        }
        assert!(answer.starts_with("HTTP/1.1 503") && attempt < 49, "{answer}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An acknowledged `subscriptions/listen` stream: a connection that is busy for as long
/// as it stays open.
async fn listen_stream(server: &TestServer) -> ListenStream {
    let listen = Rpc::new("subscriptions/listen").param("notifications", json!({"toolsListChanged": true}));
    let mut stream = ListenStream::open(server.addr, None, &listen).await;
    assert_eq!(stream.next().await["method"], "notifications/subscriptions/acknowledged", "{}", stream.seen());
    stream
}

/// A connection the server has certainly accepted: it answered one request on it, and
/// it stays open (keep-alive).
async fn keep_alive_connection(server: &TestServer) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
    let mut head = Vec::new();
    let read_head = async {
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "closed early");
            head.push(byte[0]);
        }
    };
    tokio::time::timeout(TIMEOUT, read_head).await.expect("a response head");
    assert!(head.starts_with(b"HTTP/1.1 405"), "{}", String::from_utf8_lossy(&head));
    stream
}

#[tokio::test]
async fn a_stream_nobody_reads_is_dropped_and_its_handler_cancelled() {
    let cancelled = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let (flag, count) = (cancelled.clone(), sent.clone());
    let flood = Tool::new("flood").handler(move |ctx, _: Map<String, Value>| {
        let (guard, count) = (DropFlag(flag.clone()), count.clone());
        async move {
            let _guard = guard;
            let page = "x".repeat(16 * 1024);
            for n in 1..=100_000u32 {
                ctx.progress(f64::from(n)).message(page.as_str()).await;
                count.fetch_add(1, Ordering::SeqCst);
            }
            Ok::<_, ToolError>("never reached")
        }
    });
    let (limits, listener) = small_limits();
    let server = TestServer::start_listening(
        Server::new("flood", "1").tool(flood),
        HttpConfig::default().limits(limits),
        listener,
    )
    .await;

    let rpc = Rpc::call_tool("flood", json!({})).meta_key("progressToken", json!("p"));
    let headers = rpc.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let reader = client::open_small_window(server.addr, &headers, &rpc.body()).await;
    // Read nothing. The handler fills the buffers, the write stalls past 200 ms, and the
    // server drops the stream with the handler.
    let dropped = async {
        while !cancelled.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(TIMEOUT, dropped).await.expect("the handler of an unread stream keeps running");
    let at_drop = sent.load(Ordering::SeqCst);
    assert!(at_drop < 100_000, "the handler ran to its end");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(sent.load(Ordering::SeqCst), at_drop, "the handler still sends");
    drop(reader);
    assert_served(&server).await;
}

fn sleepy(name: &str, started: Arc<AtomicUsize>) -> mcp_mrtr::ToolRoute {
    Tool::new(name).handler(move |_ctx, _: Map<String, Value>| {
        started.fetch_add(1, Ordering::SeqCst);
        async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, ToolError>("woke up")
        }
    })
}

#[tokio::test]
async fn a_handler_past_its_time_limit_fails_with_a_clear_error() {
    let started = Arc::new(AtomicUsize::new(0));
    let server = Server::new("slow", "1")
        .tool(sleepy("server_limit", started.clone()))
        .tool(sleepy("own_limit", started.clone()).timeout(Duration::from_millis(150)))
        .handler_timeout(Some(Duration::from_millis(300)));
    let server = TestServer::start(server).await;
    for (tool, message) in [("server_limit", "timed out after 300ms"), ("own_limit", "timed out after 150ms")] {
        let reply = server.call(&Rpc::call_tool(tool, json!({}))).await;
        assert_eq!(reply["error"]["code"], -32603, "{reply}");
        assert_eq!(reply["error"]["message"], message, "{reply}");
    }
}

#[tokio::test]
async fn past_the_handler_cap_requests_are_told_the_server_is_busy() {
    let started = Arc::new(AtomicUsize::new(0));
    let server = Server::new("busy", "1").tool(sleepy("hold", started.clone()));
    // The total is the subject here: one client may take every slot.
    let limits = HttpLimits::default().max_handlers(2).max_handlers_per_client(2);
    let server = TestServer::start_with(server, HttpConfig::default().limits(limits)).await;
    let hold = Rpc::call_tool("hold", json!({}));
    let headers = hold.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let first = client::open(server.addr, &headers, &hold.body()).await;
    let _second = client::open(server.addr, &headers, &hold.body()).await;
    let both_running = async {
        while started.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(TIMEOUT, both_running).await.expect("both handlers start");

    let busy = server.send(&hold).await;
    assert_eq!(busy.status, 503, "{}", busy.body);
    assert_eq!(busy.header("retry-after"), Some("1"));
    assert_eq!(busy.reply()["error"]["code"], -32603);

    // A legacy session follows 2025-11-25: the error travels on HTTP 200.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let opened =
        client::send(server.addr, "POST", &[("content-type", "application/json")], init.to_string().as_bytes()).await;
    let session = opened.header("mcp-session-id").expect("a session").to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hold", "arguments": {}}});
    let legacy_headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", session.as_str()),
    ];
    let busy = client::send(server.addr, "POST", &legacy_headers, call.to_string().as_bytes()).await;
    assert_eq!(busy.status, 200, "{}", busy.body);
    assert_eq!(busy.reply()["error"]["code"], -32603, "{}", busy.body);

    // Closing a stream frees its slot.
    drop(first);
    let freed = async {
        loop {
            let list = server.send(&Rpc::new("tools/list")).await;
            if list.status == 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(TIMEOUT, freed).await.expect("a slot frees when its stream closes");
}

#[tokio::test]
async fn listen_streams_take_no_handler_slot() {
    let server = Server::new("listen", "0")
        .subscriptions(mcp_mrtr::catalog::Subscriptions::default())
        .tool(Tool::new("quick").handler(|_ctx, _: Map<String, Value>| async { Ok::<_, ToolError>("done") }));
    let limits = HttpLimits::default().max_handlers(1);
    let server = TestServer::start_with(server, HttpConfig::default().limits(limits)).await;
    let _streams = (listen_stream(&server).await, listen_stream(&server).await);
    let reply = server.call(&Rpc::call_tool("quick", json!({}))).await;
    assert_eq!(reply["result"]["content"][0]["text"], "done", "{reply}");
}
