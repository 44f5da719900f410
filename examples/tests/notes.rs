//! The notes example: its handlers driven in-process as a caller, then the real app over
//! HTTP on 127.0.0.1 with JWTs minted with the development key, then the binary's CLI
//! (which refuses the published development secret unless `--dev` is given).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcp_mrtr::testing::{answer, TestClient};
use mcp_mrtr::Caller;
use mcp_mrtr_examples::notes::auth::{app, AuthConfig, DEV_SECRET};
use mcp_mrtr_examples::notes::server;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn as_user(user: &str) -> TestClient {
    TestClient::new(server()).as_caller(Caller::new(user).with_scopes(["notes:read", "notes:write"]))
}

async fn write(client: &TestClient, title: &str, body: &str) -> Option<String> {
    client.call_tool("write_note", json!({"title": title, "body": body})).start().await.text()
}

#[tokio::test]
async fn overwriting_asks_first_and_decline_or_cancel_keep_the_note() {
    let alice = as_user("alice");
    assert_eq!(write(&alice, "plan", "v1").await.as_deref(), Some("Saved \"plan\"."));
    let replace = |body: &str| alice.call_tool("write_note", json!({"title": "plan", "body": body}));

    let mut declined = replace("v2");
    assert_eq!(declined.start().await.keys(), ["overwrite"]);
    let kept = declined.answer([("overwrite", answer::decline())]).await;
    assert_eq!(kept.text().as_deref(), Some("Kept your existing \"plan\"."));

    let mut cancelled = replace("v2");
    cancelled.start().await;
    let stopped = cancelled.answer([("overwrite", answer::cancel())]).await;
    assert_eq!(stopped.complete().map(|r| r["isError"].clone()), Some(json!(true)));

    let mut said_no = replace("v2");
    said_no.start().await;
    let no = said_no.answer([("overwrite", answer::accept(json!({"overwrite": false})))]).await;
    assert_eq!(no.text().as_deref(), Some("Kept your existing \"plan\"."));
    assert!(alice.read_resource("note://plan").start().await.complete().unwrap().to_string().contains("v1"));

    let mut accepted = replace("v3");
    accepted.start().await;
    let done = accepted.answer([("overwrite", answer::accept(json!({"overwrite": true})))]).await;
    assert_eq!(done.text().as_deref(), Some("Saved \"plan\"."));
    assert!(alice.read_resource("note://plan").start().await.complete().unwrap().to_string().contains("v3"));
}

#[tokio::test]
async fn deleting_needs_the_title_typed_exactly() {
    let bob = as_user("bob");
    write(&bob, "groceries", "milk").await;
    let mut wrong = bob.call_tool("delete_note", json!({"title": "groceries"}));
    wrong.start().await;
    let typo = wrong.answer([("typed", answer::accept(json!({"title": "grocery"})))]).await;
    assert_eq!(typo.text().as_deref(), Some("Not deleted: \"grocery\" is not the note's title."));

    let script = BTreeMap::from([("typed", answer::accept(json!({"title": "groceries"})))]);
    let rounds = bob.call_tool("delete_note", json!({"title": "groceries"})).run(&script, 3).await;
    assert_eq!(rounds.last().and_then(mcp_mrtr::testing::Round::text).as_deref(), Some("Deleted \"groceries\"."));
    let gone = bob.read_resource("note://groceries").start().await;
    assert!(gone.error().is_some(), "a deleted note is not found");
    let again = bob.call_tool("delete_note", json!({"title": "groceries"})).start().await;
    assert!(again.text().is_some_and(|t| t.contains("no note called")), "{:?}", again.complete());
}

#[tokio::test]
async fn the_summary_comes_from_the_client_model_and_notes_are_per_user() {
    let carol = as_user("carol");
    write(&carol, "standup", "shipped auth").await;
    let mut summary = carol.call_tool("summarize_notes", json!({}));
    let asked = summary.start().await;
    assert_eq!(asked.kinds()["summary"], "sampling/createMessage");
    let done = summary.answer([("summary", answer::sampled("Auth shipped."))]).await;
    assert_eq!(done.text().as_deref(), Some("Auth shipped."));

    let prompt = carol.get_prompt("review_note", json!({"title": "standup"})).start().await;
    assert!(prompt.text().is_some_and(|t| t.contains("shipped auth")));
    // Dave's notes are his own: he sees none of Carol's.
    let dave = as_user("dave");
    let listed = dave.call_tool("list_notes", json!({})).start().await;
    assert_eq!(listed.text().as_deref(), Some("You have no notes yet."));
}

