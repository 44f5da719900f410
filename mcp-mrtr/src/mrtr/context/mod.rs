//! [`Ctx`]: what a handler knows about the request it serves, and its channel for
//! progress and log notifications; the futures its methods return ([`Ask`], in
//! [`question`](crate::question), [`ContinueAsTask`], [`RetryLater`]); and what it reads of the request's `_meta`
//! ([`RequestMeta`], [`TraceContext`]).

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::HeaderMap;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::base::caller::Caller;
use crate::base::error::Error;
use crate::intake::capability::Capability;
pub use crate::intake::envelope::{RequestMeta, TraceContext, TraceParent};
use crate::intake::state_values::StateValues;
use crate::mrtr::question::{Ask, Question};
use crate::mrtr::replay::Replay;
use crate::protocol::{ClientCapabilities, Implementation, LoggingLevel, Notification, Outgoing, RequestId};

mod by_hand;
mod delivery;
mod progress;
mod resources;
pub use self::by_hand::{InputRequired, Suspend};
pub(crate) use self::delivery::{Bridge, Delivery, ANSWER_TIMEOUT};
pub use self::progress::Progress;
pub(crate) use self::resources::{Readable, ResourceAccess};

/// The request context handed to every tool, prompt and resource handler.
///
/// Cheap to clone. Everything in it belongs to *this* request: the client's capabilities
/// are the ones it declared on this request, and notifications go to this request's
/// stream only.
///
/// A handler takes it as a `ctx: &Ctx` (or `Ctx`) parameter, which is not an argument of
/// the call:
///
/// ```
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
///
/// /// Says which protocol revision the client speaks.
/// #[tool]
/// async fn revision(ctx: &Ctx) -> Result<String, ToolError> {
///     Ok(ctx.protocol_version().to_owned())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let client = TestClient::new(Server::new("about", "1.0.0").tool(revision));
/// let done = client.call_tool("revision", serde_json::json!({})).start().await;
/// assert_eq!(done.text().as_deref(), Some(mcp_mrtr::protocol::PROTOCOL_VERSION));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Ctx {
    inner: Arc<CtxInner>,
}

#[derive(Debug)]
struct CtxInner {
    id: RequestId,
    meta: Arc<RequestMeta>,
    delivery: Delivery,
    logging: bool,
    replay: Arc<Replay>,
    values: StateValues,
    /// How `resources/read` decides for this request; set for a server's own methods.
    resources: Option<Arc<dyn ResourceAccess>>,
}

impl Ctx {
    pub(crate) fn new(
        id: RequestId,
        meta: Arc<RequestMeta>,
        delivery: Delivery,
        logging: bool,
        replay: Arc<Replay>,
        values: StateValues,
    ) -> Self {
        let inner = CtxInner { id, meta, delivery, logging, replay, values, resources: None };
        Self { inner: Arc::new(inner) }
    }

    /// Asks the client `question`, answered under `key`; `ask!` calls this for you.
    ///
    /// Resolves at once when this round (or an earlier one) holds the answer. Otherwise
    /// the question is recorded and the future never resolves in this round: the
    /// runtime ends the round with `input_required` and runs the handler again when the
    /// client answers. Keys must be unique per question within one call.
    pub fn ask<Q: Question + Unpin>(&self, key: impl Into<String>, question: Q) -> Ask<Q> {
        Ask::new(self.inner.replay.clone(), key.into(), question)
    }

    /// Whether the client declared `capability` on this request.
    ///
    /// ```
    /// use mcp_mrtr::prelude::*;
    /// use mcp_mrtr::testing::TestClient;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Region { name: String }
    ///
    /// /// Deploys to the region the user picks, or to the default one.
    /// #[tool]
    /// async fn deploy(ctx: &Ctx) -> Result<String, ToolError> {
    ///     // Asking a client that cannot show forms would fail the call with -32021.
    ///     if !ctx.client_supports(Capability::ElicitationForm) {
    ///         return Ok("deployed to eu-west".into());
    ///     }
    ///     let region: Region = ask!(elicit "Which region?")?;
    ///     Ok(format!("deployed to {}", region.name))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::new("ops", "1.0.0").tool(deploy);
    /// let client = TestClient::new(server).with_capabilities(serde_json::json!({}));
    /// let done = client.call_tool("deploy", serde_json::json!({})).start().await;
    /// assert_eq!(done.text().as_deref(), Some("deployed to eu-west"));
    /// # }
    /// ```
    pub fn client_supports(&self, capability: Capability) -> bool {
        capability.is_declared_in(self.client_capabilities())
    }

