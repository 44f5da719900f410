//! The 2025-11-25 leg (the bridge of the replay guide): sessions opened by `initialize`,
//! the utility methods that era still has, and the bridge that serves the very same
//! handlers to legacy clients, asking each round's questions as real server-to-client
//! requests on the request's SSE stream and replaying the handler with the answers.
//!
//! Entry points: [`initialize`], [`utility`] and [`meta`]; the transports route legacy
//! requests here, and dispatch asks through the bridge between rounds. A legacy request
//! carries its [`SessionBridge`] (the core's `context::Bridge`), which a handler reaches through `Ctx` to complete url
//! elicitations, and which bounds the call's waits for its client ([`WaitBounds`]): they
//! hold no handler slot, and a place in a pool with a share per client (see `wait`).

mod limits;
mod room;
mod session;
mod subscribed;
mod table;
mod updates;
mod wait;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

pub(crate) use self::limits::SessionLimits;
pub(crate) use self::session::{Opener, Session};
pub(crate) use self::table::Sessions;
pub(crate) use self::updates::{relay, Carrier};
use self::wait::Parked;
pub(crate) use self::wait::{HandlerSlot, SlotLease, WaitBounds};
use crate::base::error::Error;
use crate::dispatch::Engine;
use crate::intake::envelope::{self, Request};
use crate::mrtr::context::Delivery;
use crate::mrtr::context::RequestMeta;
use crate::protocol::{
    meta_keys, InputRequest, JsonObject, LoggingLevel, Method, Notification, Notifier, Outgoing, RequestId,
};

/// The newest legacy revision, offered to clients that ask for one this server does not know.
pub(crate) const LATEST: &str = "2025-11-25";

/// How long the bridge waits before running a handler again that asked to be retried later.
const RETRY_LATER_PAUSE: Duration = Duration::from_secs(1);

/// Answers `initialize` on a transport with one client (stdio): opens a session, owned
/// by `owner` (the caller, when one is known), and says what the server offers.
pub(crate) fn initialize(
    server: &Engine,
    sessions: &Sessions,
    request: &Request,
    owner: Option<String>,
) -> Result<(String, Value), Error> {
    initialize_by(server, sessions, request, Opener { owner, client: crate::bounds::fair::ClientId::Unknown })
}

/// Answers `initialize` for `opener`: opens a session counted against its client's rate
/// and share of the table (see [`Sessions::open`]), and says what the server offers.
pub(crate) fn initialize_by(
    server: &Engine,
    sessions: &Sessions,
    request: &Request,
    opener: Opener,
) -> Result<(String, Value), Error> {
    let params = request.params.clone().unwrap_or_else(|| json!({}));
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_params("initialize needs a protocolVersion"))?;
    let version = if crate::intake::envelope::LEGACY_VERSIONS.contains(&requested) { requested } else { LATEST };
    check_declared_size(&params)?;
    let capabilities = params.get("capabilities").cloned().map(serde_json::from_value).transpose().unwrap_or_default();
    let client_info = params.get("clientInfo").cloned().and_then(|info| serde_json::from_value(info).ok());
    let session = sessions.open(version.to_owned(), capabilities.unwrap_or_default(), client_info, opener)?;
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": server.legacy_capabilities(),
        "serverInfo": server.info,
    });
    if let Some(instructions) = &server.instructions {
        result["instructions"] = json!(instructions);
    }
    Ok((session.id.clone(), result))
}

/// What a session keeps of `initialize` (`capabilities` and `clientInfo`) is refused past
/// this many bytes of JSON, so that no client can make one session large.
const MAX_DECLARED_BYTES: usize = 8 * 1024;

fn check_declared_size(params: &Value) -> Result<(), Error> {
    let size = |key| params.get(key).map_or(0, |value: &Value| value.to_string().len());
    let declared = size("capabilities") + size("clientInfo");
    if declared > MAX_DECLARED_BYTES {
        return Err(Error::invalid_params(format!(
            "initialize: capabilities and clientInfo take {declared} bytes; a session keeps at most {MAX_DECLARED_BYTES}"
        )));
    }
    Ok(())
}

