//! Unit-test multi-round handlers without HTTP: drive a [`Server`] in-process through
//! its rounds, answer each round's questions, and assert on what was asked.
//!
//! ```
//! use mcp_mrtr::prelude::*;
//! use mcp_mrtr::testing::{answer, TestClient};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Party { size: u32 }
//!
//! /// Books a table.
//! #[tool]
//! async fn book() -> Result<String, ToolError> {
//!     let party: Party = ask!(elicit "How many people?")?;
//!     Ok(format!("Booked for {}", party.size))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = TestClient::new(Server::new("t", "0").tool(book));
//! let mut call = client.call_tool("book", serde_json::json!({}));
//! let first = call.start().await;
//! assert_eq!(first.keys(), ["party"]);
//! let done = call.answer([("party", answer::accept(serde_json::json!({ "size": 4 })))]).await;
//! assert_eq!(done.text().as_deref(), Some("Booked for 4"));
//! # }
//! ```

mod catalog;
#[cfg(feature = "jwt")]
mod token;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::Extensions;

pub use self::catalog::ListenStream;
#[cfg(feature = "jwt")]
#[cfg_attr(docsrs, doc(cfg(feature = "jwt")))]
pub use self::token::TestToken;

use serde_json::{json, Value};

use crate::base::caller::Caller;
use crate::base::error::Error;
use crate::dispatch::Engine;
use crate::intake::capability::{self, Capability};
use crate::intake::envelope::{Request, RequestMeta, PROTOCOL_VERSION};
use crate::intake::request_state::KeyRing;
use crate::intake::request_state::StateKey;
use crate::mrtr::context::Delivery;
use crate::protocol::{InputRequest, InputRequiredResult, JsonObject, RequestId};
use crate::server::Server;
use crate::transport::serve_error::ServeError;

/// Gives `server` a random request-state key of its own, unless its
/// [`StateConfig`](crate::request_state::StateConfig) names keys already (its other
/// settings are kept): a test then never depends on (or breaks on) a
/// `MCP_MRTR_STATE_KEYS` set in the shell that runs it. [`TestClient::new`] does this.
pub fn with_own_keys(server: Server) -> Server {
    server.with_keys_unless_given(|| KeyRing::new(StateKey::random()))
}

/// Answers in the shapes clients send them.
pub mod answer {
    use serde_json::{json, Value};

    /// The user accepted a form with this content.
    pub fn accept(content: Value) -> Value {
        let mut answer = json!({ "action": "accept" });
        answer["content"] = content;
        answer
    }

    /// The user accepted a url elicitation.
    pub fn accept_url() -> Value {
        json!({ "action": "accept" })
    }

    /// The user declined.
    pub fn decline() -> Value {
        json!({ "action": "decline" })
    }

    /// The user cancelled.
    pub fn cancel() -> Value {
        json!({ "action": "cancel" })
    }

    /// The client's model answered with this text.
    pub fn sampled(text: &str) -> Value {
        json!({ "role": "assistant", "content": { "type": "text", "text": text }, "model": "test-model", "stopReason": "endTurn" })
    }

    /// The client's roots.
    pub fn roots(uris: &[&str]) -> Value {
        json!({ "roots": uris.iter().map(|uri| json!({ "uri": uri })).collect::<Vec<_>>() })
    }
}

/// An in-process client for one server.
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
///
/// /// Greets someone.
/// #[tool]
/// async fn hello(name: String) -> Result<String, ToolError> {
///     Ok(format!("hello, {name}"))
/// }
///
/// // In a `#[tokio::test]`:
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = TestClient::new(Server::new("hi", "1.0.0").tool(hello));
/// assert_eq!(client.list_tools().await.unwrap()[0].name, "hello");
/// let done = client.call_tool("hello", serde_json::json!({ "name": "Ada" })).start().await;
/// assert_eq!(done.text().as_deref(), Some("hello, Ada"));
/// # }
/// ```
pub struct TestClient {
    server: Engine,
    capabilities: Value,
    extensions: Arc<Extensions>,
}

impl TestClient {
    /// A client declaring every capability (form and url elicitation, sampling with
    /// tools, roots, and the tasks extension).
    ///
    /// # Panics
    ///
    /// Where serving would refuse to start, with the problems `serve` would return (see
    /// [`TestClient::try_new`]).
    pub fn new(server: Server) -> Self {
        Self::try_new(server).unwrap_or_else(|error| panic!("{error}"))
    }

