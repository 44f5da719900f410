//! One stdio connection: its lines read and served, the requests running (each holding a
//! slot), the one waiting for a slot, and the legacy session opened on it. Why a line is
//! read before it takes a slot, and how much is read at the bound: [`StdioSession::read_until`].

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::http::Extensions;
use tokio::io::AsyncBufRead;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::lines::{Input, Line, MAX_LINE_BYTES};
use super::{Settings, STDIO_HANDLER_TIMEOUT};
use crate::base::error::Error;
use crate::base::inflight::InFlight;
use crate::bounds::fair::ClientId;
use crate::bounds::shutdown::{Drain, Draining};
use crate::dispatch::Engine;
use crate::intake::envelope::size;
use crate::intake::envelope::{check_version, classify, Era, Incoming, Request, RequestMeta};
use crate::mrtr::context::Delivery;
use crate::protocol::{Method, Outgoing, RequestId, ResultJson};
use crate::transport::legacy::{self, Session, SessionBridge, Sessions};
use crate::transport::{contain, error_message, panicked, read_message};

/// The state of one stdio connection: requests in flight, by id, for cancellation.
pub(super) struct StdioSession {
    server: Arc<Engine>,
    out: mpsc::Sender<Outgoing>,
    tasks: JoinSet<()>,
    /// Requests still running, for `notifications/cancelled`: modern and legacy alike,
    /// since a stdio connection is one client.
    in_flight: InFlight,
    /// The legacy (2025-11-25) session, once the client sent `initialize`.
    sessions: Sessions,
    legacy: Option<Arc<Session>>,
    /// Started when serving ends, so listen streams and the bridge's questions stop
    /// waiting; every request carries its watcher in `extensions`.
    drain: Drain,
    extensions: Arc<Extensions>,
    /// A permit per request running a handler.
    slots: Arc<Semaphore>,
    /// The request read while every slot was taken, until one frees (see `read_until`).
    waiting: Option<Waiting>,
    max_json_values: usize,
    /// How long one run of a handler may take here, resolved once (5 minutes unless the
    /// server says otherwise).
    handler_timeout: Option<Duration>,
}

/// A request for a handler, its envelope open, that waits for a slot to run.
struct Waiting {
    request: Request,
    meta: Arc<RequestMeta>,
    session: Option<Arc<Session>>,
}

impl StdioSession {
    pub(super) fn new(server: Arc<Engine>, out: mpsc::Sender<Outgoing>, settings: Settings) -> Self {
        let drain = Drain::new();
        let mut extensions = Extensions::new();
        extensions.insert(drain.watch());
        let handler_timeout = server.handler_timeout.resolve(Some(STDIO_HANDLER_TIMEOUT));
        Self {
            handler_timeout,
            server,
            out,
            tasks: JoinSet::new(),
            in_flight: InFlight::default(),
            sessions: Sessions::default(),
            legacy: None,
            drain,
            extensions: Arc::new(extensions),
            slots: Arc::new(Semaphore::new(settings.max_requests)),
            waiting: None,
            max_json_values: settings.max_json_values,
        }
    }

    /// Serves lines until the reader ends or fails, or `shutdown` resolves.
    ///
    /// A line is read before it takes a slot, and only a request for a handler takes one:
    /// the client's answers to the bridge's questions, `notifications/cancelled`, `ping`
    /// and the other requests answered at once never wait for a slot (the sixth audit's
    /// E3: 64 calls waiting for answers held every slot, and the answers were never read).
    ///
    /// The bound on what is read stays (the fifth audit's D4: 20,000 lines read at once
    /// held 346 MiB). When every slot is taken, the request read waits in `waiting`, and
    /// the lines after it are still read; a second request read meanwhile stops the
    /// reading until the first has a slot. So at the bound at most two requests are held
    /// beyond those running, the pipe fills and holds the client back, and only a client
    /// that sends two requests more than the bound before it answers what it was asked
    /// waits on its own answers (until the bridge's timeout frees a slot).
    pub(super) async fn read_until<R: AsyncBufRead + Unpin>(
        &mut self,
        mut input: Input<R>,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        tokio::pin!(shutdown);
        loop {
            let slots = self.slots.clone();
            let next = tokio::select! {
                biased;
                () = &mut shutdown => return Ok(()),
                slot = slots.acquire_owned(), if self.waiting.is_some() => {
                    Next::Slot(slot.expect("the session never closes its slots"))
                }
                // Dropped when a slot frees first: `Input::next` is cancel-safe.
                line = input.next() => Next::Line(line?),
            };
            let slot = match next {
                Next::Slot(slot) => slot,
                // The end of input: a request that waits still runs, as it would have had
                // it been read after a slot freed; then serving drains.
                Next::Line(None) if self.waiting.is_some() => match self.slot(&mut shutdown).await {
                    Some(slot) => slot,
                    None => return Ok(()),
                },
                Next::Line(None) => return Ok(()),
                Next::Line(Some(line)) => {
                    let Some(request) = self.on_line(line).await else { continue };
                    if self.waiting.is_some() {
                        // A second request: nothing more is read until the first runs.
                        let Some(slot) = self.slot(&mut shutdown).await else { return Ok(()) };
                        self.start_waiting(slot);
                    }
                    // Run at the next turn, at once when a slot is free.
                    self.waiting = Some(request);
                    continue;
                }
            };
            self.start_waiting(slot);
        }
    }

