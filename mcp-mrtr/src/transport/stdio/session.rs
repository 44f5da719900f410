//! One stdio connection: its lines read and served, the requests running (each holding a
//! slot), and the legacy session opened on it.

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
use crate::Error;

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
    /// A permit per request running: the next line is read only once one is free.
    slots: Arc<Semaphore>,
    max_json_values: usize,
}

impl StdioSession {
    pub(super) fn new(server: Arc<Engine>, out: mpsc::Sender<Outgoing>, settings: Settings) -> Self {
        let drain = Drain::new();
        let mut extensions = Extensions::new();
        extensions.insert(drain.watch());
        Self {
            server,
            out,
            tasks: JoinSet::new(),
            in_flight: InFlight::default(),
            sessions: Sessions::default(),
            legacy: None,
            drain,
            extensions: Arc::new(extensions),
            slots: Arc::new(Semaphore::new(settings.max_requests)),
            max_json_values: settings.max_json_values,
        }
    }

    /// Serves lines until the reader ends or fails, or `shutdown` resolves. A line is
    /// read only once a request could run: at the bound the pipe fills and holds the
    /// client back (the fifth audit's D4: 20,000 lines read at once held 346 MiB).
    pub(super) async fn read_until<R: AsyncBufRead + Unpin>(
        &mut self,
        mut input: Input<R>,
        shutdown: impl Future<Output = ()>,
    ) -> io::Result<()> {
        tokio::pin!(shutdown);
        loop {
            let slot = tokio::select! {
                biased;
                () = &mut shutdown => return Ok(()),
                slot = self.slots.clone().acquire_owned() => slot.expect("the session never closes its slots"),
            };
            let line = tokio::select! {
                biased;
                () = &mut shutdown => return Ok(()),
                line = input.next() => line?,
            };
            match line {
                Some(line) => self.on_line(line, slot).await,
                None => return Ok(()),
            }
        }
    }

    /// Serves one line; a request runs holding `slot`, anything else gives it back.
    async fn on_line(&mut self, line: Line, slot: OwnedSemaphorePermit) {
        let bytes = match line {
            Line::Message(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => return,
            Line::Message(bytes) => bytes,
            Line::TooLong => {
                let error = Error::invalid_request(format!("message longer than {MAX_LINE_BYTES} bytes"));
                return self.send(error_message(None, &error)).await;
            }
        };
        if let Err(error) = size::check(&bytes, self.max_json_values) {
            return self.send(error_message(None, &error)).await;
        }
        // Every byte of the line is read inside the boundary: a parser's panic costs this
        // line an error answer, and the server reads the next one.
        if contain(self.on_message(&bytes, slot)).await.is_none() {
            self.send(panicked(&bytes)).await;
        }
    }

    async fn on_message(&mut self, bytes: &[u8], slot: OwnedSemaphorePermit) {
        match read_message(bytes) {
            Err((id, error)) => self.send(error_message(id, &error)).await,
            Ok(Incoming::Notification { method, params }) => self.on_notification(&method, params.as_ref()),
            Ok(Incoming::Request(request)) => self.on_request(request, slot).await,
            // Answers to the legacy bridge's requests.
            Ok(Incoming::Response { id, outcome }) => {
                if !self.legacy.as_ref().is_some_and(|session| session.deliver(&id, outcome)) {
                    tracing::debug!(%id, "ignoring a response nobody waits for");
                }
            }
        }
    }

    async fn on_request(&mut self, request: Request, slot: OwnedSemaphorePermit) {
        let (meta, session) = match self.open_envelope(&request) {
            Ok(Opened::Dispatch(meta, session)) => (meta, session),
            Ok(Opened::Answered(result)) => {
                return self.send(Outgoing::Result { id: request.id, result: ResultJson::from_value(&result) }).await;
            }
            Err(error) => return self.send(error_message(Some(request.id), &error)).await,
        };
        let (server, out, id) = (self.server.clone(), self.out.clone(), request.id.clone());
        let bridge =
            session.map(|session| Arc::new(SessionBridge::new(session)) as Arc<dyn crate::mrtr::context::Bridge>);
        let (note_tx, mut note_rx) = mpsc::channel(16);
        let handler_timeout = self.server.handler_timeout(Some(STDIO_HANDLER_TIMEOUT));
        let transport = Delivery {
            notifier: Some(note_tx),
            headers: None,
            extensions: self.extensions.clone(),
            bridge,
            handler_timeout,
        };
        // Reap finished requests, so a long connection does not collect them.
        while self.tasks.try_join_next().is_some() {}
        let reply = self.in_flight.track(id, async move { server.handle(request, meta, transport).await });
        self.tasks.spawn(async move {
            // Held until the answer is queued: a request counts while it runs and while
            // its answer waits for the client to read.
            let _slot = slot;
            tokio::pin!(reply);
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
        if let Some(outcome) = legacy::utility(&self.server, &session, request) {
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
            let transport = Delivery { extensions: extensions.clone(), ..Delivery::default() };
            let view = crate::routes::catalog::RequestView::new(&meta, &transport);
            let ended = session.open_stream();
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

    /// `notifications/cancelled` stops the named request; it then answers nothing. A
    /// cancellation of an unknown or finished request is ignored.
    fn on_notification(&mut self, method: &str, params: Option<&serde_json::Value>) {
        if method != "notifications/cancelled" {
            return;
        }
        let id = params.and_then(|p| p.get("requestId")).and_then(RequestId::from_value);
        if !id.is_some_and(|id| self.in_flight.cancel(&id)) {
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

/// What the envelope check decided.
enum Opened {
    /// Dispatch with this envelope (and, for legacy requests, the session).
    Dispatch(Arc<RequestMeta>, Option<Arc<Session>>),
    /// Already answered (`initialize`, a legacy utility).
    Answered(serde_json::Value),
}
