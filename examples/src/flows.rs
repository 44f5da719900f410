//! The flows the load clients drive, whatever carries them (`flow_load` over Streamable
//! HTTP, `stdio_load` over a child's pipes): an MRTR call answered round after round, and a
//! task created, polled, answered and polled to its end. Answers are built from each
//! question, so any server with the conformance fixtures serves.

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context as _};
use serde_json::{json, Map, Value};

/// How long a load client waits for one answer before its flow fails.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
/// A flow that has not ended after this many requests has failed.
const MAX_REQUESTS: u64 = 2_000;

/// Counts one more request of the current flow in `sent`: an error once the flow has
/// sent more than a flow ends within, so a server that never ends it fails the run.
pub fn count_request(sent: &mut u64) -> anyhow::Result<()> {
    *sent += 1;
    if *sent > MAX_REQUESTS {
        bail!("the flow did not end within {MAX_REQUESTS} requests");
    }
    Ok(())
}

/// Sends one request and returns its result; a JSON-RPC error is an error.
pub trait Rpc {
    /// `name` is what the request names (a tool, a task), for transports that route on it.
    fn rpc(&mut self, method: &str, name: &str, params: Value) -> impl Future<Output = anyhow::Result<Value>>;
}

/// The `_meta` of a 2026-07-28 request from a client that declares every capability the
/// fixtures ask for.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}}, "sampling": {}, "roots": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        },
    })
}

/// An MRTR call: every question answered, retried with the state, until it completes.
pub async fn rounds(client: &mut impl Rpc, tool: &str, arguments: Value) -> anyhow::Result<()> {
    let mut params = json!({"name": tool, "arguments": arguments});
    loop {
        let result = client.rpc("tools/call", tool, params.clone()).await?;
        match result["resultType"].as_str() {
            Some("input_required") => {
                params["inputResponses"] = Value::Object(answers(&result["inputRequests"])?);
                params["requestState"] = result["requestState"].clone();
            }
            Some("complete") | None if result["isError"] != json!(true) => return Ok(()),
            _ => bail!("{tool} did not complete: {result}"),
        }
    }
}

/// A task flow on the fixtures' `confirm_delete`: create, poll `tasks/get` (every `poll`)
/// until it asks, answer with `tasks/update`, poll until it completes.
pub async fn task(client: &mut impl Rpc, poll: Duration, filename: &str) -> anyhow::Result<()> {
    let tool = "confirm_delete";
    let created = client.rpc("tools/call", tool, json!({"name": tool, "arguments": {"filename": filename}})).await?;
    let task = created["taskId"].as_str().with_context(|| format!("no taskId in {created}"))?.to_owned();
    let mut answered = false;
    loop {
        if !poll.is_zero() {
            tokio::time::sleep(poll).await;
        }
        let status = client.rpc("tasks/get", &task, json!({"taskId": task})).await?;
        match status["status"].as_str() {
            Some("input_required") if !answered => {
                let answers = answers(&status["inputRequests"])?;
                client.rpc("tasks/update", &task, json!({"taskId": task, "inputResponses": answers})).await?;
                answered = true;
            }
            Some("completed") if answered && status["result"].is_object() => return Ok(()),
            Some("working" | "input_required") => {}
            _ => bail!("the task did not ask and complete: {status}"),
        }
    }
}

/// An answer to each question, in the shape its method wants: a form filled from its
/// schema (`true`, a word, 1, an enum's first choice), a sampled message, no roots.
pub fn answers(requests: &Value) -> anyhow::Result<Map<String, Value>> {
    let requests = requests.as_object().with_context(|| format!("inputRequests is not an object: {requests}"))?;
    let answer = |request: &Value| match request["method"].as_str() {
        Some("sampling/createMessage") => {
            json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "load", "stopReason": "endTurn"})
        }
        Some("roots/list") => json!({"roots": []}),
        _ => {
            let fields = request["params"]["requestedSchema"]["properties"].as_object().into_iter().flatten();
            let content: Map<String, Value> = fields
                .map(|(name, field)| {
                    let value = match (field["enum"].get(0), field["type"].as_str()) {
                        (Some(first), _) => first.clone(),
                        (None, Some("boolean")) => Value::Bool(true),
                        (None, Some("integer" | "number")) => json!(1),
                        _ => json!("yes"),
                    };
                    (name.clone(), value)
                })
                .collect();
            json!({"action": "accept", "content": content})
        }
    };
    Ok(requests.iter().map(|(key, request)| (key.clone(), answer(request))).collect())
}
