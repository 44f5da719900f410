//! stdio: one JSON-RPC message per line on stdin, answers and notifications one per line
//! on stdout. No headers, so the envelope is all there is; cancellation is
//! `notifications/cancelled`. A client that starts with `initialize` gets a legacy
//! (2025-11-25) session, and the bridge's requests go out on stdout too.
//!
//! Serving ends when stdin closes or the shutdown signal comes: requests still running
//! get a bound to finish (listen streams end with their result at once), the rest are
//! cut, and the tasks running here are handed back.

mod lines;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::http::Extensions;
use futures_util::future::BoxFuture;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use self::lines::{Input, Line, MAX_LINE_BYTES};
use super::serve::sealed::Sealed;
use super::{error_message, read_message};
use crate::base::inflight::InFlight;
use crate::bounds::fair::ClientId;
use crate::bounds::shutdown::{self, Drain, Draining, Signal};
use crate::dispatch::Engine;
use crate::intake::envelope::size::{self, MAX_JSON_VALUES};
use crate::intake::envelope::{check_version, classify, Era, Incoming, Request, RequestMeta};
use crate::mrtr::context::Delivery;
use crate::protocol::{Method, Outgoing, RequestId, ResultJson};
use crate::transport::legacy::{self, Session, SessionBridge, Sessions};
use crate::{Error, Server};

/// The process's stdin and stdout, one JSON-RPC message per line: how desktop and CLI
/// hosts (Claude Code, Claude Desktop, editors) launch a server. Serve with
/// `server.serve(Stdio::new())`; [`Pipe::new`] serves any other byte stream the same way.
///
/// Serving ends when stdin closes or on SIGTERM or Ctrl-C (or the signal given to
/// [`Serve::with_graceful_shutdown`](crate::serve::Serve::with_graceful_shutdown)). Then
/// requests still running get 10 s to finish (`subscriptions/listen` streams end at once
/// with their result), the rest are cut, and the tasks running here are handed back.
/// At most [`max_requests`](Self::max_requests) requests run at once (64 by default): at
/// the bound stdin is not read until one finishes, so a client that sends faster than it
/// reads the answers is held back by its own pipe, and the server's memory stays bounded.
/// Unless [`Server::handler_timeout`](crate::Server::handler_timeout) says otherwise, one
/// run of a handler may take 5 minutes ([`STDIO_HANDLER_TIMEOUT`]).
/// Logs must go to stderr: stdout is the protocol's. Stdin and stdout each have a thread
/// of their own, and one client is served best on Tokio's current-thread runtime (the
/// guide's serving chapter, "One thread for stdio", has the figures).
///
/// ```no_run
/// use mcp_mrtr::{stdio::Stdio, Server};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> std::io::Result<()> {
///     Server::new("hello", "1.0.0").serve(Stdio::new()).await
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Stdio {
    settings: Settings,
}

/// What bounds one stdio connection.
#[derive(Clone, Copy, Debug)]
struct Settings {
    max_requests: usize,
    max_json_values: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self { max_requests: MAX_REQUESTS, max_json_values: MAX_JSON_VALUES }
    }
}

/// The default of [`Stdio::max_requests`]: an HTTP client's share of the handler slots.
pub const MAX_REQUESTS: usize = 64;

/// How long one run of a handler may take over stdio unless
/// [`Server::handler_timeout`](crate::Server::handler_timeout) says otherwise: longer than
/// any host waits on a tool call it made (a longer job belongs in a task), short enough
/// that a stuck handler does not hold its place and memory for good.
pub const STDIO_HANDLER_TIMEOUT: Duration = Duration::from_secs(300);

impl Default for Stdio {
    fn default() -> Self {
        Self::new()
    }
}

impl Stdio {
    /// The process's stdin and stdout.
    pub fn new() -> Self {
        Self { settings: Settings::default() }
    }

    /// How many requests may run at once (default [`MAX_REQUESTS`], at least 1). At the
    /// bound, stdin is not read until a request finishes: answers to the server's own
    /// questions and cancellations wait behind it too, so keep it above the number of
    /// calls a host keeps open at once.
    pub fn max_requests(mut self, max: usize) -> Self {
        self.settings.max_requests = max.max(1);
        self
    }

    /// How many JSON values one line may hold (default [`MAX_JSON_VALUES`]): a value
    /// takes 72 bytes once parsed however few it took on the line, so a line of `[0,0,…]`
    /// would parse to 36 times its size. A line past it is answered `-32600`, unparsed.
    pub fn max_json_values(mut self, max: usize) -> Self {
        self.settings.max_json_values = max;
        self
    }
}

/// A byte stream pair served as stdio: [`Pipe::new`].
pub struct Pipe<R, W> {
    reader: R,
    writer: W,
    settings: Settings,
}