    /// As [`TestClient::new`], with the error serving would return where it would refuse
    /// to start: [`ServeError::Misconfigured`] with every problem (a registration the
    /// builder refused, such as two tools with one name or a form type that cannot be a
    /// form; a handler taking `State<T>` of a server given no `T`). For a test that a
    /// server refuses to start.
    pub fn try_new(server: Server) -> Result<Self, ServeError> {
        let server = with_own_keys(server).into_engine();
        // The checks every way of serving runs, so a server the tests pass is one that starts.
        server.check_ready(crate::intake::request_state::Reach::ThisProcess).map_err(ServeError::Misconfigured)?;
        let capabilities = json!({
            "elicitation": { "form": {}, "url": {} },
            "sampling": { "tools": {} },
            "roots": {},
            "extensions": { crate::protocol::TASKS_EXTENSION: {} },
        });
        Ok(Self { server, capabilities, extensions: Arc::default() })
    }

    /// Makes every request come from `caller`, as an authentication layer would.
    pub fn as_caller(self, caller: Caller) -> Self {
        self.with_extension(caller)
    }

    /// Attaches `value` to every request, as the application's HTTP middleware would:
    /// handlers read it as an `Extension<T>` parameter or through `Ctx::extension`.
    pub fn with_extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.extensions).insert(value);
        self
    }

    /// Declares these capabilities instead, on every request.
    pub fn with_capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// A `tools/call` exchange.
    pub fn call_tool(&self, name: &str, arguments: Value) -> Exchange<'_> {
        self.exchange("tools/call", [("name", Value::from(name)), ("arguments", arguments)])
    }

    /// A `prompts/get` exchange.
    pub fn get_prompt(&self, name: &str, arguments: Value) -> Exchange<'_> {
        self.exchange("prompts/get", [("name", Value::from(name)), ("arguments", arguments)])
    }

    /// A `resources/read` exchange.
    pub fn read_resource(&self, uri: &str) -> Exchange<'_> {
        self.exchange("resources/read", [("uri", Value::from(uri))])
    }

    /// The task `id` this client created: poll, answer and cancel it.
    pub fn task(&self, id: &str) -> TaskHandle<'_> {
        TaskHandle { client: self, id: id.to_owned() }
    }

    async fn request(
        &self,
        id: i64,
        method: &str,
        params: JsonObject,
        extensions: &Arc<Extensions>,
        meta: &JsonObject,
    ) -> Result<Value, Error> {
        let meta = RequestMeta {
            protocol_version: PROTOCOL_VERSION.into(),
            client_capabilities: serde_json::from_value(self.capabilities.clone()).unwrap_or_default(),
            trace: crate::intake::envelope::trace_of(meta),
            extra: crate::intake::envelope::extra_of(meta),
            ..RequestMeta::default()
        };
        let request = Request::new(RequestId::from(id), method.into(), Some(Value::Object(params)));
        // None unless the server says otherwise: a test bounds its own time.
        let handler_timeout = self.server.handler_timeout.resolve(None);
        let delivery = Delivery { extensions: extensions.clone(), handler_timeout, ..Delivery::default() };
        let outcome = self.server.handle(request, Arc::new(meta), delivery).await.outcome;
        // The reply is JSON text, as a transport would send it; tests read it as a tree.
        outcome.map(|json| serde_json::from_str(json.as_str()).unwrap_or_default())
    }

    fn exchange<const N: usize>(&self, method: &'static str, params: [(&str, Value); N]) -> Exchange<'_> {
        let params = params.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        Exchange {
            client: self,
            method,
            params,
            meta: JsonObject::new(),
            state: None,
            next_id: 1,
            extensions: self.extensions.clone(),
        }
    }
}

/// One multi-round request, round by round.
pub struct Exchange<'c> {
    client: &'c TestClient,
    method: &'static str,
    params: JsonObject,
    meta: JsonObject,
    state: Option<String>,
    next_id: i64,
    extensions: Arc<Extensions>,
}