#[tokio::test]
async fn writing_needs_the_write_scope() {
    let reader = TestClient::new(server()).as_caller(Caller::new("erin").with_scopes(["notes:read"]));
    let refused = reader.call_tool("write_note", json!({"title": "t", "body": "b"})).start().await;
    assert_eq!(refused.error().map(mcp_mrtr::Error::http_status), Some(403));
}

/// The app on 127.0.0.1 with the development key; returns its address and config.
async fn serve() -> (SocketAddr, AuthConfig) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = AuthConfig::dev(addr.port());
    let app = app(&config).unwrap();
    tokio::spawn(async move { mcp_mrtr::http::serve_router(listener, app).await.unwrap() });
    (addr, config)
}

/// One HTTP/1.1 exchange; returns the status and the body.
async fn http(addr: SocketAddr, method: &str, path: &str, token: Option<&str>, body: &Value) -> (u16, String) {
    let body = if body.is_null() { String::new() } else { body.to_string() };
    let name = body_name(&body);
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nContent-Length: {}\r\n",
        addr.port(),
        body.len()
    );
    if let Some((method, name)) = name {
        let _ = write!(head, "Mcp-Method: {method}\r\nMcp-Name: {name}\r\n");
    }
    if let Some(token) = token {
        let _ = write!(head, "Authorization: Bearer {token}\r\n");
    }
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(format!("{head}\r\n{body}").as_bytes()).await.unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).await.unwrap();
        raw
    };
    let raw = tokio::time::timeout(std::time::Duration::from_secs(10), exchange).await.expect("answered in time");
    let status = raw.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// The `Mcp-Method` and `Mcp-Name` a request body calls for.
fn body_name(body: &str) -> Option<(String, String)> {
    let value: Value = serde_json::from_str(body).ok()?;
    Some((value["method"].as_str()?.to_owned(), value["params"]["name"].as_str()?.to_owned()))
}

fn call(name: &str, arguments: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": name, "arguments": arguments,
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "notes-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }}})
}

#[tokio::test]
async fn over_http_health_is_public_and_mcp_needs_a_token_for_its_own_notes() {
    let (addr, config) = serve().await;
    assert_eq!(http(addr, "GET", "/health", None, &Value::Null).await, (200, "ok".into()));
    let (status, _) = http(addr, "POST", "/mcp", None, &call("list_notes", &json!({}))).await;
    assert_eq!(status, 401);
    let (status, metadata) = http(addr, "GET", "/.well-known/oauth-protected-resource/mcp", None, &Value::Null).await;
    assert_eq!(status, 200);
    let metadata: Value = serde_json::from_str(&metadata).unwrap();
    assert_eq!(metadata["scopes_supported"], json!(["notes:read", "notes:write"]));

    let alice = config.mint("alice", "notes:read notes:write").unwrap();
    let (status, saved) =
        http(addr, "POST", "/mcp", Some(&alice), &call("write_note", &json!({"title": "a", "body": "b"}))).await;
    assert_eq!(status, 200, "{saved}");
    assert!(saved.contains("Saved"), "{saved}");
    let bob = config.mint("bob", "notes:read").unwrap();
    let (_, listed) = http(addr, "POST", "/mcp", Some(&bob), &call("list_notes", &json!({}))).await;
    assert!(listed.contains("You have no notes yet."), "{listed}");
    let (status, _) =
        http(addr, "POST", "/mcp", Some(&bob), &call("write_note", &json!({"title": "x", "body": "y"}))).await;
    assert_eq!(status, 403, "bob's token has no notes:write");
    let foreign =
        AuthConfig { resource: "http://127.0.0.1:1/mcp".into(), ..config }.mint("alice", "notes:read").unwrap();
    let (status, _) = http(addr, "POST", "/mcp", Some(&foreign), &call("list_notes", &json!({}))).await;
    assert_eq!(status, 401, "a token for another resource is refused");
}

