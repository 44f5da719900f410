//! 2025-11-25 pools under attack from one client (127.0.0.2) while an honest one
//! (127.0.0.3) keeps being served promptly (audit 2026-12-01, B4 and B11):
//!
//! - calls that wait for their client's answers hold no handler slot, and their own pool
//!   has a share per client: a flood of them is refused at its share, modern requests
//!   are not told "busy", and when the pool is full the heaviest client gives way;
//! - a flood of `initialize` + `ping` is slowed by a rate per client (429 with
//!   `Retry-After`), and however many sessions it opens and uses, a full table makes room
//!   from the flood's own sessions, never from a client holding few.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use mcp_mrtr::{http::HttpConfig, http::HttpLimits};
use mcp_mrtr_tests::client::{self, HttpResponse};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::legacy::{Legacy, Stream};
use serde_json::{json, Value};

const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const HONEST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
const NEWCOMER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 4));

/// How long the honest client may wait for anything: far below the bridge's 300 s, and
/// what "promptly" means on a loaded 2-core machine.
const PROMPTLY: Duration = Duration::from_secs(5);

async fn everything_with(limits: HttpLimits) -> TestServer {
    TestServer::start_with(mcp_mrtr_examples::everything::server(), HttpConfig::default().limits(limits)).await
}

async fn promptly<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PROMPTLY, work).await.unwrap_or_else(|_| panic!("{what} was not served promptly"))
}

/// A call to the `everything` fixture's asking tool from `source`: its open stream and
/// the bridge's question, or the call's error if it was refused before anything was asked.
async fn call_that_asks(source: IpAddr, session: &Legacy, id: i64) -> Result<(Stream, Value), Value> {
    let params = json!({"name": "test_elicitation", "arguments": {"message": "Who are you?"}});
    let mut stream = session.open_from(Some(source), id, "tools/call", params).await;
    let first = stream.next().await.expect("the call says something");
    if first["method"] == "elicitation/create" {
        Ok((stream, first))
    } else {
        Err(first)
    }
}

async fn connect(source: IpAddr, server: &TestServer) -> Legacy {
    Legacy::connect_from(Some(source), server.addr, json!({"elicitation": {}})).await.0
}

/// The attacker's flood: asking calls, two per fresh session, left unanswered, until one
/// is refused. The streams it holds open, and the refusal.
async fn flood_of_waits(server: &TestServer, at_most: i64) -> (Vec<Stream>, Value) {
    let mut held = Vec::new();
    let mut session = connect(ATTACKER, server).await;
    for id in 0..at_most {
        if id % 2 == 1 {
            session = connect(ATTACKER, server).await;
        }
        match call_that_asks(ATTACKER, &session, id).await {
            Ok((stream, _)) => held.push(stream),
            Err(refusal) => return (held, refusal),
        }
    }
    panic!("{} calls waited for answers and none was refused", held.len());
}

/// The honest client's whole asking call on a session of its own: asked, answered,
/// completed.
async fn honest_legacy_call(server: &TestServer) {
    let honest = connect(HONEST, server).await;
    let (mut stream, asked) = call_that_asks(HONEST, &honest, 1).await.expect("the honest call is asked its question");
    let content = json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}});
    honest.answer_from(Some(HONEST), &asked, content).await;
    let reply = stream.next().await.expect("the honest call's reply");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("action=accept"), "{reply}");
}

async fn modern_from(source: IpAddr, server: &TestServer, rpc: &Rpc) -> HttpResponse {
    let headers = rpc.headers();
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    client::send_from(source, server.addr, "POST", &headers, &rpc.body()).await
}

/// More modern requests than there are handler slots, one after another: none is busy.
async fn modern_requests_are_served(server: &TestServer, slots: usize) {
    for _ in 0..=slots {
        let listed = promptly("a modern tools/list", modern_from(HONEST, server, &Rpc::new("tools/list"))).await;
        assert_eq!(listed.status, 200, "a modern request while bridge waits are held: {}", listed.body);
    }
}

fn error_message(reply: &Value) -> &str {
    reply["error"]["message"].as_str().unwrap_or_else(|| panic!("an error reply: {reply}"))
}

#[tokio::test]
async fn a_flood_of_calls_waiting_for_answers_is_refused_at_its_share_and_holds_no_handler_slot() {
    let limits = HttpLimits::default().max_handlers(2).max_bridge_waits(8).max_bridge_waits_per_client(4);
    let server = everything_with(limits).await;
    let (held, refusal) = flood_of_waits(&server, 20).await;
    assert_eq!(held.len(), 4, "the attacker's waits before it was refused: its share, and no fewer");
    assert_eq!(refusal["error"]["code"], -32603, "{refusal}");
    assert!(error_message(&refusal).contains("max_bridge_waits_per_client"), "{refusal}");

    // Four waits, two handler slots: before B4's fix every slot was taken.
    modern_requests_are_served(&server, 2).await;
    promptly("the honest legacy call", honest_legacy_call(&server)).await;
    let honest = connect(HONEST, &server).await;
    let ping = promptly("an honest ping", honest.send_from(Some(HONEST), 9, "ping", json!({}))).await;
    assert_eq!((ping.status, &ping.reply()["result"]), (200, &json!({})), "{}", ping.body);
    drop(held);
}