    /// `Err(-32021)` unless the client declared `capability` on this request: for
    /// handlers that cannot run at all without it.
    pub fn require(&self, capability: Capability) -> Result<(), Error> {
        crate::intake::capability::missing(self.client_capabilities(), [capability])
    }

    /// Runs `step` once across all rounds of this call: its result is sealed into the
    /// request state and read back in later rounds instead of running `step` again.
    /// Use it for side effects before an ask (create an order, call a paid API).
    ///
    /// Before a step runs in a round that continues a call, the round claims its request
    /// state in the single-use guard, so a client cannot replay an older round to run the
    /// step again, even in parallel (see [`StateConfig::reusable`](crate::request_state::StateConfig::reusable)
    /// for the trade-off). Rounds that take no step never touch the guard. What no server
    /// can prevent: a client that starts the call over, without a state, runs it again,
    /// like any new call.
    ///
    /// In a task, the run claims the step for the call in the same guard (when the client
    /// holds states of the call, which a round could present again), then in the task's
    /// record, in a write that lands only while the run holds its lease: a run that stalled
    /// past its lease (a blocking call, CPU-bound work, a paused VM) or was cancelled stops
    /// there, and the run that took over takes the step once. A graceful stop (SIGTERM)
    /// lets a run finish the step it is in and record it before its task is handed back
    /// ([`TaskConfig::stop_grace`](crate::tasks::TaskConfig::stop_grace)). Only a step cut
    /// off mid-way (the process was killed or crashed, or the run stalled inside the step
    /// itself) runs again: give the service the step calls its
    /// [`step_key`](Self::step_key), so that it can tell the second attempt from a new
    /// request. Handlers must not block the runtime: put blocking or CPU-heavy work in
    /// `tokio::task::spawn_blocking`.
    ///
    /// Inside a `#[tool]`, [`once!`](crate::once) is the same, keyed by the `let` it binds.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    ///
    /// use mcp_mrtr::prelude::*;
    /// use mcp_mrtr::testing::{answer, TestClient};
    ///
    /// static ORDERS: AtomicU32 = AtomicU32::new(0);
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm { pay: bool }
    ///
    /// /// Creates an order, then asks whether to pay for it.
    /// #[tool]
    /// async fn order(ctx: &Ctx) -> Result<String, ToolError> {
    ///     // Runs in the first round; the second reads its result from the request state.
    ///     let id = ctx.once("order_id", async { 100 + ORDERS.fetch_add(1, Ordering::SeqCst) }).await;
    ///     let confirm: Confirm = ask!(elicit "Pay now?")?;
    ///     Ok(format!("order {id}: {}", if confirm.pay { "paid" } else { "unpaid" }))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = TestClient::new(Server::new("shop", "1.0.0").tool(order));
    /// let mut call = client.call_tool("order", serde_json::json!({}));
    /// call.start().await;
    /// let done = call.answer([("confirm", answer::accept(serde_json::json!({ "pay": true })))]).await;
    /// assert_eq!(done.text().as_deref(), Some("order 100: paid"));
    /// assert_eq!(ORDERS.load(Ordering::SeqCst), 1); // once, over both rounds
    /// # }
    /// ```
    pub async fn once<T, F>(&self, key: &str, step: F) -> T
    where
        T: Serialize + DeserializeOwned,
        F: Future<Output = T>,
    {
        match self.begin_once(key).await {
            Ok(Some(done)) => done,
            Ok(None) => {
                let value = step.await;
                self.record_once(key, &value).await;
                value
            }
            Err(halted) => halted.await,
        }
    }

