//! stdio: one JSON-RPC message per line on stdin, answers and notifications one per line
//! on stdout. No headers, so the envelope is all there is; cancellation is
//! `notifications/cancelled`. A client that starts with `initialize` gets a legacy
//! (2025-11-25) session, and the bridge's requests go out on stdout too.

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::{error_message, read_message};
use crate::context::Transport;
use crate::envelope::{check_version, classify, Era, Incoming, Request, RequestMeta};
use crate::inflight::InFlight;
use crate::legacy::{self, Bridge, Session, Sessions};
use crate::protocol::{Outgoing, RequestId};
use crate::{Error, Server};

/// Longest line accepted on stdin; longer lines are answered with an error and skipped.
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

impl Server {
    /// Serves newline-delimited JSON-RPC on stdin/stdout until stdin closes, then waits
    /// for requests still running.
    pub async fn serve_stdio(self) -> io::Result<()> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves newline-delimited JSON-RPC on any byte stream pair (stdio, a pipe, a socket).
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        // Misconfiguration (a missing State<T>, malformed keys) fails here, before any request.
        self.check_ready()?;
        let (out_tx, out_rx) = mpsc::channel::<Outgoing>(64);
        let writer = tokio::spawn(write_lines(writer, out_rx));
        let mut session = StdioSession {
            server: Arc::new(self),
            out: out_tx,
            tasks: JoinSet::new(),
            in_flight: InFlight::default(),
            sessions: Sessions::default(),
            legacy: None,
            listens: Vec::new(),
        };
        let mut reader = BufReader::new(reader);
        while let Some(line) = read_line(&mut reader).await? {
            session.on_line(line).await;
        }
        session.finish().await;
        writer.await.map_err(io::Error::other)?
    }
}

/// The state of one stdio connection: requests in flight, by id, for cancellation.
struct StdioSession {
    server: Arc<Server>,
    out: mpsc::Sender<Outgoing>,
    tasks: JoinSet<()>,
    /// Requests still running, for `notifications/cancelled`: modern and legacy alike,
    /// since a stdio connection is one client.
    in_flight: InFlight,
    /// The legacy (2025-11-25) session, once the client sent `initialize`.
    sessions: Sessions,
    legacy: Option<Arc<Session>>,
    /// Open `subscriptions/listen` requests: they run until cancelled, so they are ended
    /// when stdin closes instead of being waited for.
    listens: Vec<RequestId>,
}

enum Line {
    Message(Vec<u8>),
    TooLong,
}

