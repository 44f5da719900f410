//! The multi round-trip loop (SEP-2322) from the client's side: a result that is
//! `input_required` has its questions answered by the application's [`Answers`] and the
//! request sent again with them (`inputResponses`) and the server's `requestState`, echoed
//! as it came, until the server answers in full. The caller sees only the final result.

use serde_json::{Map, Value};

use super::error::ClientError;
use super::Inner;
use crate::protocol::{InputRequiredResult, JsonObject};

/// Runs `method` with `params` to its final result, answering every round on the way.
pub(super) async fn run(inner: &Inner, method: &str, mut params: JsonObject) -> Result<JsonObject, ClientError> {
    let max_rounds = inner.limits.max_rounds;
    let mut rounds = 0;
    loop {
        let result = inner.send(method, &params).await?;
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return Ok(result);
        }
        rounds += 1;
        if rounds > max_rounds {
            return Err(ClientError::TooManyRounds { rounds: max_rounds });
        }
        let asked: InputRequiredResult =
            serde_json::from_value(Value::Object(form_by_default(result))).map_err(|error| {
                ClientError::Malformed(format!("an input_required result that cannot be read: {error}"))
            })?;
        let mut responses = Map::new();
        for (key, request) in asked.input_requests.unwrap_or_default() {
            let answer = inner.answers.answer(&key, request).await?;
            responses.insert(key, answer);
        }
        // Only this round's answers: the server keeps what it needs of earlier ones in its state.
        if responses.is_empty() {
            params.remove("inputResponses");
        } else {
            params.insert("inputResponses".into(), Value::Object(responses));
        }
        match asked.request_state {
            Some(state) => params.insert("requestState".into(), Value::String(state)),
            None => params.remove("requestState"),
        };
    }
}

/// The result with each elicitation that names no mode read as a form, as the spec says
/// of an `elicitation/create` without `mode`.
fn form_by_default(mut result: JsonObject) -> JsonObject {
    if let Some(Value::Object(requests)) = result.get_mut("inputRequests") {
        for request in requests.values_mut() {
            if request.get("method").and_then(Value::as_str) != Some("elicitation/create") {
                continue;
            }
            if let Some(Value::Object(params)) = request.get_mut("params") {
                params.entry("mode").or_insert_with(|| Value::String("form".into()));
            }
        }
    }
    result
}
