//! Fair under pressure (no bound hands the server to whoever fills it first), over real
//! sockets on loopback: the single-use guard,
//! listen streams and connections each have a bound that one client cannot turn into a
//! lockout. Every test runs an attack and shows an honest client served promptly while
//! it goes on. The attacker connects from 127.0.0.2 and the honest client from 127.0.0.3
//! where a test is about per-client shares; the shedding tests also run with both on
//! 127.0.0.1.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_mrtr::testing::answer;
use mcp_mrtr::{
    catalog::Subscriptions, http::HttpConfig, http::HttpLimits, http::ListenerLimits, protocol::Tool,
    request_state::MemoryGuard, request_state::StateConfig, Server, ToolError,
};
use mcp_mrtr_tests::client::{self, TIMEOUT};
use mcp_mrtr_tests::harness::{Rpc, TestServer, USED};
use mcp_mrtr_tests::listen::ListenStream;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const HONEST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn ok() -> Value {
    answer::accept(json!({ "ok": true }))
}

fn retry(rpc: &Rpc, answers: Value, state: &Value) -> Rpc {
    rpc.clone().param("inputResponses", answers).param("requestState", state.clone())
}

/// Runs `test_once_side_effect` from `source` up to its `once!` step and past it: the
/// state of round 1 and the reply of round 2.
async fn once_to_the_step(server: &TestServer, source: IpAddr, call_id: &str) -> (Rpc, Value, Value) {
    let rpc = Rpc::call_tool("test_once_side_effect", json!({ "call_id": call_id }));
    let first = server.call_from(source, &rpc).await["result"]["requestState"].clone();
    let second = server.call_from(source, &retry(&rpc, json!({ "start": ok() }), &first)).await;
    (rpc, first, second)
}

#[tokio::test]
async fn rounds_that_take_no_once_step_never_touch_the_guard() {
    // A guard of one entry: were plain rounds claimed, the second flow would already fail.
    let server = TestServer::start(
        mcp_mrtr_examples::everything::server()
            .request_state(StateConfig::default().single_use(MemoryGuard::with_capacity(1))),
    )
    .await;
    let rpc = Rpc::call_tool("test_input_required_result_multi_round", json!({}));
    for n in 0..20 {
        let state = server.call(&rpc).await["result"]["requestState"].clone();
        let step1 = json!({ "step1": answer::accept(json!({ "name": format!("Ada{n}") })) });
        let second = server.call(&retry(&rpc, step1.clone(), &state)).await;
        assert_eq!(second["result"]["resultType"], "input_required", "{second}");
        // Presenting a side-effect-free round again just runs it again.
        let again = server.call(&retry(&rpc, step1, &state)).await;
        assert_eq!(again["result"]["resultType"], "input_required", "{again}");
        let step2 = json!({ "step2": answer::accept(json!({ "color": "red" })) });
        let done = server.call(&retry(&rpc, step2, &second["result"]["requestState"])).await;
        assert_eq!(done["result"]["content"][0]["text"], format!("Ada{n} likes red"), "{done}");
    }
}

#[tokio::test]
async fn a_client_flooding_the_guard_fails_only_its_own_calls() {
    let guard = MemoryGuard::with_capacity(64).with_share(8);
    let server = TestServer::start(
        mcp_mrtr_examples::everything::server().request_state(StateConfig::default().single_use(guard)),
    )
    .await;
    // The attacker keeps one call's first state unpresented, then takes 40 steps.
    let held = Rpc::call_tool("test_once_side_effect", json!({ "call_id": "attacker-held" }));
    let held_state = server.call_from(ATTACKER, &held).await["result"]["requestState"].clone();
    // States carry their expiry to the millisecond: every state of the flood expires later.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let honest_call = Rpc::call_tool("test_once_side_effect", json!({ "call_id": "honest" }));
    let honest_first = server.call_from(HONEST, &honest_call).await["result"]["requestState"].clone();
    for n in 0..40 {
        let (_, _, second) = once_to_the_step(&server, ATTACKER, &format!("attacker-{n}")).await;
        assert_eq!(second["result"]["resultType"], "input_required", "the attacker's own fresh calls go on: {second}");
    }
    // The honest client, whose call started before the flood, is not touched by it.
    let second = server.call_from(HONEST, &retry(&honest_call, json!({ "start": ok() }), &honest_first)).await;
    assert_eq!(second["result"]["inputRequests"]["finish"]["params"]["message"], "Step 1 done. Finish?", "{second}");
    let done = server
        .call_from(HONEST, &retry(&honest_call, json!({ "finish": ok() }), &second["result"]["requestState"]))
        .await;
    assert_eq!(done["result"]["content"][0]["text"], "call honest: the once step ran 1 time(s), finished=true");
    // The attacker's oldest waiting state was given up with its share: refused, never run.
    let refused = server.call_from(ATTACKER, &retry(&held, json!({ "start": ok() }), &held_state)).await;
    assert_eq!(refused["error"]["message"], USED, "{refused}");
}

