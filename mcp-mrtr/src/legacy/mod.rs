//! The 2025-11-25 leg (DESIGN §6): sessions opened by `initialize`, the utility methods
//! that era still has, and the bridge that serves the very same handlers to legacy
//! clients, asking each round's questions as real server-to-client requests on the
//! request's SSE stream and replaying the handler with the answers.
//!
//! Entry points: [`initialize`], [`utility`], [`meta`] and [`ask`]; the HTTP transport
//! routes legacy requests here, and dispatch calls [`ask`] between rounds.

mod session;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

pub(crate) use self::session::{Session, Sessions};
use crate::context::Notifier;
use crate::envelope::Request;
use crate::protocol::{meta_keys, InputRequest, JsonObject, LoggingLevel, Outgoing, RequestId};
use crate::{Error, RequestMeta, Server};

/// The newest legacy revision, offered to clients that ask for one this server does not know.
pub(crate) const LATEST: &str = "2025-11-25";

/// How long the bridge waits for a client to answer one question (a person may be
/// filling in a form).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// Answers `initialize`: opens a session and says what the server offers.
pub(crate) fn initialize(server: &Server, sessions: &Sessions, request: &Request) -> Result<(String, Value), Error> {
    let params = request.params.clone().unwrap_or_else(|| json!({}));
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_params("initialize needs a protocolVersion"))?;
    let version = if crate::envelope::LEGACY_VERSIONS.contains(&requested) { requested } else { LATEST };
    let capabilities = params.get("capabilities").cloned().map(serde_json::from_value).transpose().unwrap_or_default();
    let client_info = params.get("clientInfo").cloned().and_then(|info| serde_json::from_value(info).ok());
    let session = sessions.open(version.to_owned(), capabilities.unwrap_or_default(), client_info)?;
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": server.capabilities(),
        "serverInfo": server.info,
    });
    if let Some(instructions) = &server.instructions {
        result["instructions"] = json!(instructions);
    }
    Ok((session.id.clone(), result))
}

/// Answers the methods only legacy sessions have; `None` for everything else.
pub(crate) fn utility(session: &Session, request: &Request) -> Option<Result<Value, Error>> {
    let params = request.params.as_ref();
    Some(match request.method.as_str() {
        "ping" => Ok(json!({})),
        "logging/setLevel" => params
            .and_then(|p| p.get("level"))
            .and_then(|level| serde_json::from_value::<LoggingLevel>(level.clone()).ok())
            .map(|level| {
                session.set_log_level(level);
                json!({})
            })
            .ok_or_else(|| Error::invalid_params("logging/setLevel needs a valid level")),
        // Resources here never change, so a subscription has nothing to report; accept it.
        "resources/subscribe" | "resources/unsubscribe" => params
            .and_then(|p| p.get("uri"))
            .filter(|uri| uri.is_string())
            .map(|_| json!({}))
            .ok_or_else(|| Error::invalid_params(format!("{} needs a uri", request.method))),
        _ => return None,
    })
}

/// The envelope a legacy request would carry: the session's negotiated version,
/// capabilities and log level, and the request's own progress token.
pub(crate) fn meta(session: &Session, request: &Request) -> RequestMeta {
    let progress_token = request
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(meta_keys::PROGRESS_TOKEN))
        .and_then(RequestId::from_value);
    RequestMeta {
        protocol_version: session.version.clone(),
        client_capabilities: session.capabilities.clone(),
        client_info: session.client_info.clone(),
        progress_token,
        log_level: session.log_level(),
    }
}

/// Asks a round's questions as real requests on the request's stream and collects the
/// answers by key, as `inputResponses` would carry them.
pub(crate) async fn ask(
    session: &Session,
    outgoing: &Notifier,
    questions: BTreeMap<String, InputRequest>,
) -> Result<JsonObject, Error> {
    let mut waiting = Waiting { session, asked: Vec::with_capacity(questions.len()) };
    for (key, question) in questions {
        let Value::Object(mut request) = serde_json::to_value(&question).map_err(|e| Error::internal(e.to_string()))?
        else {
            return Err(Error::internal("an embedded request is not an object"));
        };
        let method = request.remove("method").and_then(|m| m.as_str().map(str::to_owned)).unwrap_or_default();
        let mut params = request.remove("params").unwrap_or_else(|| json!({}));
        let (id, answer) = session.expect_answer();
        if params["mode"] == "url" {
            // 2025-11-25 url elicitations carry an id for `notifications/elicitation/complete`.
            params["elicitationId"] = json!(format!("{}-{id}", session.id));
        }
        waiting.asked.push(Asked { key, id: id.clone(), method: method.clone(), answer: Some(answer) });
        if outgoing.send(Outgoing::Request { id, method, params }).await.is_err() {
            return Err(Error::internal("the client closed the stream before answering"));
        }
    }
    let mut answers = JsonObject::new();
    for Asked { key, method, answer, .. } in &mut waiting.asked {
        let Some(answer) = answer.take() else { continue };
        match tokio::time::timeout(ANSWER_TIMEOUT, answer).await {
            Ok(Ok(Ok(result))) => {
                answers.insert(key.clone(), result);
            }
            Ok(Ok(Err(error))) => {
                let message = error.get("message").and_then(Value::as_str).unwrap_or("no message");
                return Err(Error::internal(format!("the client failed {method}: {message}")));
            }
            Ok(Err(_)) | Err(_) => return Err(Error::internal(format!("the client did not answer {method} in time"))),
        }
    }
    Ok(answers)
}

/// The bridge's requests of one round. However the round ends (answered, failed, or
/// dropped because the client went away), the session stops waiting for them.
struct Waiting<'s> {
    session: &'s Session,
    asked: Vec<Asked>,
}

/// One question sent to the client, by its key, with where its answer will arrive.
struct Asked {
    key: String,
    id: RequestId,
    method: String,
    answer: Option<tokio::sync::oneshot::Receiver<Result<Value, Value>>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        for asked in &self.asked {
            self.session.forget(&asked.id);
        }
    }
}