impl Exchange<'_> {
    /// Sends the following rounds as `caller`: a state sealed for another caller must
    /// then be refused.
    pub fn as_caller(&mut self, caller: Caller) -> &mut Self {
        Arc::make_mut(&mut self.extensions).insert(caller);
        self
    }

    /// Sends `key` in `_meta` with the following rounds: W3C trace context
    /// (`traceparent`, `tracestate`, `baggage`) or a key of the application's own, as
    /// [`Ctx::meta`](crate::Ctx::meta) reads them. Invalid trace context is dropped, as
    /// a transport drops it.
    ///
    /// ```
    /// # use mcp_mrtr::prelude::*;
    /// # use mcp_mrtr::testing::TestClient;
    /// /// Says which trace the call is part of.
    /// #[tool]
    /// async fn trace_id(ctx: &Ctx) -> Result<String, ToolError> {
    ///     Ok(ctx.meta().trace.traceparent().map_or("none", |p| p.trace_id()).to_owned())
    /// }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = TestClient::new(Server::new("t", "1").tool(trace_id));
    /// let round = client
    ///     .call_tool("trace_id", serde_json::json!({}))
    ///     .meta("traceparent", "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01")
    ///     .start()
    ///     .await;
    /// assert_eq!(round.text().as_deref(), Some("0af7651916cd43dd8448eb211c80319c"));
    /// # }
    /// ```
    pub fn meta(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        self.meta.insert(key.to_owned(), value.into());
        self
    }

    /// Presents `state` with the next round instead of the last round's `requestState`, as
    /// a client that replays an earlier state (or alters one) would: the test of a
    /// `once!` step that must not run twice, or of a state that must not open.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// use mcp_mrtr::prelude::*;
    /// use mcp_mrtr::testing::{answer, TestClient};
    /// use serde_json::json;
    ///
    /// static CHARGED: AtomicUsize = AtomicUsize::new(0);
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm { yes: bool }
    ///
    /// /// Asks for a confirmation, then charges once.
    /// #[tool]
    /// async fn pay() -> Result<String, ToolError> {
    ///     let confirm: Confirm = ask!(elicit "Pay 5 EUR?")?;
    ///     if !confirm.yes {
    ///         return Ok("not paid".into());
    ///     }
    ///     let receipt = once!(CHARGED.fetch_add(1, Ordering::SeqCst));
    ///     Ok(format!("paid, receipt {receipt}"))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = TestClient::new(Server::new("shop", "1.0.0").tool(pay));
    /// let mut call = client.call_tool("pay", json!({}));
    /// let asked = call.start().await;
    /// let state = asked.request_state().unwrap().to_owned();
    /// let done = call.answer([("confirm", answer::accept(json!({ "yes": true })))]).await;
    /// assert_eq!(done.text().as_deref(), Some("paid, receipt 0"));
    ///
    /// // The first round's state again: the step was taken, so the replay is refused.
    /// let replayed = call.present(state).answer([("confirm", answer::accept(json!({ "yes": true })))]).await;
    /// assert!(replayed.error().is_some());
    /// assert_eq!(CHARGED.load(Ordering::SeqCst), 1);
    /// # }
    /// ```
    pub fn present(&mut self, state: impl Into<String>) -> &mut Self {
        self.state = Some(state.into());
        self
    }

    /// Sends the first round.
    pub async fn start(&mut self) -> Round {
        self.send(None).await
    }

    /// Sends the next round with these answers and the last round's state. After a round
    /// that finished (and so carries no state) the answers go without one: a new call with
    /// answers up front, which `ask!(fresh, …)` does not count.
    pub async fn answer<K: Into<String>>(&mut self, answers: impl IntoIterator<Item = (K, Value)>) -> Round {
        let answers: JsonObject = answers.into_iter().map(|(k, v)| (k.into(), v)).collect();
        self.send(Some(answers)).await
    }

    /// Runs rounds until the handler finishes or fails (at most `max_rounds`), answering
    /// every question from `script` by key. Returns each round, the last one final.
    ///
    /// # Panics
    ///
    /// If a round asks a key the script has no answer for, or `max_rounds` is reached.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    ///
    /// use mcp_mrtr::prelude::*;
    /// use mcp_mrtr::testing::{answer, TestClient};
    /// use serde_json::json;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Name { first: String }
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm { ok: bool }
    ///
    /// /// Signs the user up, one question a round.
    /// #[tool]
    /// async fn sign_up() -> Result<String, ToolError> {
    ///     let name: Name = ask!(elicit "First name?")?;
    ///     let confirm: Confirm = ask!(elicit "Create the account?")?;
    ///     Ok(if confirm.ok { format!("welcome, {}", name.first) } else { "not created".into() })
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = TestClient::new(Server::new("accounts", "1.0.0").tool(sign_up));
    /// let script = BTreeMap::from([
    ///     ("name", answer::accept(json!({ "first": "Ada" }))),
    ///     ("confirm", answer::accept(json!({ "ok": true }))),
    /// ]);
    /// let rounds = client.call_tool("sign_up", json!({})).run(&script, 5).await;
    /// assert_eq!(rounds.len(), 3);
    /// assert_eq!(rounds[2].text().as_deref(), Some("welcome, Ada"));
    /// # }
    /// ```
    pub async fn run(&mut self, script: &BTreeMap<&str, Value>, max_rounds: usize) -> Vec<Round> {
        let mut rounds = vec![self.start().await];
        while let Some(asked) = rounds.last().and_then(Round::input_required) {
            assert!(rounds.len() < max_rounds, "still asking after {max_rounds} rounds");
            let answers: Vec<(String, Value)> = asked
                .input_requests
                .iter()
                .flatten()
                .map(|(key, _)| {
                    let answer =
                        script.get(key.as_str()).unwrap_or_else(|| panic!("the script has no answer for {key:?}"));
                    (key.clone(), answer.clone())
                })
                .collect();
            rounds.push(self.answer(answers).await);
        }
        rounds
    }

    async fn send(&mut self, answers: Option<JsonObject>) -> Round {
        let mut params = self.params.clone();
        if let Some(answers) = answers {
            params.insert("inputResponses".into(), Value::Object(answers));
        }
        if let Some(state) = &self.state {
            params.insert("requestState".into(), Value::String(state.clone()));
        }
        let outcome = self.client.request(self.next_id, self.method, params, &self.extensions, &self.meta).await;
        self.next_id += 1;
        let round = Round::new(outcome);
        self.state = round.input_required().and_then(|r| r.request_state.clone());
        round
    }
}