#[tokio::test]
async fn a_replayed_state_never_runs_its_once_step_twice_even_past_the_guards_share() {
    let guard = MemoryGuard::with_capacity(16).with_share(4);
    let server = TestServer::start(
        mcp_mrtr_examples::everything::server().request_state(StateConfig::default().single_use(guard)),
    )
    .await;
    let mut firsts = Vec::new();
    for n in 0..12 {
        let (rpc, first, second) = once_to_the_step(&server, ATTACKER, &format!("replay-{n}")).await;
        assert_eq!(second["result"]["resultType"], "input_required");
        firsts.push((rpc, first));
    }
    for (rpc, first) in &firsts {
        let replayed = server.call_from(ATTACKER, &retry(rpc, json!({ "start": ok() }), first)).await;
        assert_eq!(replayed["error"]["message"], USED, "used or given up, never run again: {replayed}");
    }
}

/// An open `subscriptions/listen` stream from `source`, read to its acknowledgement (or
/// its refusal).
struct Stream(ListenStream);

impl Stream {
    async fn open(addr: SocketAddr, source: IpAddr) -> Self {
        Self::open_as(addr, source, None).await
    }

    /// [`Stream::open`] through a proxy that says the client is `forwarded_for`.
    async fn open_as(addr: SocketAddr, source: IpAddr, forwarded_for: Option<&str>) -> Self {
        let rpc = Rpc::new("subscriptions/listen").param("notifications", json!({ "toolsListChanged": true }));
        let mut stream = ListenStream::open(addr, Some(source), &rpc.header("x-forwarded-for", forwarded_for)).await;
        stream.read_until("data: ").await;
        Self(stream)
    }

    fn seen(&self) -> &str {
        self.0.seen()
    }

    fn acknowledged(&self) -> bool {
        self.seen().contains("notifications/subscriptions/acknowledged")
    }

    /// Whether the stream ends with its result (`resultType: complete`) in time.
    async fn ends_with_result(&mut self) -> bool {
        self.0.read_until("\"resultType\":\"complete\"").await
    }
}

fn listen_server(listen: Subscriptions) -> (mcp_mrtr::Server, HttpConfig) {
    (mcp_mrtr_examples::everything::server().subscriptions(listen), HttpConfig::default())
}

async fn assert_served_from(server: &TestServer, source: IpAddr) {
    let started = tokio::time::Instant::now();
    let reply = server.call_from(source, &Rpc::new("tools/list")).await;
    assert!(reply["result"]["tools"].is_array(), "{reply}");
    assert!(started.elapsed() < Duration::from_secs(2), "served, but not promptly: {:?}", started.elapsed());
}

