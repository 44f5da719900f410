//! Multi round-trip flows: a `tools/call` answered `input_required`, retried with the
//! answers and the sealed `requestState` until it completes, each round on whichever
//! instance the spreader picks. `once` drives `test_once_side_effect` and records the
//! receipt of its step: who took it.

use serde_json::{json, Map, Value};

use super::super::cluster::{Cluster, Target};
use super::super::history::{End, Fact, Kind, OpId};
use super::super::rng::Rng;
use super::super::rpc::{Answer, Client, Retry};
use super::{text_of, Consumed};

/// The most rounds a flow takes before it gives up.
const MAX_ROUNDS: usize = 6;

/// Where a call stands after one round.
pub(super) enum Step {
    /// The server asks: these questions, with this state to send back.
    Asked { state: Value, requests: Map<String, Value>, target: Target },
    /// The call ended with this result (`complete`, or a created task).
    Done { result: Value, target: Target },
}

/// One round of `tool`: the first call, or a retry with `(responses, state)`. A round
/// cut off mid-way is sent again elsewhere (`Retry::Broken`) when repeating it is safe:
/// a round without side effects, or one whose state is single-use anyway.
pub(super) async fn step(
    client: &mut Client,
    op: OpId,
    call: (&str, &Value),
    prior: Option<(&Value, &Value)>,
    retry: Retry,
) -> Result<Step, String> {
    let instances = client.shared.cluster.clone();
    step_via(client, &instances, op, call, prior, retry).await
}

/// [`step`] through `via` instead of the instances.
pub(super) async fn step_via(
    client: &mut Client,
    via: &Cluster,
    op: OpId,
    (tool, arguments): (&str, &Value),
    prior: Option<(&Value, &Value)>,
    retry: Retry,
) -> Result<Step, String> {
    let mut params = json!({ "name": tool, "arguments": arguments });
    if let Some((responses, state)) = prior {
        params["inputResponses"] = responses.clone();
        params["requestState"] = state.clone();
    }
    match client.modern_via(via, op, "tools/call", params, retry).await {
        Ok((Answer::Result(result), target)) => {
            if result["resultType"] == "input_required" {
                let requests = result["inputRequests"].as_object().cloned().unwrap_or_default();
                let state = result["requestState"].clone();
                if requests.is_empty() || !state.is_string() {
                    return Err(format!("an input_required result without questions or state: {result}"));
                }
                Ok(Step::Asked { state, requests, target })
            } else {
                Ok(Step::Done { result, target })
            }
        }
        Ok((Answer::Error { code, message }, _)) => Err(format!("error {code}: {message}")),
        Ok((Answer::Http(status), _)) => Err(format!("http {status}")),
        Err(transport) => Err(transport.to_string()),
    }
}

/// An answer to one question, as a client would give it: forms filled with fresh
/// values, a sampled text, a few roots.
pub(super) fn answer(rng: &mut Rng, request: &Value) -> Value {
    match request["method"].as_str().unwrap_or_default() {
        "elicitation/create" => {
            let mut content = Map::new();
            let properties = request["params"]["requestedSchema"]["properties"].as_object().cloned();
            for (name, schema) in properties.unwrap_or_default() {
                let value = match schema["type"].as_str() {
                    // `ok` starts and finishes the once flow; other yes/no questions vary.
                    Some("boolean") => json!(name == "ok" || rng.chance(0.8)),
                    Some("integer" | "number") => json!(rng.below(100)),
                    _ => json!(format!("{name}-{}", rng.token())),
                };
                content.insert(name, value);
            }
            json!({ "action": "accept", "content": content })
        }
        "sampling/createMessage" => json!({
            "role": "assistant", "content": { "type": "text", "text": format!("soak-{}", rng.token()) },
            "model": "soak", "stopReason": "endTurn",
        }),
        _ => {
            let roots: Vec<Value> = (0..rng.below(4))
                .map(|i| json!({ "uri": format!("file:///soak/{i}"), "name": format!("root {i}") }))
                .collect();
            json!({ "roots": roots })
        }
    }
}

/// Answers every question, recording each answer.
pub(super) fn answer_all(client: &mut Client, op: OpId, requests: &Map<String, Value>) -> Value {
    let mut responses = Map::new();
    for (key, request) in requests {
        let value = answer(&mut client.rng, request);
        client.shared.history.fact(op, Fact::Answered { key: key.clone(), value: value.clone() });
        responses.insert(key.clone(), value);
    }
    Value::Object(responses)
}

