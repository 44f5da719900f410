//! A call the server turned into a task (SEP-2663), followed to its end: polled at the
//! server's `pollIntervalMs`, its questions answered from the same [`Answers`] through
//! `tasks/update` (each key once: keys are unique over a task's life), and its final
//! `CallToolResult` returned as if the call had answered at once. A task that failed is the
//! server's JSON-RPC error; one that was cancelled is [`ClientError::Cancelled`].
//!
//! [`Answers`]: super::Answers

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::answers::with_defaults_of;
use super::error::ClientError;
use super::message::error_of;
use super::Inner;
use crate::protocol::{InputRequest, JsonObject};

/// The key a client declares the tasks extension under.
pub(super) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How often to poll when the server names no interval, and the bounds on what it names.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
const MIN_POLL: Duration = Duration::from_millis(10);
const MAX_POLL: Duration = Duration::from_secs(60);

/// Follows the task `created` names to its final result.
pub(super) async fn follow(inner: &Inner, created: &JsonObject) -> Result<JsonObject, ClientError> {
    let Some(task_id) = created.get("taskId").and_then(Value::as_str).map(str::to_owned) else {
        return Err(ClientError::Malformed("a task result without a taskId".into()));
    };
    let mut answered = HashSet::new();
    let mut snapshot = created.clone();
    loop {
        match snapshot.get("status").and_then(Value::as_str) {
            Some("completed") => {
                return match snapshot.remove("result") {
                    Some(Value::Object(result)) => Ok(result),
                    _ => Err(ClientError::Malformed(format!("task {task_id} completed without a result"))),
                };
            }
            Some("failed") => {
                let error = snapshot.remove("error").unwrap_or(Value::Null);
                return Err(error_of(error)
                    .unwrap_or_else(|| ClientError::Malformed(format!("task {task_id} failed without an error"))));
            }
            Some("cancelled") => return Err(ClientError::Cancelled { task_id }),
            Some("input_required") => answer(inner, &task_id, &snapshot, &mut answered).await?,
            Some("working") => {}
            other => {
                return Err(ClientError::Malformed(format!("task {task_id} has an unknown status {other:?}")));
            }
        }
        tokio::time::sleep(poll_interval(&snapshot)).await;
        snapshot = Box::pin(inner.call("tasks/get", json!({"taskId": task_id}))).await?;
    }
}

/// Answers the questions of an `input_required` snapshot not answered yet, in one
/// `tasks/update`.
async fn answer(
    inner: &Inner,
    task_id: &str,
    snapshot: &JsonObject,
    answered: &mut HashSet<String>,
) -> Result<(), ClientError> {
    let Some(Value::Object(requests)) = snapshot.get("inputRequests") else { return Ok(()) };
    let mut responses = Map::new();
    for (key, request) in requests {
        if answered.contains(key) {
            continue;
        }
        let Value::Object(request) = request.clone() else { continue };
        let question: InputRequest =
            serde_json::from_value(Value::Object(with_defaults_of(request))).map_err(|error| {
                ClientError::Malformed(format!("task {task_id} asks a question that cannot be read: {error}"))
            })?;
        responses.insert(key.clone(), inner.answers.answer(key, question).await?);
    }
    if responses.is_empty() {
        return Ok(());
    }
    let keys: Vec<String> = responses.keys().cloned().collect();
    Box::pin(inner.call("tasks/update", json!({"taskId": task_id, "inputResponses": responses}))).await?;
    answered.extend(keys);
    Ok(())
}

fn poll_interval(snapshot: &JsonObject) -> Duration {
    snapshot
        .get("pollIntervalMs")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}