#[tokio::test]
async fn one_client_holds_at_most_its_share_of_listen_streams() {
    let (server, config) = listen_server(Subscriptions::default().max_streams(8).max_streams_per_client(3));
    let server = TestServer::start_with(server, config).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let stream = Stream::open(server.addr, ATTACKER).await;
        assert!(stream.acknowledged(), "{}", stream.seen());
        held.push(stream);
    }
    let refused = Stream::open(server.addr, ATTACKER).await;
    assert!(refused.seen().contains("too many listen streams from this client"), "{}", refused.seen());
    let honest = Stream::open(server.addr, HONEST).await;
    assert!(honest.acknowledged(), "another client listens: {}", honest.seen());
    assert_served_from(&server, HONEST).await;
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_address_has_its_own_share() {
    let listen = Subscriptions::default().max_streams(8).max_streams_per_client(2);
    let server = mcp_mrtr_examples::everything::server().subscriptions(listen.clone());
    let trusting = TestServer::start_with(server, HttpConfig::default().trust_forwarded_for(true)).await;
    let mut held = Vec::new();
    for client in ["198.51.100.7", "198.51.100.8"] {
        for _ in 0..2 {
            let stream = Stream::open_as(trusting.addr, LOCAL, Some(&format!("203.0.113.1, {client}"))).await;
            assert!(stream.acknowledged(), "{client}: {}", stream.seen());
            held.push(stream);
        }
        let refused = Stream::open_as(trusting.addr, LOCAL, Some(client)).await;
        assert!(refused.seen().contains("too many listen streams"), "{client}: {}", refused.seen());
    }
    // Without trust, the header is ignored: one peer, one share.
    let server = mcp_mrtr_examples::everything::server().subscriptions(listen);
    let plain = TestServer::start_with(server, HttpConfig::default()).await;
    let _held = (
        Stream::open_as(plain.addr, LOCAL, Some("198.51.100.7")).await,
        Stream::open_as(plain.addr, LOCAL, Some("198.51.100.8")).await,
    );
    let refused = Stream::open_as(plain.addr, LOCAL, Some("198.51.100.9")).await;
    assert!(refused.seen().contains("too many listen streams"), "{}", refused.seen());
}

#[tokio::test]
async fn a_full_listen_pool_ends_the_heaviest_clients_oldest_stream() {
    let (server, config) = listen_server(Subscriptions::default().max_streams(4).max_streams_per_client(4));
    let server = TestServer::start_with(server, config).await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(Stream::open(server.addr, ATTACKER).await);
    }
    let honest = Stream::open(server.addr, HONEST).await;
    assert!(honest.acknowledged(), "the newcomer is admitted: {}", honest.seen());
    assert!(
        held[0].ends_with_result().await,
        "the oldest stream of the heaviest client ends cleanly: {}",
        held[0].seen()
    );
    let honest_too = Stream::open(server.addr, HONEST).await;
    assert!(honest_too.acknowledged(), "3 against 1: the heaviest gives way again: {}", honest_too.seen());
}

#[tokio::test]
async fn a_listen_stream_ends_with_its_result_at_its_maximum_lifetime() {
    let listen = Subscriptions::default().max_lifetime(Duration::from_millis(300));
    let (server, config) = listen_server(listen);
    let server = TestServer::start_with(server, config).await;
    let mut stream = Stream::open(server.addr, LOCAL).await;
    assert!(stream.ends_with_result().await, "{}", stream.seen());
}

/// Connections that started a request head and stalled, from `source`.
async fn stalled_heads(addr: SocketAddr, source: IpAddr, count: usize) -> Vec<TcpStream> {
    let mut stalled = Vec::new();
    for _ in 0..count {
        let mut socket = client::connect_from(Some(source), addr).await;
        socket.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Slow: a").await.unwrap();
        stalled.push(socket);
    }
    stalled
}

#[tokio::test]
async fn slow_headers_at_the_connection_cap_give_way_to_a_real_request() {
    for (attacker, honest) in [(ATTACKER, HONEST), (LOCAL, LOCAL)] {
        let limits = ListenerLimits::default().max_connections(16).header_timeout(Duration::from_secs(30));
        let server =
            TestServer::start_listening(mcp_mrtr_examples::everything::server(), HttpConfig::default(), limits).await;
        let _stalled = stalled_heads(server.addr, attacker, 16).await;
        // The attacker keeps reconnecting; every honest request is still served.
        for _ in 0..5 {
            let _more = stalled_heads(server.addr, attacker, 4).await;
            assert_served_from(&server, honest).await;
        }
    }
}

#[tokio::test]
async fn listen_streams_at_the_connection_cap_give_way_to_a_lighter_client() {
    let listen = Subscriptions::default().max_streams(64).max_streams_per_client(64);
    let limits = ListenerLimits::default().max_connections(8).header_timeout(Duration::from_secs(30));
    let (server, config) = listen_server(listen);
    let server = TestServer::start_listening(server, config, limits).await;
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(Stream::open(server.addr, ATTACKER).await);
    }
    assert_served_from(&server, HONEST).await;
    // The attacker reconnects the stream it lost; its next connection then finds nobody
    // heavier than itself to make room: 503.
    held.push(Stream::open(server.addr, ATTACKER).await);
    let mut extra = client::connect_from(Some(ATTACKER), server.addr).await;
    let mut answer = Vec::new();
    tokio::time::timeout(TIMEOUT, extra.read_to_end(&mut answer)).await.expect("answered").unwrap();
    assert!(answer.starts_with(b"HTTP/1.1 503"), "{}", String::from_utf8_lossy(&answer));
}