    /// An idempotency key for the `once` step `key` of this call: the same in every round,
    /// task run and takeover of the call (on any instance sharing its keys), and different
    /// in every other call. Pass it to the service the step calls (a payment API's
    /// `Idempotency-Key`, a database's unique request id), so that a step cut off mid-way
    /// and taken again (the only way `once!` runs a step twice: a process killed or
    /// crashed inside it) is recognised there as the same request. `key` is the step's
    /// key: the name of the `let` a [`once!`](crate::once) is bound to.
    ///
    /// 32 hex digits, derived from the call's id (128 random bits, sealed in its states or
    /// kept in its task's journal) and `key`; it reveals neither. A call that starts over
    /// without a state is a new call, with new keys. Fails only when the system has no
    /// randomness to draw a new call's id from.
    ///
    /// ```
    /// use mcp_mrtr::prelude::*;
    ///
    /// # async fn charge(_cents: u32, _idempotency_key: &str) -> std::io::Result<String> { Ok("ch_1".into()) }
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Receipt { email: String }
    ///
    /// /// Charges the card once, even when the process dies halfway through the charge.
    /// #[tool]
    /// async fn pay(ctx: &Ctx, cents: u32) -> Result<String, ToolError> {
    ///     let key = ctx.step_key("charge")?;
    ///     // Taken again only if cut off mid-way; the payment API dedupes on the key.
    ///     let charge = once!(charge(cents, &key).await?);
    ///     let receipt: Receipt = ask!(elicit "Where should the receipt go?")?;
    ///     Ok(format!("{charge}: receipt sent to {}", receipt.email))
    /// }
    /// # let _ = Server::new("shop", "1.0.0").tool(pay);
    /// ```
    pub fn step_key(&self, key: &str) -> Result<String, Error> {
        self.inner.replay.step_key(key)
    }

    /// Where the `once` step `key` stands: `Ok(Some)` with its recorded result; `Ok(None)`
    /// when it has not run yet and may run now (this round holds its claim); `Err` when it
    /// must not run (the round failed: its state was used already or cannot be claimed,
    /// or the recorded result no longer decodes as `T`), a future that never resolves.
    pub(crate) async fn begin_once<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, Halted<T>> {
        let halted = || Halted { output: PhantomData };
        let replay = &self.inner.replay;
        let Some(recorded) = replay.once_result(key).map_err(|()| halted())? else {
            return if replay.claim_step(key).await { Ok(None) } else { Err(halted()) };
        };
        // The value comes from sealed state, written by this server. If it no longer
        // decodes, the step's type changed under a live call: running the step again
        // would repeat its side effect, so the call fails instead.
        serde_json::from_value(recorded).map(Some).map_err(|error| {
            tracing::error!(key, %error, "a recorded once! result no longer decodes");
            replay.fail(Error::internal(format!(
                "the recorded result of once step {key:?} no longer decodes; start the call over"
            )));
            halted()
        })
    }

    /// Records a `once` step's result. In a task, the journal is stored before the
    /// handler goes on; if it cannot be, the run stops here (this future never
    /// resolves) rather than go on with a step that a takeover would take again.
    pub(crate) async fn record_once<T: Serialize>(&self, key: &str, value: &T) {
        let replay = &self.inner.replay;
        match serde_json::to_value(value) {
            Ok(value) => replay.record_once(key, value),
            Err(e) => return replay.fail(Error::internal(format!("once step {key:?} is not serializable: {e}"))),
        }
        if let Some(log) = replay.task_log() {
            if !log.journal(replay.carried()).await {
                replay.fail(Error::internal(format!("the result of once step {key:?} could not be stored")));
                std::future::pending::<()>().await;
            }
        }
    }

    /// Ends this round with state only, no questions: the client retries later (load
    /// shedding, waiting for work elsewhere). The future never resolves in this round.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    ///
    /// use mcp_mrtr::prelude::*;
    /// use mcp_mrtr::testing::TestClient;
    ///
    /// /// Set by the job that builds the nightly export.
    /// struct Export { ready: AtomicBool }
    ///
    /// /// The nightly export, once it is built.
    /// #[tool]
    /// async fn nightly_export(ctx: &Ctx, State(export): State<Export>) -> Result<String, ToolError> {
    ///     if !export.ready.load(Ordering::Acquire) {
    ///         return ctx.retry_later().await;
    ///     }
    ///     Ok("export.csv".into())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::new("exports", "1.0.0").with_state(Export { ready: AtomicBool::new(false) });
    /// let client = TestClient::new(server.tool(nightly_export));
    /// let round = client.call_tool("nightly_export", serde_json::json!({})).start().await;
    /// // `input_required` with a state and no questions: the client asks again later.
    /// assert!(round.input_required().is_some() && round.keys().is_empty());
    /// # }
    /// ```
    pub fn retry_later<T>(&self) -> RetryLater<T> {
        RetryLater { replay: self.inner.replay.clone(), output: PhantomData }
    }