/// What one round answered.
#[derive(Debug)]
pub struct Round {
    outcome: Result<Value, Error>,
    input_required: Option<InputRequiredResult>,
}

impl Round {
    fn new(outcome: Result<Value, Error>) -> Self {
        let input_required = outcome
            .as_ref()
            .ok()
            .filter(|r| r["resultType"] == "input_required")
            .and_then(|r| serde_json::from_value(r.clone()).ok());
        Self { outcome, input_required }
    }

    /// The sealed `requestState` the round handed the client, when it asked: keep it to
    /// present it again with [`Exchange::present`].
    pub fn request_state(&self) -> Option<&str> {
        self.input_required.as_ref()?.request_state.as_deref()
    }

    /// The questions, when the round ended with `input_required`.
    pub fn input_required(&self) -> Option<&InputRequiredResult> {
        self.input_required.as_ref()
    }

    /// The keys asked this round, sorted.
    pub fn keys(&self) -> Vec<String> {
        self.requests().keys().cloned().collect()
    }

    /// The method of each question asked this round, by key.
    pub fn kinds(&self) -> BTreeMap<String, &'static str> {
        let method = |request: &InputRequest| match request {
            InputRequest::Elicit(_) => "elicitation/create",
            InputRequest::Sample(_) => "sampling/createMessage",
            InputRequest::ListRoots(_) => "roots/list",
        };
        self.requests().iter().map(|(k, r)| (k.clone(), method(r))).collect()
    }

    /// The client capability each question of this round needs, by key.
    pub fn capabilities(&self) -> BTreeMap<String, Capability> {
        self.requests().iter().map(|(k, r)| (k.clone(), capability::required_for(r))).collect()
    }

    /// The question asked under `key`.
    pub fn request(&self, key: &str) -> Option<&InputRequest> {
        self.requests().get(key)
    }

    /// The complete result, if the handler finished.
    pub fn complete(&self) -> Option<&Value> {
        self.outcome.as_ref().ok().filter(|r| r["resultType"] == "complete")
    }

    /// The id of the task the call became (`resultType: "task"`), if it did.
    pub fn task_id(&self) -> Option<&str> {
        let result = self.outcome.as_ref().ok().filter(|r| r["resultType"] == "task")?;
        result["taskId"].as_str()
    }

    /// The first text block of a complete result.
    pub fn text(&self) -> Option<String> {
        let result = self.complete()?;
        let content =
            result.get("content").or_else(|| result.get("messages").and_then(|m| m.get(0)).map(|m| &m["content"]))?;
        let block = if content.is_array() { content.get(0)? } else { content };
        block["text"].as_str().map(str::to_owned)
    }

    /// The protocol error, if the round failed.
    pub fn error(&self) -> Option<&Error> {
        self.outcome.as_ref().err()
    }

    fn requests(&self) -> &BTreeMap<String, InputRequest> {
        static NONE: BTreeMap<String, InputRequest> = BTreeMap::new();
        self.input_required.as_ref().and_then(|r| r.input_requests.as_ref()).unwrap_or(&NONE)
    }
}