    /// A free slot, waiting for one; `None` when `shutdown` comes first.
    async fn slot(&self, shutdown: &mut (impl Future<Output = ()> + Unpin)) -> Option<OwnedSemaphorePermit> {
        tokio::select! {
            biased;
            () = shutdown => None,
            slot = self.slots.clone().acquire_owned() => Some(slot.expect("the session never closes its slots")),
        }
    }

    /// Runs the request that waits, if it was not cancelled meanwhile, holding `slot`.
    fn start_waiting(&mut self, slot: OwnedSemaphorePermit) {
        if let Some(waiting) = self.waiting.take() {
            self.start(waiting, slot);
        }
    }

    /// Serves one line; a request for a handler is returned, to run once it has a slot.
    async fn on_line(&mut self, line: Line) -> Option<Waiting> {
        let bytes = match line {
            Line::Message(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => return None,
            Line::Message(bytes) => bytes,
            Line::TooLong => {
                let error = Error::invalid_request(format!("message longer than {MAX_LINE_BYTES} bytes"));
                self.send(error_message(None, &error)).await;
                return None;
            }
        };
        if let Err(error) = size::check(&bytes, self.max_json_values) {
            self.send(error_message(None, &error)).await;
            return None;
        }
        // Every byte of the line is read inside the boundary: a parser's panic costs this
        // line an error answer, and the server reads the next one.
        let request = contain(self.on_message(&bytes)).await;
        if request.is_none() {
            self.send(panicked(&bytes)).await;
        }
        request.flatten()
    }

    async fn on_message(&mut self, bytes: &[u8]) -> Option<Waiting> {
        match read_message(bytes) {
            Err((id, error)) => self.send(error_message(id, &error)).await,
            Ok(Incoming::Notification { method, params }) => self.on_notification(&method, params.as_ref()),
            Ok(Incoming::Request(request)) => return self.on_request(request).await,
            // Answers to the legacy bridge's requests.
            Ok(Incoming::Response { id, outcome }) => {
                if !self.legacy.as_ref().is_some_and(|session| session.deliver(&id, outcome)) {
                    tracing::debug!(%id, "ignoring a response nobody waits for");
                }
            }
        }
        None
    }

    /// Opens a request's envelope. What is answered without a handler (`initialize`, a
    /// session's `ping` and other utilities, a refusal) is answered now, holding no slot:
    /// it keeps nothing once answered, and its answer waits only for room on the way out,
    /// so a flood of them is held back by the client's own reading like the rest. A
    /// request for a handler is returned, to wait for a slot.
    async fn on_request(&mut self, request: Request) -> Option<Waiting> {
        match self.open_envelope(&request) {
            Ok(Opened::Dispatch(meta, session)) => return Some(Waiting { request, meta, session }),
            Ok(Opened::Answered(result)) => {
                self.send(Outgoing::Result { id: request.id, result: ResultJson::from_value(&result) }).await;
            }
            Err(error) => self.send(error_message(Some(request.id), &error)).await,
        }
        None
    }

    /// Runs a request's handler, holding `slot` until its answer is queued.
    fn start(&mut self, waiting: Waiting, slot: OwnedSemaphorePermit) {
        let Waiting { request, meta, session } = waiting;
        let (server, out, id) = (self.server.clone(), self.out.clone(), request.id.clone());
        let bridge =
            session.map(|session| Arc::new(SessionBridge::new(session)) as Arc<dyn crate::mrtr::context::Bridge>);
        let (note_tx, mut note_rx) = mpsc::channel(16);
        let delivery = Delivery {
            notifier: Some(note_tx),
            headers: None,
            extensions: self.extensions.clone(),
            bridge,
            handler_timeout: self.handler_timeout,
        };
        // Reap finished requests, so a long connection does not collect them.
        while self.tasks.try_join_next().is_some() {}
        // Boxed: the handler's future is several KB, and spawning copies the task's future
        // more than once on its way into the task; this way it is copied once, here.
        let mut reply = Box::pin(self.in_flight.track(id, async move { server.handle(request, meta, delivery).await }));
        self.tasks.spawn(async move {
            // Held until the answer is queued: a request counts while it runs and while
            // its answer waits for the client to read.
            let _slot = slot;
            // Forward the request's notifications (and the bridge's requests) until its
            // reply is ready.
            let reply = loop {
                tokio::select! {
                    biased;
                    reply = &mut reply => break reply,
                    Some(note) = note_rx.recv() => { let _ = out.send(*note).await; }
                }
            };
            // A cancelled request sends nothing more, not even what it had queued.
            let Some(reply) = reply else { return };
            while let Ok(note) = note_rx.try_recv() {
                let _ = out.send(*note).await;
            }
            let _ = out.send(reply.into_outgoing()).await;
        });
    }

    /// Checks what a stdio request can be checked for. There are no headers: a modern
    /// request's body version is its version; after `initialize`, requests without a
    /// modern envelope belong to the legacy session.
    fn open_envelope(&mut self, request: &Request) -> Result<Opened, Error> {
        let era = classify(request, None, self.legacy.is_some());
        if era == Some(Era::Modern) || (era.is_none() && self.legacy.is_none()) {
            let meta = RequestMeta::parse(request.params.as_ref())?;
            check_version(&meta.protocol_version)?;
            return Ok(Opened::Dispatch(Arc::new(meta), None));
        }
        if request.known == Some(Method::Initialize) {
            let (id, result) = legacy::initialize(&self.server, &self.sessions, request, None)?;
            if let Some(earlier) = self.legacy.take() {
                self.sessions.close(&earlier.id);
            }
            self.legacy = self.sessions.find(&id);
            if let Some(session) = &self.legacy {
                self.hear_changes(session.clone());
            }
            return Ok(Opened::Answered(result));
        }
        let session = self.legacy.clone().ok_or_else(|| Error::invalid_request("send initialize first"))?;
        let delivery = Delivery { extensions: self.extensions.clone(), ..Delivery::default() };
        if let Some(outcome) = legacy::utility(&self.server, &self.sessions, &session, request, &delivery) {
            return outcome.map(Opened::Answered);
        }
        Ok(Opened::Dispatch(Arc::new(legacy::meta(&session, request)), Some(session)))
    }

    /// Tells the session of every change from now on, on the pipe, until it ends (another
    /// `initialize`, or the end of serving). Its notifications queue as a request's do.
    fn hear_changes(&mut self, session: Arc<Session>) {
        let server = self.server.clone();
        let hearing = match server.hear(&ClientId::Unknown) {
            Ok(Some(hearing)) => hearing,
            Ok(None) => return,
            Err(error) => return tracing::warn!(%error, "a session that will not hear of changes"),
        };
        let (out, extensions) = (self.out.clone(), self.extensions.clone());
        let (notifier, mut notes) = mpsc::channel(16);
        self.tasks.spawn(async move {
            let meta = legacy::stream_meta(&session);
            let delivery = Delivery { extensions: extensions.clone(), ..Delivery::default() };
            let view = crate::routes::catalog::RequestView::new(&meta, &delivery);
            let ended = session.open_stream(hearing.release_early());
            let stop = async move {
                tokio::select! { () = ended => {}, () = Draining::of(&extensions) => {} }
            };
            let relay = async move {
                legacy::relay(&server, &session, &view, hearing, &notifier, stop, legacy::Carrier::Pipe).await;
            };
            let forward = async {
                while let Some(note) = notes.recv().await {
                    let _ = out.send(*note).await;
                }
            };
            tokio::join!(relay, forward);
        });
    }

    /// `notifications/cancelled` stops the named request, or drops it while it waits for
    /// a slot; it then answers nothing. A cancellation of an unknown or finished request
    /// is ignored.
    fn on_notification(&mut self, method: &str, params: Option<&serde_json::Value>) {
        if method != "notifications/cancelled" {
            return;
        }
        let Some(id) = params.and_then(|p| p.get("requestId")).and_then(RequestId::from_value) else {
            return tracing::debug!("a cancellation that names no request");
        };
        if self.waiting.as_ref().is_some_and(|waiting| waiting.request.id == id) {
            self.waiting = None;
        } else if !self.in_flight.cancel(&id) {
            tracing::debug!("a cancellation for no running request (unknown, or already answered)");
        }
    }

    async fn send(&self, message: Outgoing) {
        let _ = self.out.send(message).await;
    }

    /// Gives the requests still running up to `bound` to finish, then cuts the rest.
    pub(super) async fn finish(mut self, bound: Duration) {
        self.drain.start();
        while self.tasks.try_join_next().is_some() {}
        let in_flight = self.tasks.len();
        if in_flight > 0 {
            tracing::info!(
                requests = in_flight,
                timeout_ms = bound.as_millis(),
                "stdio closing: waiting for requests in flight"
            );
        }
        let finished = tokio::time::timeout(bound, async { while self.tasks.join_next().await.is_some() {} }).await;
        let cut = if finished.is_ok() { 0 } else { self.tasks.len() };
        self.tasks.shutdown().await;
        tracing::info!(drained = in_flight.saturating_sub(cut), cut, "stdio closed");
    }
}

/// What the read loop turned to first.
enum Next {
    /// A slot for the request that waits.
    Slot(OwnedSemaphorePermit),
    /// A line, or the end of input.
    Line(Option<Line>),
}

/// What the envelope check decided.
enum Opened {
    /// Dispatch with this envelope (and, for legacy requests, the session).
    Dispatch(Arc<RequestMeta>, Option<Arc<Session>>),
    /// Already answered (`initialize`, a legacy utility).
    Answered(serde_json::Value),
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::{json, Map, Value};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
    use tokio::sync::Notify;