impl StdioSession {
    async fn on_line(&mut self, line: Line) {
        let bytes = match line {
            Line::Message(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => return,
            Line::Message(bytes) => bytes,
            Line::TooLong => {
                let error = Error::invalid_request(format!("message longer than {MAX_LINE_BYTES} bytes"));
                return self.send(error_message(None, &error)).await;
            }
        };
        match read_message(&bytes) {
            Err((id, error)) => self.send(error_message(id, &error)).await,
            Ok(Incoming::Notification { method, params }) => self.on_notification(&method, params.as_ref()),
            Ok(Incoming::Request(request)) => self.on_request(request).await,
            // Answers to the legacy bridge's requests.
            Ok(Incoming::Response { id, outcome }) => {
                if !self.legacy.as_ref().is_some_and(|session| session.deliver(&id, outcome)) {
                    tracing::debug!(%id, "ignoring a response nobody waits for");
                }
            }
        }
    }

    async fn on_request(&mut self, request: Request) {
        let (meta, session) = match self.open_envelope(&request) {
            Ok(Opened::Dispatch(meta, session)) => (meta, session),
            Ok(Opened::Answered(result)) => {
                return self.send(Outgoing::Result { id: request.id, result }).await;
            }
            Err(error) => return self.send(error_message(Some(request.id), &error)).await,
        };
        let (server, out, id) = (self.server.clone(), self.out.clone(), request.id.clone());
        let bridge = session.map(|session| Arc::new(Bridge::new(session)));
        let (note_tx, mut note_rx) = mpsc::channel(16);
        // Only per-tool time limits apply: the one client is a local process that can cancel.
        let transport = Transport {
            notifier: Some(note_tx),
            headers: None,
            extensions: Arc::default(),
            bridge,
            handler_timeout: None,
        };
        // Reap finished requests, so a long connection does not collect them.
        while self.tasks.try_join_next().is_some() {}
        self.listens.retain(|id| self.in_flight.is_running(id));
        if request.method == "subscriptions/listen" {
            self.listens.push(id.clone());
        }
        let reply = self.in_flight.track(id, async move { server.handle(request, *meta, transport).await });
        self.tasks.spawn(async move {
            tokio::pin!(reply);
            // Forward the request's notifications (and the bridge's requests) until its
            // reply is ready.
            let reply = loop {
                tokio::select! {
                    biased;
                    reply = &mut reply => break reply,
                    Some(note) = note_rx.recv() => { let _ = out.send(note).await; }
                }
            };
            // A cancelled request sends nothing more, not even what it had queued.
            let Some(reply) = reply else { return };
            while let Ok(note) = note_rx.try_recv() {
                let _ = out.send(note).await;
            }
            let _ = out.send(reply.to_outgoing()).await;
        });
    }

    /// Checks what a stdio request can be checked for. There are no headers: a modern
    /// request's body version is its version; after `initialize`, requests without a
    /// modern envelope belong to the legacy session.
    fn open_envelope(&mut self, request: &Request) -> Result<Opened, Error> {
        let era = classify(request, None, self.legacy.is_some());
        if era == Era::Modern || (era == Era::Unknown && self.legacy.is_none()) {
            let meta = RequestMeta::parse(request.params.as_ref())?;
            check_version(&meta.protocol_version)?;
            return Ok(Opened::Dispatch(Box::new(meta), None));
        }
        if request.method == "initialize" {
            let (id, result) = legacy::initialize(&self.server, &self.sessions, request, None)?;
            self.legacy = self.sessions.find(&id);
            return Ok(Opened::Answered(result));
        }
        let session = self.legacy.clone().ok_or_else(|| Error::invalid_request("send initialize first"))?;
        if let Some(outcome) = legacy::utility(&session, request) {
            return outcome.map(Opened::Answered);
        }
        Ok(Opened::Dispatch(Box::new(legacy::meta(&session, request)), Some(session)))
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

    async fn finish(mut self) {
        for id in &self.listens {
            self.in_flight.cancel(id);
        }
        while self.tasks.join_next().await.is_some() {}
    }
}

/// What the envelope check decided.
enum Opened {
    /// Dispatch with this envelope (and, for legacy requests, the session).
    Dispatch(Box<RequestMeta>, Option<Arc<Session>>),
    /// Already answered (`initialize`, a legacy utility).
    Answered(serde_json::Value),
}

/// Reads one line without ever buffering more than [`MAX_LINE_BYTES`] of it.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok((!line.is_empty() || too_long).then(|| finish_line(line, too_long)));
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], i + 1),
            None => (buf, buf.len()),
        };
        if !too_long {
            line.extend_from_slice(chunk);
            if line.len() > MAX_LINE_BYTES {
                too_long = true;
                line = Vec::new();
            }
        }
        let found_newline = done > chunk.len();
        reader.consume(done);
        if found_newline {
            return Ok(Some(finish_line(line, too_long)));
        }
    }
}

fn finish_line(line: Vec<u8>, too_long: bool) -> Line {
    if too_long {
        Line::TooLong
    } else {
        Line::Message(line)
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(mut writer: W, mut rx: mpsc::Receiver<Outgoing>) -> io::Result<()> {
    while let Some(message) = rx.recv().await {
        let mut line = message.to_json();
        line.push('\n');
        writer.write_all(line.as_bytes()).await?;
        writer.flush().await?;
    }
    Ok(())
}
