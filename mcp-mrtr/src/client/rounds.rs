//! The multi round-trip loop (SEP-2322) from the client's side: a result that is
//! `input_required` has its questions answered by the application's [`Answers`] and the
//! request sent again with them (`inputResponses`) and the server's `requestState`, echoed
//! as it came, until the server answers in full, or makes the call a task, which a
//! [`TaskHandle`](super::TaskHandle) follows from there.
//!
//! A round whose connection dropped before its response is sent once more, as it was: the
//! server either runs it (nothing of it was taken) or refuses it, when a step of the call
//! that runs once was taken by the lost attempt, and the caller hears
//! [`ClientError::RoundRefused`]. The first request of a call is never sent twice: it
//! carries no state, so nothing on the server could tell the second from a new call.

use serde_json::{Map, Value};

use super::answers::with_defaults_of;
use super::error::ClientError;
use super::{Inner, Notices};
use crate::protocol::{InputRequiredResult, JsonObject};

/// Runs `method` with `params` to its final result, answering every round on the way.
pub(super) async fn run(
    inner: &Inner,
    method: &str,
    mut params: JsonObject,
    notices: Option<&Notices>,
) -> Result<JsonObject, ClientError> {
    let max_rounds = inner.limits.max_rounds;
    let mut rounds = 0;
    loop {
        let result = match inner.send(method, &params, notices).await {
            // A round's retry carries the server's state: sent again, it runs again or is
            // refused, never silently taken twice (a `once!` step's claim refuses it).
            Err(ClientError::Connect(dropped)) if rounds > 0 => match inner.send(method, &params, notices).await {
                Err(ClientError::Rpc(refused)) => {
                    return Err(ClientError::RoundRefused { round: rounds + 1, dropped, refused });
                }
                again => again?,
            },
            sent => sent?,
        };
        // Complete, or a task (only a client that declared tasks is given one), which the
        // caller follows.
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return Ok(result);
        }
        rounds += 1;
        if rounds > max_rounds {
            return Err(ClientError::TooManyRounds { rounds: max_rounds });
        }
        let asked: InputRequiredResult =
            serde_json::from_value(Value::Object(with_defaults(result))).map_err(|error| {
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

/// The result with what its questions leave out filled in as the spec defines it: no
/// `params` is empty params (a `roots/list` has none to give), and an elicitation that names
/// no mode is a form.
fn with_defaults(mut result: JsonObject) -> JsonObject {
    if let Some(Value::Object(requests)) = result.get_mut("inputRequests") {
        for request in requests.values_mut() {
            if let Value::Object(request) = request {
                *request = with_defaults_of(std::mem::take(request));
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::{ElicitParams, InputRequest};

    #[test]
    fn questions_read_with_the_spec_s_defaults() {
        let result = json!({"resultType": "input_required", "inputRequests": {
            "roots": {"method": "roots/list"},
            "name": {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}},
        }});
        let Value::Object(result) = result else { unreachable!() };
        let asked: InputRequiredResult = serde_json::from_value(Value::Object(with_defaults(result))).unwrap();
        let requests = asked.input_requests.unwrap();
        assert!(matches!(requests["roots"], InputRequest::ListRoots(_)));
        assert!(
            matches!(&requests["name"], InputRequest::Elicit(ElicitParams::Form { message, .. }) if message == "Name?")
        );
    }
}
