//! Listen streams (`subscriptions/listen` for tool-list changes), the triggers that
//! change the list (`test_trigger_tool_change`), and the fault of a client that opens a
//! listen stream and stops reading it.

use std::time::{Duration, Instant};

use serde_json::json;

use super::super::client::{self, Transport};
use super::super::cluster::Target;
use super::super::history::{End, Fact, Kind, OpId, Outcome};
use super::super::rpc::{modern_request, Answer, Client, Retry, REQUEST_DEADLINE};
use super::text_of;

const LIST_CHANGED: &str = "notifications/tools/list_changed";
const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

fn listen_request(client: &mut Client) -> client::Request {
    let id = client.id();
    modern_request("subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }), id)
}

/// Opens a listen stream on `target` and reads to its acknowledgement; on failure, says
/// whether nothing was sent (the next instance may be tried) and why.
async fn open(
    client: &mut Client,
    op: OpId,
    target: Target,
    receive_buffer: Option<u32>,
) -> Result<client::Stream, (bool, String)> {
    let request = listen_request(client);
    let started = Instant::now();
    let opened = client::open(client.source, target.addr, &request, REQUEST_DEADLINE, receive_buffer).await;
    let mut stream = match opened {
        Ok(stream) => stream,
        Err(error) => {
            client.record(op, target, "subscriptions/listen", started, Outcome::Transport(error.clone()));
            return Err((matches!(error, Transport::Connect(_)), error.to_string()));
        }
    };
    let first = stream.next(REQUEST_DEADLINE).await;
    let outcome = match &first {
        Ok(Some(message)) if message["method"] == ACKNOWLEDGED => Outcome::Result("acknowledged".into()),
        Ok(Some(message)) => Answer::of(&stream.head, std::slice::from_ref(message)).outcome(),
        Ok(None) => Outcome::Http(stream.head.status),
        Err(error) => Outcome::Transport(error.clone()),
    };
    client.record(op, target, "subscriptions/listen", started, outcome.clone());
    match outcome {
        Outcome::Result(ref ack) if ack == "acknowledged" => Ok(stream),
        other => Err((false, format!("not acknowledged: {other:?}"))),
    }
}

/// One listener: a stream on the next instance, read for a while (5–20 s), then closed.
pub(super) async fn listen(client: &mut Client) {
    let history = client.shared.history.clone();
    let planned = Duration::from_millis(client.rng.range(5_000, 20_000));
    let op = history.begin(Kind::Listen, json!({ "planned_ms": planned.as_millis() }));
    let mut attempts = 0;
    let (target, mut stream) = loop {
        let Some(target) = client.shared.cluster.next() else {
            return history.end(op, End::Failed("no live instance".into()));
        };
        match open(client, op, target, None).await {
            Ok(stream) => break (target, stream),
            Err((true, _)) if attempts < 2 => attempts += 1,
            Err((_, why)) => return history.end(op, End::Failed(why)),
        }
    };
    history.bind(op, target);
    history.fact(op, Fact::Listening);
    // Past the run's end nothing is triggered any more: no reason to stay.
    let until = (Instant::now() + planned).min(client.shared.stop_at + Duration::from_secs(1));
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            history.fact(op, Fact::StreamEnded { how: "closed".into() });
            return history.end(op, End::Done);
        }
        match stream.next(left).await {
            Ok(Some(message)) if message["method"] == LIST_CHANGED => history.fact(op, Fact::Notified),
            Ok(Some(message)) if message.get("id").is_some() => {
                let how = if message.get("result").is_some() { "result" } else { "error" };
                history.fact(op, Fact::StreamEnded { how: how.into() });
                return history.end(op, End::Failed(format!("the server ended the stream with its {how}")));
            }
            // Keep-alive comments come every 15 s; silence until the plan's end is fine.
            Ok(Some(_)) | Err(Transport::Timeout) => {}
            Ok(None) => {
                history.fact(op, Fact::StreamEnded { how: "eof".into() });
                return history.end(op, End::Failed("the stream ended without its result".into()));
            }
            Err(error) => {
                history.fact(op, Fact::StreamEnded { how: error.to_string() });
                return history.end(op, End::Failed(error.to_string()));
            }
        }
    }
}

/// One change of the tool list, on the next instance. Not retried once sent: whether a
/// cut-off trigger changed the list is unknown.
pub(crate) async fn trigger(client: &mut Client) {
    let history = client.shared.history.clone();
    let op = history.begin(Kind::Trigger, json!({ "tool": "test_trigger_tool_change" }));
    let params = json!({ "name": "test_trigger_tool_change", "arguments": {} });
    let end = match client.modern(op, "tools/call", params, Retry::Unsent).await {
        Ok((Answer::Result(result), _)) => {
            history.fact(op, Fact::Text(text_of(&result)));
            End::Done
        }
        Ok((answer, _)) => End::Failed(format!("{:?}", answer.outcome())),
        Err(error) => End::Failed(error.to_string()),
    };
    history.end(op, end);
}

/// The fault of a client that stops reading: a listen stream with a small receive
/// buffer, acknowledged, then left unread for `stall` while `burst` changes are made
/// (ordinary trigger operations, which every other listener must hear). Returns what
/// became of the stream, for the fault's note.
pub(crate) async fn stalled_listener(client: &mut Client, target: Target, stall: Duration, burst: usize) -> String {
    let history = client.shared.history.clone();
    // Marked stalled: the checks and the summary leave it out (the fault's note says what became of it).
    let op = history.begin(Kind::Listen, json!({ "stalled": target.to_string() }));
    history.bind(op, target);
    let mut stream = match open(client, op, target, Some(4096)).await {
        Ok(stream) => stream,
        Err((_, why)) => {
            history.end(op, End::Failed(why.clone()));
            return format!("could not open: {why}");
        }
    };
    history.end(op, End::Done);
    let started = Instant::now();
    for _ in 0..burst {
        trigger(client).await;
    }
    tokio::time::sleep(stall.saturating_sub(started.elapsed())).await;
    // Now read what is there: the notifications, or the end the server gave it.
    let (mut notified, mut end) = (0, "still open".to_owned());
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        match stream.next(Duration::from_millis(500)).await {
            Ok(Some(message)) if message["method"] == LIST_CHANGED => notified += 1,
            Ok(Some(message)) if message.get("id").is_some() => {
                end = "ended by the server with its result".into();
                break;
            }
            Ok(Some(_)) | Err(Transport::Timeout) => {}
            Ok(None) => {
                end = "ended by the server".into();
                break;
            }
            Err(error) => {
                end = error.to_string();
                break;
            }
        }
    }
    format!("unread for {:.0} s during {burst} changes; then read {notified} notifications; {end}", stall.as_secs_f64())
}
