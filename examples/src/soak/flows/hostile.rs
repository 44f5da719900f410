//! Hostile traffic, whose right answer is a clean JSON-RPC error: a tampered
//! `requestState` (a flipped character, a truncated token, or a state sealed for another
//! tool), and the replay of a `once!` round whose state was already claimed.

use serde_json::{json, Value};

use super::super::history::{End, Fact, Kind, OpId};
use super::super::rpc::{Answer, Client, Retry};
use super::mrtr::{answer_all, receipt_of, step, Step};
use super::text_of;

const TAMPERED: &str = "test_input_required_result_tampered_state";
/// Asks the same question (`confirm`): its state is valid, but for another tool.
const FOREIGN: &str = "test_input_required_result_request_state";

pub(super) async fn tampered(client: &mut Client) {
    let variant = ["flipped", "truncated", "foreign"][client.rng.index(3)];
    let history = client.shared.history.clone();
    let op = history.begin(Kind::Tampered, json!({ "tool": TAMPERED, "variant": variant }));
    let end = match tamper(client, op, variant).await {
        Ok(()) => End::Done,
        Err(why) => End::Failed(why),
    };
    history.end(op, end);
}

async fn tamper(client: &mut Client, op: OpId, variant: &str) -> Result<(), String> {
    let first_tool = if variant == "foreign" { FOREIGN } else { TAMPERED };
    let Step::Asked { state, requests, .. } = step(client, op, (first_tool, &json!({})), None, Retry::Broken).await?
    else {
        return Err("the first round did not ask".into());
    };
    let responses = answer_all(client, op, &requests);
    let token = state.as_str().unwrap_or_default();
    let bad = match variant {
        "flipped" => {
            // A character of the sealed part (after the `v3.<key id>.` prefix), changed.
            let sealed_from = token.rfind('.').map_or(0, |i| i + 1);
            let at = sealed_from + client.rng.index(token.len().saturating_sub(sealed_from).max(1));
            let mut bytes = token.as_bytes().to_vec();
            if let Some(byte) = bytes.get_mut(at) {
                *byte = if *byte == b'A' { b'B' } else { b'A' };
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        "truncated" => token[..token.len().saturating_sub(8)].to_owned(),
        _ => token.to_owned(),
    };
    let params =
        json!({ "name": TAMPERED, "arguments": {}, "inputResponses": responses, "requestState": Value::String(bad) });
    hostile_round(client, op, params, None).await
}

/// Sends a round that must be refused, and records whether it was (and, for a replayed
/// `once!` round, `once_call`'s receipt if the step was taken again).
async fn hostile_round(client: &mut Client, op: OpId, params: Value, once_call: Option<&str>) -> Result<(), String> {
    let history = client.shared.history.clone();
    match client.modern(op, "tools/call", params, Retry::Unsent).await {
        Ok((Answer::Error { code, .. }, _)) => {
            history.fact(op, Fact::Refused { code });
            Ok(())
        }
        Ok((Answer::Result(result), target)) => {
            if let Some(requests) = result["inputRequests"].as_object() {
                if let (Some(receipt), Some(call_id)) = (receipt_of(requests, target.pid), once_call) {
                    history.fact(op, Fact::Receipt { call_id: call_id.to_owned(), receipt });
                }
            }
            history.fact(op, Fact::Text(text_of(&result)));
            history.fact(op, Fact::Accepted);
            Ok(())
        }
        Ok((Answer::Http(status), _)) => Err(format!("http {status}")),
        Err(error) => Err(error.to_string()),
    }
}

/// Replays a claimed `once!` round; `false` when none is at hand yet.
pub(super) async fn replay(client: &mut Client) -> bool {
    let oldest = client.rng.chance(0.3);
    let Some(consumed) = client.shared.pop_consumed(oldest) else { return false };
    let history = client.shared.history.clone();
    let op = history.begin(
        Kind::Replay,
        json!({ "tool": "test_once_side_effect", "call_id": consumed.call_id, "claimed_ms": consumed.claimed_ms }),
    );
    let params = json!({
        "name": "test_once_side_effect", "arguments": { "call_id": consumed.call_id },
        "inputResponses": consumed.responses, "requestState": consumed.state,
    });
    let end = match hostile_round(client, op, params, Some(&consumed.call_id)).await {
        Ok(()) => End::Done,
        Err(why) => End::Failed(why),
    };
    history.end(op, end);
    true
}