/// Answers the methods only legacy sessions have; `None` for everything else.
/// `delivery` is what the request arrived with, for `resources/subscribe`, which decides
/// as `resources/read` does whether the session may reach the resource.
pub(crate) fn utility(
    server: &Engine,
    sessions: &Sessions,
    session: &Arc<Session>,
    request: &Request,
    delivery: &Delivery,
) -> Option<Result<Value, Error>> {
    let params = request.params.as_ref();
    Some(match request.known? {
        Method::Ping => Ok(json!({})),
        Method::LoggingSetLevel => params
            .and_then(|p| p.get("level"))
            .and_then(|level| serde_json::from_value::<LoggingLevel>(level.clone()).ok())
            .map(|level| {
                session.set_log_level(level);
                json!({})
            })
            .ok_or_else(|| Error::invalid_params("logging/setLevel needs a valid level")),
        Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
            updates::subscribe(server, sessions, session, request, delivery)
        }
        _ => return None,
    })
}

/// The envelope a legacy request would carry: the session's negotiated version,
/// capabilities and log level, and the request's own progress token.
pub(crate) fn meta(session: &Session, request: &Request) -> RequestMeta {
    meta_of(session, request.params.as_ref().and_then(|p| p.get("_meta")).and_then(Value::as_object))
}

/// The envelope of the session's stream of changes, which no request carries.
pub(crate) fn stream_meta(session: &Session) -> RequestMeta {
    meta_of(session, None)
}

fn meta_of(session: &Session, meta: Option<&JsonObject>) -> RequestMeta {
    let empty = JsonObject::new();
    let meta = meta.unwrap_or(&empty);
    RequestMeta {
        protocol_version: session.version.clone(),
        client_capabilities: session.capabilities.clone(),
        client_info: session.client_info.clone(),
        progress_token: meta.get(meta_keys::PROGRESS_TOKEN).and_then(RequestId::from_value),
        log_level: session.log_level(),
        trace: envelope::trace_of(meta),
        extra: envelope::extra_of(meta),
    }
}

/// Asks a round's questions as real requests on the request's stream and collects the
/// answers by key, as `inputResponses` would carry them.
///
/// While it waits, the call holds no handler slot but a place among the bridge waits
/// (see `wait`); a refused place ends the call before anything is asked, and a place
/// that must give way to another client ends it with an error that says so.
///
/// The client has `timeout` to answer all of them; past it each question still open is
/// withdrawn with `notifications/cancelled` (so its form or dialog can close) and the
/// request fails with an error that names the question. They are withdrawn at once when
/// `shutdown` resolves: a person may take minutes to answer, and the server is going.
async fn ask(
    bridge: &SessionBridge,
    outgoing: &Notifier,
    questions: BTreeMap<String, InputRequest>,
    timeout: Duration,
    shutdown: impl Future<Output = ()>,
) -> Result<JsonObject, Error> {
    let parked = wait::park(bridge.bounds.as_ref())?;
    if questions.is_empty() {
        // The handler asked to be run again later (`retry_later`): a 2026-07-28 client
        // would come back on its own; here the bridge comes back after a pause, so the
        // round cap bounds the wait instead of a busy loop.
        // Biased like every wait of the bridge: what lets the call go on wins over giving way.
        tokio::select! {
            biased;
            () = tokio::time::sleep(RETRY_LATER_PAUSE) => {}
            () = parked.give_way() => return Err(wait::gave_way()),
        }
        parked.resume().await?;
        return Ok(JsonObject::new());
    }
    let mut waiting = Waiting { session: &bridge.session, asked: Vec::with_capacity(questions.len()) };
    for (key, question) in questions {
        waiting.send(bridge, outgoing, key, &question).await?;
    }
    let answers = waiting.collect(outgoing, timeout, shutdown, &parked).await?;
    parked.resume().await?;
    Ok(answers)
}

/// The legacy side of one request: its session, how its waits for the client are
/// bounded, and the url elicitations the bridge has issued for it so far (by ask key), so
/// the handler can say when one is complete.
#[derive(Debug)]
pub(crate) struct SessionBridge {
    pub(crate) session: Arc<Session>,
    /// `None` where the transport has one client and no handler slots (stdio).
    bounds: Option<WaitBounds>,
    url_elicitations: Mutex<HashMap<String, String>>,
}

impl SessionBridge {
    pub(crate) fn new(session: Arc<Session>) -> Self {
        Self { session, bounds: None, url_elicitations: Mutex::default() }
    }