    /// Continues this call as a task, from here on, when the tool supports tasks and the
    /// client declared them on this request: the client gets a task id at once, and
    /// whatever the handler asks after this point is asked through the task.
    ///
    /// Asks before it are ordinary rounds, so a handler can gather what it needs in
    /// rounds and then go on as a task; their answers and `once!` results carry into the
    /// task. Anywhere else (a task already, a tool without task support, a client
    /// without the extension) it returns at once and the call goes on as it was.
    ///
    /// A task tool also becomes a task, without this, when its handler first waits on
    /// its own work (a timer, I/O).
    pub fn continue_as_task(&self) -> ContinueAsTask {
        ContinueAsTask { replay: self.inner.replay.clone() }
    }

    /// The JSON-RPC id of the request (a retry of a multi-round call has a new one).
    pub fn request_id(&self) -> &RequestId {
        &self.inner.id
    }

    /// The id of the task this handler runs as, once the call continued as one
    /// ([`Ctx::continue_as_task`]); `None` in an ordinary round. Key what a task holds by
    /// it, so [`TaskConfig::on_end`](crate::tasks::TaskConfig::on_end) can find it
    /// ([`TaskEnd::id`](crate::tasks::TaskEnd::id)).
    pub fn task_id(&self) -> Option<String> {
        self.inner.replay.task_log().map(|log| log.task_id().to_owned())
    }

    /// The request's `_meta`, read: the envelope, the trace context
    /// ([`RequestMeta::trace`]: `traceparent`, `tracestate`, `baggage`) and any other
    /// keys the client sent ([`RequestMeta::extra`]). All of it is client data.
    pub fn meta(&self) -> &RequestMeta {
        &self.inner.meta
    }

    /// The protocol version the request was made with.
    pub fn protocol_version(&self) -> &str {
        &self.inner.meta.protocol_version
    }