/// A server whose `hold` tool sleeps (counting how many started) and `quick` answers.
fn holding_server(started: Arc<AtomicUsize>) -> Server {
    let hold = Tool::new("hold").handler(move |_ctx, _: Map<String, Value>| {
        started.fetch_add(1, Ordering::SeqCst);
        async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, ToolError>("woke up")
        }
    });
    let quick = Tool::new("quick").handler(|_ctx, _: Map<String, Value>| async { Ok::<_, ToolError>("done") });
    Server::new("slots", "1").tool(hold).tool(quick)
}

/// Starts `hold` from `source` and leaves it running; the open socket reads its answer.
async fn hold_from(server: &TestServer, source: IpAddr) -> TcpStream {
    let hold = Rpc::call_tool("hold", json!({}));
    let headers = hold.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    client::open_from(Some(source), server.addr, &headers, &hold.body()).await
}

async fn running(started: &AtomicUsize, count: usize) {
    let all = async {
        while started.load(Ordering::SeqCst) < count {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(TIMEOUT, all).await.expect("the handlers start");
}

#[tokio::test]
async fn one_client_runs_at_most_its_share_of_handlers_and_the_heaviest_gives_way_when_all_are_taken() {
    let started = Arc::new(AtomicUsize::new(0));
    let limits = HttpLimits::default().max_handlers(4).max_handlers_per_client(3);
    let server = TestServer::start_with(holding_server(started.clone()), HttpConfig::default().limits(limits)).await;
    let mut oldest = hold_from(&server, ATTACKER).await;
    running(&started, 1).await;
    let _more = (hold_from(&server, ATTACKER).await, hold_from(&server, ATTACKER).await);
    running(&started, 3).await;
    let refused = server.send(&Rpc::call_tool("quick", json!({}))).await;
    assert_eq!(refused.status, 200, "the attacker's share is not 127.0.0.1's: {}", refused.body);
    let over_share = {
        let quick = Rpc::call_tool("quick", json!({}));
        let headers = quick.headers();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        client::send_from(ATTACKER, server.addr, "POST", &headers, &quick.body()).await
    };
    assert_eq!(over_share.status, 503, "{}", over_share.body);
    assert!(over_share.body.contains("max_handlers_per_client"), "{}", over_share.body);
    // A second attacker address takes the last slot: every slot is busy.
    let _fourth = hold_from(&server, IpAddr::V4(Ipv4Addr::new(127, 0, 0, 4))).await;
    running(&started, 4).await;
    // The honest client is served: the client running the most gives up its oldest.
    let started_at = tokio::time::Instant::now();
    let honest_reply = server.call_from(HONEST, &Rpc::call_tool("quick", json!({}))).await;
    assert_eq!(honest_reply["result"]["content"][0]["text"], "done", "{honest_reply}");
    assert!(started_at.elapsed() < Duration::from_secs(2), "{:?}", started_at.elapsed());
    let mut answer = Vec::new();
    tokio::time::timeout(TIMEOUT, oldest.read_to_end(&mut answer)).await.expect("answered").unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.contains("make room for another client"), "{answer}");
}

#[tokio::test]
async fn a_listen_stream_on_a_keep_alive_connection_closes_it_when_it_ends() {
    let listen = Subscriptions::default().max_lifetime(Duration::from_millis(300));
    let (server, config) = listen_server(listen);
    let server = TestServer::start_with(server, config).await;
    // Not `Connection: close`, as the other tests' client sends: a keep-alive request.
    let rpc = Rpc::new("subscriptions/listen").param("notifications", json!({ "toolsListChanged": true }));
    let body = rpc.body();
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in rpc.headers() {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    let mut socket = TcpStream::connect(server.addr).await.unwrap();
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(&body).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(TIMEOUT, socket.read_to_end(&mut answer)).await.expect("the connection closes").unwrap();
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    // The stream left hyper once acknowledged: the response said the connection would
    // close with it, and the body ends as HTTP/1.1 says, with the last chunk.
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
    assert!(answer.contains("\"resulttype\":\"complete\""), "{answer}");
    assert!(answer.ends_with("\n\n\r\n0\r\n\r\n"), "{answer:?}");
}