    /// The same bridge, its waits for the client bounded by `bounds`.
    pub(crate) fn bounded(self, bounds: WaitBounds) -> Self {
        Self { bounds: Some(bounds), ..self }
    }

    fn issued_url(&self, key: &str, elicitation_id: String) {
        self.url_elicitations.lock().unwrap_or_else(PoisonError::into_inner).insert(key.to_owned(), elicitation_id);
    }
}

impl crate::mrtr::context::Bridge for SessionBridge {
    fn ask<'a>(
        &'a self,
        outgoing: &'a Notifier,
        questions: BTreeMap<String, InputRequest>,
        timeout: Duration,
        shutdown: BoxFuture<'a, ()>,
    ) -> BoxFuture<'a, Result<JsonObject, Error>> {
        Box::pin(ask(self, outgoing, questions, timeout, shutdown))
    }

    fn url_complete(&self, key: &str) -> Option<Notification> {
        let urls = self.url_elicitations.lock().unwrap_or_else(PoisonError::into_inner);
        let elicitation_id = urls.get(key)?;
        Some(Notification {
            method: "notifications/elicitation/complete".into(),
            params: json!({ "elicitationId": elicitation_id }),
        })
    }
}

/// The bridge's requests of one round. However the round ends (answered, failed, or
/// dropped because the client went away or cancelled), the session stops waiting for them.
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