impl<R, W> Pipe<R, W> {
    /// Newline-delimited JSON-RPC on any byte stream pair (a pipe, a socket, an in-memory
    /// duplex in a test), served as [`Stdio`] is, until the reader ends. Nothing stops it on a
    /// signal unless [`Serve::with_graceful_shutdown`](crate::serve::Serve::with_graceful_shutdown)
    /// says so.
    ///
    /// ```
    /// use mcp_mrtr::{stdio::Pipe, Server};
    /// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let (client, server_side) = tokio::io::duplex(64 * 1024);
    /// let (reader, writer) = tokio::io::split(server_side);
    /// let server = Server::new("hello", "1.0.0");
    /// let serving = tokio::spawn(async move { server.serve(Pipe::new(reader, writer)).await });
    ///
    /// let (client_reader, mut client_writer) = tokio::io::split(client);
    /// client_writer.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await?;
    /// let mut answer = String::new();
    /// BufReader::new(client_reader).read_line(&mut answer).await?;
    /// assert!(answer.contains("\"id\":1"));
    /// drop(client_writer); // the server's reader ends: serving ends
    /// serving.await.expect("no panic")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self { reader, writer, settings: Settings::default() }
    }

    /// How many requests may run at once: see [`Stdio::max_requests`].
    #[must_use]
    pub fn max_requests(mut self, max: usize) -> Self {
        self.settings.max_requests = max.max(1);
        self
    }

    /// How many JSON values one line may hold: see [`Stdio::max_json_values`].
    #[must_use]
    pub fn max_json_values(mut self, max: usize) -> Self {
        self.settings.max_json_values = max;
        self
    }
}

impl<R, W> std::fmt::Debug for Pipe<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pipe(..)")
    }
}

impl Sealed for Stdio {
    fn serve(self, server: Server, shutdown: Option<Signal>) -> BoxFuture<'static, io::Result<()>> {
        // Installed now, before the first line is read, so a signal is never missed.
        let shutdown = shutdown.unwrap_or_else(|| Signal::new(crate::bounds::shutdown::shutdown_signal()));
        let open = || Ok((Input::<tokio::io::Empty>::Thread(lines::stdin_thread()?), lines::stdout_thread()?));
        let settings = self.settings;
        Box::pin(async move { serve_lines(server, open, shutdown.received(), settings).await })
    }
}

impl<R, W> Sealed for Pipe<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    fn serve(self, server: Server, shutdown: Option<Signal>) -> BoxFuture<'static, io::Result<()>> {
        let settings = self.settings;
        let open = move || Ok((Input::Stream(BufReader::new(self.reader)), lines::stream_output(self.writer)));
        Box::pin(async move {
            match shutdown {
                Some(signal) => serve_lines(server, open, signal.received(), settings).await,
                None => serve_lines(server, open, std::future::pending(), settings).await,
            }
        })
    }
}

/// Serves newline-delimited JSON-RPC on the lines `open` opens until the input ends or
/// `shutdown` resolves, then drains and hands back the tasks running here.
async fn serve_lines<R: AsyncBufRead + Unpin>(
    server: Server,
    open: impl FnOnce() -> io::Result<(Input<R>, lines::Output)>,
    shutdown: impl Future<Output = ()>,
    settings: Settings,
) -> io::Result<()> {
    // Misconfiguration (a missing State<T>, malformed keys) fails here, before any request
    // and before anything is read.
    let engine = Arc::new(server.into_engine());
    engine.check_ready(crate::intake::request_state::Reach::ThisProcess)?;
    let (input, (out, written)) = open()?;
    // From now on this instance takes over the tasks of instances that died.
    engine.start();
    let mut session = StdioSession::new(engine.clone(), out, settings);
    let read = session.read_until(input, shutdown).await;
    session.finish(shutdown::DEFAULT_TIMEOUT).await;
    engine.hand_back_tasks().await;
    read?;
    // Every sender is gone now: the writer ends once it wrote what was queued.
    written.await.unwrap_or(Ok(()))
}

/// The state of one stdio connection: requests in flight, by id, for cancellation.
struct StdioSession {
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
    fn new(server: Arc<Engine>, out: mpsc::Sender<Outgoing>, settings: Settings) -> Self {
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
    async fn read_until<R: AsyncBufRead + Unpin>(
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
        if super::contain(self.on_message(&bytes, slot)).await.is_none() {
            self.send(super::panicked(&bytes)).await;
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
        let transport = Delivery { extensions: self.extensions.clone(), ..Delivery::default() };
        if let Some(outcome) = legacy::utility(&self.server, &self.sessions, &session, request, &transport) {
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
    async fn finish(mut self, bound: Duration) {
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use serde_json::{json, Map, Value};
    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::{protocol::Tool, ToolError};

    /// Sets its flag when dropped.
    struct Flag(Arc<AtomicBool>);

    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn at_the_end_of_input_a_request_past_the_bound_is_cut_and_serving_ends() {
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = dropped.clone();
        let endless = Tool::new("endless").handler(move |_ctx, _args: Map<String, Value>| {
            let flag = Flag(flag.clone());
            async move {
                let _flag = flag;
                std::future::pending::<Result<String, ToolError>>().await
            }
        });
        let server = crate::transport::testing::with_own_keys(Server::new("cut", "0").tool(endless));
        let (mut input, server_in) = tokio::io::duplex(4096);
        let (server_out, _output) = tokio::io::duplex(4096);
        let serving = tokio::spawn(async move { server.serve(Pipe::new(server_in, server_out)).await });
        let meta = json!({ "io.modelcontextprotocol/protocolVersion": crate::protocol::PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {} });
        let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "endless", "_meta": meta } });
        input.write_all(format!("{call}\n").as_bytes()).await.unwrap();
        drop(input);
        let started = tokio::time::Instant::now();
        serving.await.unwrap().unwrap();
        // Virtual time: the wait is exactly the bound, not a measurement.
        let waited = started.elapsed();
        assert!(waited >= shutdown::DEFAULT_TIMEOUT && waited < shutdown::DEFAULT_TIMEOUT * 2, "{waited:?}");
        assert!(dropped.load(Ordering::SeqCst), "the handler still runs");
    }
}