    use crate::base::error::ToolError;
    use crate::protocol::Tool;
    use crate::server::Server;
    use crate::transport::stdio::Pipe;

    async fn send(input: &mut DuplexStream, message: &Value) {
        input.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    /// The next line the server writes within a second (of paused time), as JSON.
    async fn next(output: &mut Lines<BufReader<DuplexStream>>) -> Option<Value> {
        let line = tokio::time::timeout(Duration::from_secs(1), output.next_line()).await.ok()?;
        Some(serde_json::from_str(&line.unwrap().expect("still serving")).unwrap())
    }

    fn call(id: i64) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "held", "arguments": {}}})
    }

    fn cancel(id: i64) -> Value {
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
    }

    /// The bound of the sixth audit's E3 fix: with every slot taken, one request waits and
    /// the lines after it are read (a `ping` is answered, a cancellation drops the waiting
    /// request); a second request stops the reading until the first runs.
    #[tokio::test(start_paused = true)]
    async fn at_the_bound_one_request_waits_and_the_lines_after_it_are_read_up_to_the_next_request() {
        let gate = Arc::new(Notify::new());
        let opens = gate.clone();
        let held = Tool::new("held").handler(move |_ctx, _args: Map<String, Value>| {
            let gate = opens.clone();
            async move {
                gate.notified().await;
                Ok::<_, ToolError>("released")
            }
        });
        let server = crate::transport::testing::with_own_keys(Server::new("bound", "0").tool(held));
        let (mut input, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, output) = tokio::io::duplex(1 << 16);
        tokio::spawn(server.serve(Pipe::new(server_in, server_out).max_requests(1)));
        let mut output = BufReader::new(output).lines();
        let ping = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});

        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}),
        )
        .await;
        assert_eq!(next(&mut output).await.expect("initialized")["id"], 0);
        // Call 1 takes the one slot, call 2 waits for it; a ping is read and answered.
        for message in [call(1), call(2), ping(3)] {
            send(&mut input, &message).await;
        }
        assert_eq!(next(&mut output).await.expect("the ping is answered")["id"], 3);
        // A cancellation is read too, and drops call 2 before it ever runs.
        send(&mut input, &cancel(2)).await;
        // Call 4 waits; call 5 stops the reading until call 4 runs: this ping is not read.
        for message in [call(4), call(5), ping(6)] {
            send(&mut input, &message).await;
        }
        assert_eq!(next(&mut output).await, None, "read past the second request beyond the bound");
        // Call 1 ends: call 4 runs, call 5 waits, and the reading goes on.
        gate.notify_one();
        let mut ids: Vec<Value> = vec![next(&mut output).await.unwrap()["id"].clone()];
        ids.push(next(&mut output).await.expect("the ping is read once call 4 runs")["id"].clone());
        assert_eq!(ids, [json!(1), json!(6)]);
        for id in [4, 5] {
            gate.notify_one();
            assert_eq!(next(&mut output).await.expect("the waiting calls run in turn")["id"], id);
        }
        assert_eq!(next(&mut output).await, None, "the cancelled call never ran");
    }
}