/// An elicitation, sampling, roots or multi-round flow, to its end.
pub(super) async fn plain(client: &mut Client, kind: Kind) {
    let tool = match kind {
        Kind::Elicitation => "test_input_required_result_elicitation",
        Kind::Sampling => "test_input_required_result_sampling",
        Kind::Roots => "test_input_required_result_list_roots",
        _ if client.rng.chance(0.5) => "test_input_required_result_multiple_inputs",
        _ => "test_input_required_result_multi_round",
    };
    let history = client.shared.history.clone();
    let op = history.begin(kind, json!({ "tool": tool }));
    let arguments = json!({});
    let mut prior: Option<(Value, Value)> = None;
    for _ in 0..MAX_ROUNDS {
        match step(client, op, (tool, &arguments), prior.as_ref().map(|(r, s)| (r, s)), Retry::Broken).await {
            Ok(Step::Asked { state, requests, .. }) => prior = Some((answer_all(client, op, &requests), state)),
            Ok(Step::Done { result, .. }) => {
                history.fact(op, Fact::Text(text_of(&result)));
                return history.end(op, End::Done);
            }
            Err(why) => return history.end(op, End::Failed(why)),
        }
    }
    history.end(op, End::Failed("too many rounds".into()));
}

/// The receipt in the question after a `once!` step ("Step X done. Finish?"): who took
/// the step. A number counts the runs in one process, so the receipt is that process and
/// run; any other text is taken as a receipt of its own.
pub(super) fn receipt_of(requests: &Map<String, Value>, pid: u32) -> Option<String> {
    requests.values().find_map(|request| {
        let message = request["params"]["message"].as_str()?;
        let step = message.strip_prefix("Step ")?.split(" done").next()?;
        Some(match step.parse::<u32>() {
            Ok(run) => format!("pid{pid}/run{run}"),
            Err(_) => step.to_owned(),
        })
    })
}

/// How often the last round said the step ran ("… ran N time(s) …").
fn ran(text: &str) -> Option<u32> {
    text.split(" ran ").nth(1)?.split(' ').next()?.parse().ok()
}

/// The `once!` flow: ask to start, take the step (its receipt), ask to finish, finish.
pub(super) async fn once(client: &mut Client, worker: usize) {
    let call_id = client.shared.call_id(worker);
    let history = client.shared.history.clone();
    let op = history.begin(Kind::Once, json!({ "tool": "test_once_side_effect", "call_id": call_id }));
    let arguments = json!({ "call_id": call_id });
    match once_rounds(client, op, &call_id, &arguments).await {
        Ok(()) => history.end(op, End::Done),
        Err(why) => history.end(op, End::Failed(why)),
    }
}

async fn once_rounds(client: &mut Client, op: OpId, call_id: &str, arguments: &Value) -> Result<(), String> {
    let tool = "test_once_side_effect";
    let history = client.shared.history.clone();
    let Step::Asked { state: first, requests, .. } = step(client, op, (tool, arguments), None, Retry::Broken).await?
    else {
        return Err("the first round did not ask".into());
    };
    let start = answer_all(client, op, &requests);
    // The claim is made while this round is served: a store emptied after this instant may forget it.
    let claimed_ms = history.now_ms();
    let (second, finish, claimed) = match step(client, op, (tool, arguments), Some((&start, &first)), Retry::Broken)
        .await?
    {
        Step::Asked { state, requests, target } => {
            let receipt = receipt_of(&requests, target.pid).unwrap_or_else(|| format!("pid{}/unreadable", target.pid));
            history.fact(op, Fact::Receipt { call_id: call_id.to_owned(), receipt });
            let claimed = Consumed { call_id: call_id.to_owned(), state: first, responses: start, claimed_ms };
            (state, answer_all(client, op, &requests), claimed)
        }
        Step::Done { result, .. } => {
            history.fact(op, Fact::Text(text_of(&result)));
            return Ok(());
        }
    };
    match step(client, op, (tool, arguments), Some((&finish, &second)), Retry::Broken).await? {
        Step::Done { result, target } => {
            let text = text_of(&result);
            history.fact(op, Fact::OnceFinal { call_id: call_id.to_owned(), pid: target.pid, ran: ran(&text) });
            history.fact(op, Fact::Text(text));
            // Only a finished flow's state is replayed: a replay cannot meddle with its count.
            client.shared.push_consumed(claimed);
            Ok(())
        }
        Step::Asked { .. } => Err("the last round asked again".into()),
    }
}