#[tokio::test]
async fn a_full_pool_of_waits_makes_the_heaviest_client_give_way() {
    let limits = HttpLimits::default().max_handlers(1).max_bridge_waits(4).max_bridge_waits_per_client(4);
    let server = everything_with(limits).await;
    let (mut held, refusal) = flood_of_waits(&server, 20).await;
    assert_eq!(held.len(), 4);
    // The share is the whole pool: the attacker fills it, and is refused past it.
    assert!(error_message(&refusal).contains("max_bridge_waits"), "{refusal}");
    modern_requests_are_served(&server, 1).await;

    // The honest call takes the place of the attacker's oldest wait, which ends clearly.
    promptly("the honest legacy call", honest_legacy_call(&server)).await;
    let ended = promptly("the displaced wait's end", held[0].rest()).await;
    let withdrawn = ended.iter().find(|message| message["method"] == "notifications/cancelled");
    assert!(withdrawn.is_some(), "the displaced question was not withdrawn: {ended:?}");
    let reply = ended.last().expect("the displaced call's reply");
    assert!(error_message(reply).contains("for another client"), "{reply}");
    drop(held);
}

/// `initialize` then one `ping` from `source`: the ping's status, or the refused
/// `initialize` itself.
async fn initialize_and_ping(server: &TestServer, source: IpAddr) -> Result<(Legacy, u16), HttpResponse> {
    let opened = Legacy::initialize_from(Some(source), server.addr, json!({})).await;
    let Some(session) = opened.header("mcp-session-id") else { return Err(opened) };
    let session = Legacy { addr: server.addr, session: session.to_owned() };
    let ping = session.send_from(Some(source), 1, "ping", json!({})).await.status;
    Ok((session, ping))
}

async fn ping(session: &Legacy, source: IpAddr) -> u16 {
    session.send_from(Some(source), 2, "ping", json!({})).await.status
}

#[tokio::test]
async fn a_flood_of_initialize_and_ping_is_refused_by_the_rate_and_spares_a_used_session() {
    // One session a minute after a burst of 4: the test runs well within a minute.
    let limits = HttpLimits::default().max_sessions(8).session_opening_rate(1, 4);
    let server = everything_with(limits).await;
    let (honest, first) = initialize_and_ping(&server, HONEST).await.expect("the honest session");
    assert_eq!(first, 200);

    let (mut opened, mut refused) = (0, Vec::new());
    for _ in 0..40 {
        match initialize_and_ping(&server, ATTACKER).await {
            Ok((_, status)) => {
                assert_eq!(status, 200);
                opened += 1;
            }
            Err(response) => refused.push(response),
        }
    }
    assert_eq!((opened, refused.len()), (4, 36), "the burst, then the rate");
    let response = &refused[0];
    assert_eq!(response.status, 429, "{}", response.body);
    let retry: u64 = response.header("retry-after").expect("Retry-After").parse().expect("whole seconds");
    assert!((1..=60).contains(&retry), "Retry-After: {retry}");
    let reply = response.reply();
    assert_eq!(reply["error"]["data"]["retryAfterSeconds"], retry, "{reply}");
    assert!(error_message(&reply).contains("opens sessions too fast"), "{reply}");

    assert_eq!(promptly("the honest ping", ping(&honest, HONEST)).await, 200, "the used session was pushed out");
    let (_, newcomer) = initialize_and_ping(&server, NEWCOMER).await.expect("another client opens a session");
    assert_eq!(newcomer, 200);
}

#[tokio::test]
async fn a_full_table_makes_room_from_the_flood_and_never_from_a_client_holding_few() {
    // A rate that does not stop the flood: the table's own rule must.
    let limits = HttpLimits::default().max_sessions(8).session_opening_rate(60_000, 1_000);
    let server = everything_with(limits).await;
    let mut honest = Vec::new();
    for _ in 0..2 {
        let (session, status) = initialize_and_ping(&server, HONEST).await.expect("an honest session");
        assert_eq!(status, 200);
        honest.push(session);
    }

    let mut flood = Vec::new();
    for _ in 0..100 {
        let (session, status) = initialize_and_ping(&server, ATTACKER).await.expect("the table always makes room");
        assert_eq!(status, 200, "a flood session lost before its first ping");
        flood.push(session);
    }
    for session in &honest {
        assert_eq!(promptly("an honest ping", ping(session, HONEST)).await, 200, "a used session was pushed out");
    }
    assert_eq!(ping(&flood[0], ATTACKER).await, 404, "the flood's own oldest session should have made room");
    assert_eq!(ping(&flood[99], ATTACKER).await, 200);

    let (newcomer, status) = initialize_and_ping(&server, NEWCOMER).await.expect("a newcomer gets room");
    assert_eq!(status, 200);
    for session in &honest {
        assert_eq!(ping(session, HONEST).await, 200, "the newcomer's room came from a client holding few");
    }
    assert_eq!(ping(&newcomer, NEWCOMER).await, 200);
}
