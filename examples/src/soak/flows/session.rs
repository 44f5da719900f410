//! 2025-11-25 sessions through the bridge: `initialize` on one instance (the session
//! stays there: affinity), `notifications/initialized`, a few tool calls whose questions
//! arrive as server-to-client requests on the call's SSE stream and are answered by
//! POSTing the response, then `DELETE`. If the session's instance dies, its calls fail
//! (refused, cut off, or 404 from a stranger) and the next session opens elsewhere.

use std::time::Instant;

use serde_json::{json, Value};

use super::super::client::{self, Request, Transport};
use super::super::cluster::Target;
use super::super::history::{End, Fact, Kind, OpId, Outcome};
use super::super::rpc::{legacy_request, Answer, Client, REQUEST_DEADLINE};
use super::mrtr::answer;
use super::text_of;

pub(super) async fn run(client: &mut Client) {
    let history = client.shared.history.clone();
    let calls = client.rng.range(2, 4);
    let op = history.begin(Kind::Session, json!({ "calls": calls }));
    let end = match session(client, op, calls).await {
        Ok(()) => End::Done,
        Err(why) => End::Failed(why),
    };
    history.end(op, end);
}

/// Opens a session on the next instance (the next again when one refuses the
/// connection) and binds the operation to it.
async fn initialize(client: &mut Client, op: OpId) -> Result<(Target, String), String> {
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": { "elicitation": {}, "sampling": {} },
        "clientInfo": { "name": "soak", "version": "0" } } });
    let request = legacy_request("POST", None, &init);
    for attempt in 0..3 {
        let target = client.shared.cluster.next().ok_or("no live instance")?;
        let head = match client.send(op, target, "initialize", &request).await {
            Ok((head, _)) => head,
            Err(Transport::Connect(_)) if attempt < 2 => continue,
            Err(error) => return Err(error.to_string()),
        };
        if head.status != 200 {
            return Err(format!("initialize: http {}", head.status));
        }
        let session = head.header("mcp-session-id").ok_or("initialize: no Mcp-Session-Id")?.to_owned();
        client.shared.history.bind(op, target);
        return Ok((target, session));
    }
    Err("no instance took the session".into())
}

async fn session(client: &mut Client, op: OpId, calls: u64) -> Result<(), String> {
    let (target, session) = initialize(client, op).await?;
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    expect_202(client, op, target, "notifications/initialized", &legacy_request("POST", Some(&session), &initialized))
        .await?;
    for id in 1..=calls {
        call(client, op, target, &session, id).await?;
    }
    let mut delete = legacy_request("DELETE", Some(&session), &Value::Null);
    delete.body.clear();
    let (head, _) = client.send(op, target, "DELETE session", &delete).await.map_err(|e| e.to_string())?;
    if head.status != 200 {
        return Err(format!("DELETE: http {}", head.status));
    }
    Ok(())
}

async fn expect_202(client: &Client, op: OpId, target: Target, label: &str, request: &Request) -> Result<(), String> {
    let (head, _) = client.send(op, target, label, request).await.map_err(|e| e.to_string())?;
    if head.status == 202 {
        Ok(())
    } else {
        Err(format!("{label}: http {}", head.status))
    }
}

/// One tool call on the session: answers each question the bridge asks on the stream,
/// until the call's own response.
async fn call(client: &mut Client, op: OpId, target: Target, session: &str, id: u64) -> Result<(), String> {
    let (tool, arguments) = if client.rng.chance(0.5) {
        ("test_elicitation", json!({ "message": format!("Who are you ({id})?") }))
    } else {
        ("test_sampling", json!({ "prompt": format!("Say something ({id}).") }))
    };
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments } });
    let started = Instant::now();
    let label = "tools/call (bridge)";
    let request = legacy_request("POST", Some(session), &body);
    let mut stream = match client::open(client.source, target.addr, &request, REQUEST_DEADLINE, None).await {
        Ok(stream) => stream,
        Err(error) => {
            client.record(op, target, label, started, Outcome::Transport(error.clone()));
            return Err(error.to_string());
        }
    };
    loop {
        let message = match stream.next(REQUEST_DEADLINE).await {
            Ok(Some(message)) => message,
            Ok(None) => {
                client.record(op, target, label, started, Outcome::Http(stream.head.status));
                return Err(format!("the call's stream ended before its response (http {})", stream.head.status));
            }
            Err(error) => {
                client.record(op, target, label, started, Outcome::Transport(error.clone()));
                return Err(error.to_string());
            }
        };
        if message.get("method").is_some() && message.get("id").is_some() {
            // The bridge asks: answer on the session, then read on.
            let value = answer(&mut client.rng, &message);
            client.shared.history.fact(op, Fact::Answered { key: tool.to_owned(), value: value.clone() });
            let response = json!({ "jsonrpc": "2.0", "id": message["id"], "result": value });
            expect_202(client, op, target, "answer (bridge)", &legacy_request("POST", Some(session), &response))
                .await?;
        } else if message.get("id") == Some(&json!(id)) {
            let answer = Answer::of(&stream.head, std::slice::from_ref(&message));
            client.record(op, target, label, started, answer.outcome());
            return match answer {
                Answer::Result(result) => {
                    client.shared.history.fact(op, Fact::Text(text_of(&result)));
                    Ok(())
                }
                other => Err(format!("{tool}: {:?}", other.outcome())),
            };
        }
    }
}