/// A task created through a [`TestClient`]: `tasks/get`, `tasks/update`, `tasks/cancel`.
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::{answer, TestClient};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Confirm { yes: bool }
///
/// /// Deletes everything, once confirmed, as a task.
/// #[tool(task = "required")]
/// async fn wipe(ctx: &Ctx) -> Result<String, ToolError> {
///     ctx.continue_as_task().await;
///     let confirm: Confirm = ask!(elicit "Really?")?;
///     Ok(if confirm.yes { "wiped" } else { "kept" }.into())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = TestClient::new(Server::new("t", "0").tool(wipe));
/// let created = client.call_tool("wipe", serde_json::json!({})).start().await;
/// let task = client.task(created.task_id().unwrap());
/// let waiting = task.wait_for("input_required", 100).await;
/// assert!(waiting["inputRequests"]["confirm"].is_object());
/// let questions = task.questions().await.unwrap();
/// assert!(matches!(questions["confirm"], mcp_mrtr::protocol::InputRequest::Elicit(_)));
/// task.update([("confirm", answer::accept(serde_json::json!({ "yes": true })))]).await.unwrap();
/// let done = task.wait_for("completed", 100).await;
/// assert_eq!(done["result"]["content"][0]["text"], "wiped");
/// # }
/// ```
pub struct TaskHandle<'c> {
    client: &'c TestClient,
    id: String,
}

impl TaskHandle<'_> {
    /// `tasks/get`: the detailed task.
    pub async fn get(&self) -> Result<Value, Error> {
        self.send("tasks/get", None).await
    }

    /// The questions the task waits on (`inputRequests` of `tasks/get`), typed as
    /// [`Round::request`] gives them; empty when it waits on none.
    pub async fn questions(&self) -> Result<BTreeMap<String, InputRequest>, Error> {
        let task = self.get().await?;
        let requests = task.get("inputRequests").cloned().unwrap_or_else(|| json!({}));
        serde_json::from_value(requests)
            .map_err(|e| Error::internal(format!("tasks/get answered questions that do not read: {e}")))
    }

    /// `tasks/update` with these answers, by the keys of `inputRequests`.
    pub async fn update<K: Into<String>>(&self, answers: impl IntoIterator<Item = (K, Value)>) -> Result<Value, Error> {
        let answers: JsonObject = answers.into_iter().map(|(k, v)| (k.into(), v)).collect();
        self.send("tasks/update", Some(Value::Object(answers))).await
    }

    /// `tasks/cancel`.
    pub async fn cancel(&self) -> Result<Value, Error> {
        self.send("tasks/cancel", None).await
    }

    /// Polls `tasks/get` (every 10 ms, at most `max_polls` times) until the task has
    /// `status`, and returns it.
    ///
    /// # Panics
    ///
    /// If `tasks/get` fails, the task ends in another final status, or it does not
    /// reach `status` in time.
    pub async fn wait_for(&self, status: &str, max_polls: usize) -> Value {
        let mut last = Value::Null;
        for _ in 0..max_polls {
            last = self.get().await.unwrap_or_else(|e| panic!("tasks/get failed: {e}"));
            let now = last["status"].as_str().unwrap_or_default();
            if now == status {
                return last;
            }
            assert!(!matches!(now, "completed" | "failed" | "cancelled"), "the task ended {now}, not {status}: {last}");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the task did not reach {status} in {max_polls} polls: {last}");
    }

    async fn send(&self, method: &str, responses: Option<Value>) -> Result<Value, Error> {
        let mut params = JsonObject::new();
        params.insert("taskId".into(), Value::String(self.id.clone()));
        if let Some(responses) = responses {
            params.insert("inputResponses".into(), responses);
        }
        self.client.request(1, method, params, &self.client.extensions, &JsonObject::new()).await
    }
}