#[test]
fn the_binary_prints_usage_and_mints_tokens() {
    let help = Command::new(env!("CARGO_BIN_EXE_notes")).arg("--help").output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--mint-token USER"));
    let minted = Command::new(env!("CARGO_BIN_EXE_notes"))
        .args(["--port", "3000", "--dev", "--mint-token", "alice"])
        .env_remove("NOTES_JWT_SECRET")
        .env_remove("NOTES_ISSUER")
        .env_remove("NOTES_RESOURCE")
        .output()
        .unwrap();
    assert!(minted.status.success());
    let token = String::from_utf8(minted.stdout).unwrap();
    let keys = mcp_mrtr::auth::JwtKeys::hs256(mcp_mrtr_examples::notes::auth::DEV_SECRET).unwrap();
    let jwt =
        mcp_mrtr::auth::JwtVerifier::new(keys, mcp_mrtr_examples::notes::auth::DEV_ISSUER, "http://127.0.0.1:3000/mcp");
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let verified = runtime.block_on(mcp_mrtr::auth::TokenVerifier::verify(&jwt, token.trim())).unwrap();
    assert_eq!(verified.caller.id(), "alice");
    assert!(verified.caller.has_scope("notes:write"));
    let bad = Command::new(env!("CARGO_BIN_EXE_notes")).arg("--bogus").output().unwrap();
    assert!(!bad.status.success());
}

/// The binary started with `args` and `NOTES_JWT_SECRET` set to `secret` (or unset): how
/// it ended and what it said on stderr, or `None` if it was still running after `wait`.
fn run_notes(args: &[&str], secret: Option<&str>, wait: Duration) -> Option<(bool, String)> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_notes"));
    command.args(args).env_remove("NOTES_ISSUER").env_remove("NOTES_RESOURCE");
    match secret {
        Some(secret) => command.env("NOTES_JWT_SECRET", secret),
        None => command.env_remove("NOTES_JWT_SECRET"),
    };
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            let output = child.wait_with_output().unwrap();
            return Some((output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    None
}

/// `serve_router` drains on SIGTERM by default, as `serve(Http…)` does (issue 50): the
/// binary serves with no signal of its own and exits cleanly on SIGTERM.
#[test]
fn the_binary_served_by_serve_router_exits_cleanly_on_sigterm() {
    use std::io::BufRead as _;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_notes"))
        .args(["--port", &port, "--dev"])
        .env_remove("NOTES_JWT_SECRET")
        .env_remove("NOTES_ISSUER")
        .env_remove("NOTES_RESOURCE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("notes: serving") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "notes ended before serving");
    }
    // An answer proves the serving loop runs, and it installs the signal before it accepts
    // anything (a bare connect proves less: the kernel completes it from the bound socket's
    // backlog before the loop is ever polled).
    let mut health = std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).expect("it listens");
    health.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    std::io::Write::write_all(&mut health, request.as_bytes()).unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut health, &mut answer).expect("an answer to /health");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    crate::instance::terminate(&child);
    let status = crate::instance::exit_within(&mut child, Duration::from_secs(10));
    assert!(status.success(), "{status}");
}

#[test]
fn the_binary_refuses_the_published_secret_without_dev() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let wait = Duration::from_secs(10);
    let unset = run_notes(&["--port", &port], None, wait).expect("notes served with the published secret");
    assert!(!unset.0, "notes started without NOTES_JWT_SECRET or --dev");
    assert!(unset.1.contains("NOTES_JWT_SECRET is not set") && unset.1.contains("--dev"), "{}", unset.1);
    let published = run_notes(&["--port", &port], Some(DEV_SECRET), wait).expect("notes served the published secret");
    assert!(!published.0);
    assert!(published.1.contains("published in this repository"), "{}", published.1);
    let minted = run_notes(&["--port", &port, "--mint-token", "mallory"], None, wait).expect("mint ends");
    assert!(!minted.0, "a token signed with the published secret, without --dev");

    let own = run_notes(&["--port", &port, "--mint-token", "alice"], Some("a-secret-of-our-own-of-32-bytes!!"), wait);
    assert_eq!(own.map(|(ok, _)| ok), Some(true), "a secret of one's own needs no --dev");
    // With --dev it serves, until stopped.
    assert!(run_notes(&["--port", &port, "--dev"], None, Duration::from_secs(2)).is_none(), "--dev serves");
}
