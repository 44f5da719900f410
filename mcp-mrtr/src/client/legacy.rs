//! Servers that speak only 2025-11-25: the `initialize` handshake that opens a session, and
//! the server's own requests (`elicitation/create`, `sampling/createMessage`, `roots/list`,
//! `ping`) answered from the same [`Answers`] that answer a 2026-07-28 round. The caller's
//! calls read the same either way.

use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::answers::{with_defaults_of, Answers, Relayed};
use super::error::ClientError;
use crate::protocol::{DiscoverResult, Implementation, InputRequest, JsonObject, ServerCapabilities};

/// The revision a session is opened at.
pub(super) const VERSION: &str = "2025-11-25";

/// The params of `initialize`: the version, what the client answers, who it is.
pub(super) fn initialize_params(answers: &Answers, info: &Implementation) -> Value {
    json!({"protocolVersion": VERSION, "capabilities": answers.capabilities(), "clientInfo": info})
}

/// What `initialize` answered, read as `server/discover` would have said it, and the
/// version the server chose.
pub(super) fn discovered(mut result: JsonObject) -> Result<(DiscoverResult, String), ClientError> {
    let Some(Value::String(version)) = result.remove("protocolVersion") else {
        return Err(ClientError::Malformed("the initialize result names no protocolVersion".into()));
    };
    if version != VERSION {
        return Err(ClientError::Version { supported: vec![version] });
    }
    let capabilities: ServerCapabilities =
        serde_json::from_value(result.remove("capabilities").unwrap_or(json!({})))
            .map_err(|error| ClientError::Malformed(format!("the server's capabilities cannot be read: {error}")))?;
    let instructions = match result.remove("instructions") {
        Some(Value::String(text)) => Some(text),
        _ => None,
    };
    Ok((DiscoverResult { supported_versions: vec![version.clone()], capabilities, instructions }, version))
}

/// The JSON-RPC response to a request the server sent in its session.
pub(super) async fn respond(answers: &Answers, request: Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
    if method == "ping" {
        return json!({"jsonrpc": "2.0", "id": id, "result": {}});
    }
    let mut asked = JsonObject::new();
    asked.insert("method".into(), Value::String(method.clone()));
    asked.insert("params".into(), request.get("params").cloned().unwrap_or(json!({})));
    let refusal =
        |code: i32, message: String| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let asked = with_defaults_of(asked);
    let Ok(question) = serde_json::from_value::<InputRequest>(Value::Object(asked.clone())) else {
        return refusal(-32601, format!("the client does not answer {method}"));
    };
    if let Some(relay) = answers.relay() {
        let (answer, answered) = oneshot::channel();
        if relay.send(Relayed { request: asked, answer }).await.is_err() {
            return refusal(-32603, "the client could not answer".into());
        }
        return match answered.await {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(_) => refusal(-32603, "the question was not answered".into()),
        };
    }
    match answers.answer(&format!("{method} {id}"), question).await {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(ClientError::Unanswerable { .. }) => refusal(-32601, format!("the client does not answer {method}")),
        Err(error) => {
            tracing::warn!(%error, "answering the server's request failed");
            refusal(-32603, "the client could not answer".into())
        }
    }
}