    /// What the client declared it can do on this request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.meta.client_capabilities
    }

    /// The client's name and version, if it sent them. For display and logs only:
    /// never branch behaviour or security on it.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.meta.client_info.as_ref()
    }

    /// The HTTP headers of the request (`None` on stdio). Behind a
    /// [`ResourceServer`](crate::auth::ResourceServer), `Authorization` is not among them
    /// unless it [passes the token to handlers](crate::auth::ResourceServer::pass_token_to_handlers).
    pub fn http_headers(&self) -> Option<&HeaderMap> {
        self.inner.delivery.headers.as_deref()
    }

    /// The authenticated caller, when an authentication layer established one.
    ///
    /// ```
    /// use mcp_mrtr::prelude::*;
    /// use mcp_mrtr::testing::TestClient;
    ///
    /// /// Greets whoever is signed in.
    /// #[tool]
    /// async fn hello(ctx: &Ctx) -> Result<String, ToolError> {
    ///     // `None` on stdio, or over HTTP without authentication.
    ///     let who = ctx.caller().map_or("stranger", Caller::id);
    ///     Ok(format!("hello, {who}"))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = TestClient::new(Server::new("hi", "1.0.0").tool(hello)).as_caller(Caller::new("alice"));
    /// let done = client.call_tool("hello", serde_json::json!({})).start().await;
    /// assert_eq!(done.text().as_deref(), Some("hello, alice"));
    /// # }
    /// ```
    pub fn caller(&self) -> Option<&Caller> {
        self.inner.delivery.caller()
    }

    /// A value the application's HTTP middleware attached to the request (`None` on
    /// stdio, or when no middleware set one of type `T`).
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.inner.delivery.extensions.get::<T>()
    }

    /// The application state of type `T` the server was given with
    /// [`Server::with_state`](crate::Server::with_state).
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.inner.values.get::<T>()
    }

    /// Reports how far the call has got: `ctx.progress(2.0).of(3.0).message("compiling").await`.
    /// See [`Progress`] for what is sent, and when it is dropped.
    ///
    /// ```
    /// use mcp_mrtr::prelude::*;
    ///
    /// /// Imports the rows, a batch at a time.
    /// #[tool]
    /// async fn import(ctx: &Ctx, rows: u32) -> Result<String, ToolError> {
    ///     for done in (0..=rows).step_by(100).skip(1) {
    ///         // import the next 100 rows here, then say how far it got
    ///         ctx.progress(f64::from(done)).of(f64::from(rows)).message("importing").await;
    ///     }
    ///     Ok(format!("imported {rows} rows"))
    /// }
    /// # let _ = Server::new("import", "1.0.0").tool(import);
    /// ```
    pub fn progress(&self, progress: f64) -> Progress<'_> {
        Progress::new(self, progress)
    }

    /// Sends a log message, if the server enabled logging and the request opted in at
    /// this level or below (`_meta["io.modelcontextprotocol/logLevel"]`). Nothing is sent
    /// from a task: the extension has no log notifications. Deprecated in 2026-07-28
    /// (SEP-2577), still served: see [`Server::logging`](crate::Server::logging).
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: impl Serialize) {
        let in_task = self.inner.replay.task_log().is_some();
        if in_task
            || !self.inner.replay.notification_is_new()
            || !self.inner.logging
            || self.inner.meta.log_level.is_none_or(|min| level < min)
        {
            return;
        }
        let data =
            serde_json::to_value(data).unwrap_or_else(|e| Value::String(format!("<unserializable log data: {e}>")));
        let mut params = json!({ "level": level, "data": data });
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        self.notify("notifications/message", params).await;
    }

    /// Says that the out-of-band step of the url elicitation asked under `key` is done.
    ///
    /// A 2025-11-25 client gets `notifications/elicitation/complete` naming the
    /// `elicitationId` the bridge issued for that question, and may then close its "waiting
    /// for the browser" state. A 2026-07-28 client gets nothing: that revision has no such
    /// notification, the client simply retries after the user consents, and the handler
    /// checks its own records (returning its result, asking again, or
    /// [`retry_later`](Self::retry_later)). Nothing is sent either when no url elicitation
    /// was asked under `key` in this call.
    ///
    /// `key` is the ask's key: the name of the `let` it is bound to, or its `key = "…"`.
    pub async fn complete_url_elicitation(&self, key: &str) {
        let complete = self.inner.delivery.bridge.as_ref().and_then(|bridge| bridge.url_complete(key));
        if let Some(notification) = complete {
            self.send(notification).await;
        }
    }

    pub(super) async fn notify(&self, method: &str, params: Value) {
        self.send(Notification { method: method.to_owned(), params }).await;
    }

    async fn send(&self, notification: Notification) {
        if let Some(notifier) = &self.inner.delivery.notifier {
            // A closed channel means the client is gone; the request is being cancelled.
            let _ = notifier.send(Box::new(Outgoing::Notification(notification))).await;
        }
    }
}

/// `once!`'s first half, for the macro through `__private`: where the step `key` stands
/// (see [`Ctx::begin_once`]).
#[doc(hidden)]
pub async fn begin_once<T: DeserializeOwned>(ctx: &Ctx, key: &str) -> Result<Option<T>, Halted<T>> {
    ctx.begin_once(key).await
}

/// `once!`'s second half, for the macro through `__private`: records the step's result
/// (see [`Ctx::record_once`]).
#[doc(hidden)]
pub async fn record_once<T: Serialize>(ctx: &Ctx, key: &str, value: &T) {
    ctx.record_once(key, value).await;
}

/// A step that must not run: its round has failed. Never resolves; the runtime ends the
/// round with the failure.
#[doc(hidden)]
#[must_use = "a halted step does nothing unless awaited"]
pub struct Halted<T> {
    output: PhantomData<fn() -> T>,
}

impl<T> Future for Halted<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<T> {
        Poll::Pending
    }
}

/// The future of [`Ctx::continue_as_task`].
#[must_use = "continue_as_task does nothing unless awaited"]
pub struct ContinueAsTask {
    replay: Arc<Replay>,
}

impl Future for ContinueAsTask {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        // No waker, like an ask: the driver sees the request and ends the round; the
        // task polls the handler again right away.
        self.replay.continue_as_task()
    }
}

/// The future of [`Ctx::retry_later`].
#[must_use = "retry_later does nothing unless awaited"]
pub struct RetryLater<T> {
    replay: Arc<Replay>,
    output: PhantomData<fn() -> T>,
}

impl<T> Future for RetryLater<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<T> {
        self.replay.retry_later();
        Poll::Pending
    }
}