impl Waiting<'_> {
    /// Sends one question to the client, as a request on the call's stream.
    async fn send(
        &mut self,
        bridge: &SessionBridge,
        outgoing: &Notifier,
        key: String,
        question: &InputRequest,
    ) -> Result<(), Error> {
        let Value::Object(mut request) = serde_json::to_value(question).map_err(|e| Error::internal(e.to_string()))?
        else {
            return Err(Error::internal("an embedded request is not an object"));
        };
        let method = request.remove("method").and_then(|m| m.as_str().map(str::to_owned)).unwrap_or_default();
        let mut params = request.remove("params").unwrap_or_else(|| json!({}));
        let (id, answer) = self.session.expect_answer();
        if params["mode"] == "url" {
            // 2025-11-25 url elicitations carry an id that `notifications/elicitation/complete`
            // names later. A fresh random one: it shows up in clients' logs and UIs, so it
            // must not reveal the session id, the session's only credential.
            let elicitation_id = session::random_id()?;
            params["elicitationId"] = json!(elicitation_id);
            bridge.issued_url(&key, elicitation_id);
        }
        self.asked.push(Asked { key, id: id.clone(), method: method.clone(), answer: Some(answer) });
        if outgoing.send(Box::new(Outgoing::Request { id, method, params })).await.is_err() {
            return Err(Error::internal("the client closed the stream before answering"));
        }
        Ok(())
    }

    /// The answers to every question sent, by key, as they arrive within `timeout`.
    async fn collect(
        &mut self,
        outgoing: &Notifier,
        timeout: Duration,
        shutdown: impl Future<Output = ()>,
        parked: &Parked<'_>,
    ) -> Result<JsonObject, Error> {
        let now = tokio::time::Instant::now();
        // A timeout too long to add (`Duration::MAX`: "never") waits a year, not a panic.
        let deadline = now.checked_add(timeout).unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600));
        let mut answers = JsonObject::new();
        tokio::pin!(shutdown);
        for i in 0..self.asked.len() {
            let Some(answer) = self.asked[i].answer.take() else { continue };
            // An answer at hand wins over giving way (biased): a person's answer is not
            // thrown away on a coin toss; a later wait gives way at once, if it must.
            let answered = tokio::select! {
                biased;
                answered = tokio::time::timeout_at(deadline, answer) => answered,
                () = &mut shutdown => return Err(self.shut_down(outgoing).await),
                () = parked.give_way() => return Err(self.give_way(outgoing).await),
            };
            match answered {
                Ok(Ok(Ok(result))) => {
                    answers.insert(self.asked[i].key.clone(), result);
                }
                // A refused sampling request is an answer (`question::Refused`): the handler may
                // fall back on something else. Hosts answer one with an error when the user
                // rejects it.
                Ok(Ok(Err(error))) if self.asked[i].method == "sampling/createMessage" => {
                    answers.insert(self.asked[i].key.clone(), json!({ "error": error }));
                }
                Ok(Ok(Err(error))) => {
                    let message = error.get("message").and_then(Value::as_str).unwrap_or("no message");
                    return Err(Error::internal(format!("the client failed {}: {message}", self.asked[i].method)));
                }
                // The session forgot the question: it ended while we waited.
                Ok(Err(_)) => return Err(Error::internal("the session ended before the client answered")),
                Err(_) => return Err(self.expire(outgoing, timeout).await),
            }
        }
        Ok(answers)
    }

    /// Withdraws the questions still open with `notifications/cancelled`, so their forms
    /// and dialogs close, and returns the method of the first one.
    async fn withdraw(&self, outgoing: &Notifier, reason: &str) -> Option<&str> {
        let mut first = None;
        for asked in &self.asked {
            if !self.session.forget(&asked.id) {
                continue;
            }
            let cancel = Notification {
                method: "notifications/cancelled".into(),
                params: json!({ "requestId": asked.id, "reason": reason }),
            };
            let _ = outgoing.send(Box::new(Outgoing::Notification(cancel))).await;
            first.get_or_insert(asked.method.as_str());
        }
        first
    }

    /// Withdraws the questions still open because the server is shutting down.
    async fn shut_down(&self, outgoing: &Notifier) -> Error {
        let method = self.withdraw(outgoing, "the server is shutting down").await.unwrap_or("a request");
        Error::internal(format!(
            "the server is shutting down: {method} was withdrawn before the client answered; call again"
        ))
    }

    /// Withdraws the questions still open because the call's place among the bridge
    /// waits went to another client.
    async fn give_way(&self, outgoing: &Notifier) -> Error {
        self.withdraw(outgoing, "the server needed this wait's place for another client").await;
        wait::gave_way()
    }

    /// Withdraws the questions still open and says which one expired first.
    async fn expire(&self, outgoing: &Notifier, timeout: Duration) -> Error {
        let reason = format!("no answer within {} s", timeout.as_secs());
        let method = self.withdraw(outgoing, &reason).await.unwrap_or("a request");
        Error::internal(format!(
            "the client did not answer {method} within {} s (the server's bridge_answer_timeout); \
             the question expired",
            timeout.as_secs()
        ))
        .with_data(json!({ "method": method, "timeoutMs": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX) }))
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        for asked in &self.asked {
            self.session.forget(&asked.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use futures_util::FutureExt as _;
    use tokio::sync::{mpsc, Semaphore};

    use super::*;
    use crate::bounds::fair::{ClientId, FairPool};
    use crate::protocol::ClientCapabilities;

    #[tokio::test]
    async fn an_answer_at_hand_wins_over_giving_way() {
        // The answer and the call to give way both arrive while the bridge is not looking;
        // a coin toss would throw the person's answer away about half the time.
        for _ in 0..16 {
            let (pool, slots) = (FairPool::new(2, 2), Arc::new(Semaphore::new(4)));
            let (heavy, light) = (ClientId::loopback(1), ClientId::loopback(2));
            let opener = Opener { owner: None, client: heavy.clone() };
            let session = Session::new(LATEST.into(), ClientCapabilities::default(), None, opener, Instant::now());
            let session = Arc::new(session.unwrap());
            let slot = HandlerSlot::new(slots.clone(), slots.clone().try_acquire_owned().unwrap());
            let bounds = WaitBounds { pool: pool.clone(), client: heavy.clone(), slot: Some(slot) };
            let bridge = SessionBridge::new(session.clone()).bounded(bounds);
            let (outgoing, mut sent) = mpsc::channel(1);
            let questions = BTreeMap::from([("roots".to_owned(), InputRequest::ListRoots(JsonObject::new()))]);
            let mut asking =
                Box::pin(ask(&bridge, &outgoing, questions, Duration::from_secs(60), std::future::pending()));

            assert!(asking.as_mut().now_or_never().is_none(), "the bridge waits for the answer");
            let Some(Outgoing::Request { id, .. }) = sent.recv().await.as_deref().cloned() else {
                panic!("a question")
            };
            let _newer = pool.admit(&heavy).unwrap();
            let _light = pool.admit(&light).expect("the heavier client's oldest wait gives way");
            assert!(session.deliver(&id, Ok(json!({ "roots": [] }))));

            let answers = asking.as_mut().now_or_never().expect("answered").expect("the answer wins");
            assert_eq!(answers["roots"], json!({ "roots": [] }));
        }
    }
}
