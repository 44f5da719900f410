//! A server spoken to over stdio: a child process of the client's, newline-delimited JSON
//! on its stdin and stdout (everything else is in `_meta`). One task writes the lines the
//! requests queue; one reads the child's stdout and hands each response to the request
//! waiting for its id, and each notification to the call or subscription it names (a
//! progress token, a subscription id). A line past [`ClientLimits::max_response_bytes`]
//! ends the connection rather than grow without bound. The child's stderr goes where its
//! `Command` says (by default, the client's own).
//!
//! A request the caller stops waiting for (its future dropped, or timed out) is cancelled
//! with `notifications/cancelled`, the way stdio cancels. In a 2025-11-25 session (opened
//! with `initialize`) the server's own requests are answered from the application's
//! [`Answers`], each on a task of its own, and its notifications that name no call go to
//! the session's watchers (list changes, resource updates). The child dies with the client:
//! [`Client::close`](super::Client::close) closes its stdin and gives it
//! [`ClientLimits::exit_wait`] to exit before killing it; a client dropped without closing
//! kills it at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::answers::Answers;
use super::error::ClientError;
use super::message::{reply, route_of};
use super::ClientLimits;
use crate::protocol::JsonObject;

/// What the requests share with the tasks that write and read.
struct Shared {
    /// Whether `initialize` opened a 2025-11-25 session.
    session: AtomicBool,
    /// The lines to write; `None` once closed (the writer then closes the child's stdin).
    lines: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    /// Where what the server writes goes; `None` once the child's stdout has ended.
    routes: Mutex<Option<Table>>,
}

#[derive(Default)]
struct Table {
    /// Requests waiting for their response, by id.
    responses: HashMap<u64, oneshot::Sender<Value>>,
    /// Calls and subscriptions waiting for notifications, by progress token or
    /// subscription id (both taken from the request ids, so they never meet).
    notices: HashMap<u64, mpsc::Sender<Value>>,
    /// Who hears a session's notifications that name no call.
    watchers: Vec<mpsc::Sender<Value>>,
}

/// How many lines may wait to be written before a request waits its turn.
const QUEUED_LINES: usize = 64;

pub(super) struct StdioTransport {
    shared: Arc<Shared>,
    child: Mutex<Option<Child>>,
    tasks: [JoinHandle<()>; 2],
    limits: ClientLimits,
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.tasks.iter().for_each(JoinHandle::abort);
    }
}

impl StdioTransport {
    pub(super) fn spawn(
        mut command: Command,
        limits: ClientLimits,
        answers: &Arc<Answers>,
    ) -> Result<Self, ClientError> {
        let program = command.as_std().get_program().to_string_lossy().into_owned();
        command.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).kill_on_drop(true);
        let mut child =
            command.spawn().map_err(|error| ClientError::Connect(format!("could not start {program}: {error}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("both were piped above")
        };
        let (lines, queued) = mpsc::channel(QUEUED_LINES);
        let shared = Arc::new(Shared {
            session: AtomicBool::new(false),
            lines: Mutex::new(Some(lines)),
            routes: Mutex::new(Some(Table::default())),
        });
        let reading = Reading {
            shared: shared.clone(),
            answers: Arc::downgrade(answers),
            limit: limits.max_response_bytes,
            program,
        };
        let reader = tokio::spawn(read_messages(stdout, reading));
        let writer = tokio::spawn(write_lines(stdin, queued));
        Ok(Self { shared, child: Mutex::new(Some(child)), tasks: [reader, writer], limits })
    }

    /// Sends request `id` (its JSON `body`, one line) and returns its result or error. The
    /// notifications that name `notices`' key (a progress token) go to its sender meanwhile.
    pub(super) async fn request(
        &self,
        id: u64,
        body: Vec<u8>,
        notices: Option<(u64, mpsc::Sender<Value>)>,
    ) -> Result<JsonObject, ClientError> {
        let (mut pending, response) = self.expect(id, notices)?;
        self.write(body).await?;
        pending.sent = true;
        let after = self.limits.request_timeout;
        let message = tokio::time::timeout(after, response)
            .await
            .map_err(|_| ClientError::Timeout { waiting_for: "the response", after })?
            .map_err(|_| gone())?;
        reply(message, id)
    }

    /// From now on the server speaks a 2025-11-25 session: its requests are answered.
    pub(super) fn open_session(&self) {
        self.shared.session.store(true, Ordering::Release);
    }

    /// Whether `initialize` opened a 2025-11-25 session.
    pub(super) fn in_session(&self) -> bool {
        self.shared.session.load(Ordering::Acquire)
    }

    /// Sends a notification of the client's (`notifications/initialized`).
    pub(super) async fn notify(&self, method: &str) -> Result<(), ClientError> {
        self.write(serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method})).expect("JSON")).await
    }

    /// Watches a session's notifications that name no call, from now on.
    pub(super) fn watch(&self, watcher: mpsc::Sender<Value>) -> Result<(), ClientError> {
        lock(&self.shared.routes).as_mut().ok_or_else(gone)?.watchers.push(watcher);
        Ok(())
    }

    /// Sends the `subscriptions/listen` request `id` and returns the subscription: its
    /// notifications, and its response, which ends it. Dropping the [`Pending`] cancels it.
    pub(super) async fn subscribe(
        &self,
        id: u64,
        body: Vec<u8>,
    ) -> Result<(Pending, mpsc::Receiver<Value>, oneshot::Receiver<Value>), ClientError> {
        let (notices, received) = mpsc::channel(QUEUED_NOTICES);
        let (mut pending, response) = self.expect(id, Some((id, notices)))?;
        self.write(body).await?;
        pending.sent = true;
        Ok((pending, received, response))
    }

    /// Waits for the response to `id` (and `notices`) from now until the returned
    /// [`Pending`] is dropped.
    fn expect(
        &self,
        id: u64,
        notices: Option<(u64, mpsc::Sender<Value>)>,
    ) -> Result<(Pending, oneshot::Receiver<Value>), ClientError> {
        let (sender, response) = oneshot::channel();
        let mut routes = lock(&self.shared.routes);
        let table = routes.as_mut().ok_or_else(gone)?;
        table.responses.insert(id, sender);
        let notice_key = notices.map(|(key, notices)| {
            table.notices.insert(key, notices);
            key
        });
        let pending = Pending { shared: self.shared.clone(), id, notice_key, sent: false };
        Ok((pending, response))
    }

    async fn write(&self, mut line: Vec<u8>) -> Result<(), ClientError> {
        line.push(b'\n');
        let lines =
            lock(&self.shared.lines).clone().ok_or_else(|| ClientError::Connect("the client was closed".into()))?;
        lines.send(line).await.map_err(|_| gone())
    }

    /// Closes the child's stdin, then waits for it to exit, at most `exit_wait`, before
    /// killing it.
    pub(super) async fn close(&self) {
        lock(&self.shared.lines).take();
        let child = lock(&self.child).take();
        if let Some(mut child) = child {
            if tokio::time::timeout(self.limits.exit_wait, child.wait()).await.is_err() {
                tracing::warn!(after = ?self.limits.exit_wait, "the server's process did not exit when its stdin closed; killing it");
                let _ = child.kill().await;
            }
        }
    }
}

/// How many notifications of one call or subscription may wait to be read; past it, the
/// newest are dropped (progress is superseded by the next; a change by the next read).
pub(super) const QUEUED_NOTICES: usize = 64;

fn gone() -> ClientError {
    ClientError::Connect("the server's process has exited".into())
}

/// A request on the wire: when dropped, its routes are forgotten and, if it was sent and
/// is still unanswered, the server is told with `notifications/cancelled`.
pub(super) struct Pending {
    shared: Arc<Shared>,
    id: u64,
    notice_key: Option<u64>,
    sent: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut unanswered = false;
        if let Some(table) = lock(&self.shared.routes).as_mut() {
            // The reader takes a response's route when it hands the response over.
            unanswered = table.responses.remove(&self.id).is_some();
            if let Some(key) = self.notice_key {
                table.notices.remove(&key);
            }
        }
        if self.sent && unanswered {
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": self.id, "reason": "the client stopped waiting"}});
            let mut line = serde_json::to_vec(&cancel).expect("JSON");
            line.push(b'\n');
            // Best effort: a queue that is full or closed means the server is gone or behind.
            if let Some(lines) = lock(&self.shared.lines).as_ref() {
                let _ = lines.try_send(line);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Writes the queued lines to the child's stdin, flushing when the queue is empty, until
/// the queue is closed (the child's stdin then closes) or the child stops reading.
async fn write_lines(mut stdin: ChildStdin, mut lines: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = lines.recv().await {
        if stdin.write_all(&line).await.is_err() {
            return;
        }
        if lines.is_empty() && stdin.flush().await.is_err() {
            return;
        }
    }
}

/// What the reader needs besides the child's stdout.
struct Reading {
    shared: Arc<Shared>,
    /// What answers a session's server; weak, so the reader keeps no client alive.
    answers: Weak<Answers>,
    limit: usize,
    program: String,
}

/// Reads the child's stdout to its end, handing each response to its request and each
/// notification to the call or subscription it names; in a session, the server's own
/// requests are answered and its other notifications go to the watchers. Anything else
/// (unreadable lines, a 2026-07-28 server's requests: it asks by `input_required`) is
/// passed over; a line longer than the limit ends the reading, as the end of the stream
/// does: every request waiting, and every later one, fails.
async fn read_messages(stdout: ChildStdout, reading: Reading) {
    let Reading { shared, answers, limit, program } = reading;
    let mut lines = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut lines, &mut line, limit).await {
            Ok(true) => {}
            Ok(false) => break,
            Err(why) => {
                tracing::warn!(server = %program, "{why}; the connection is closed");
                break;
            }
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else { continue };
        let mut routes = lock(&shared.routes);
        let Some(table) = routes.as_mut() else { break };
        match (message.get("method").is_some(), message.get("id")) {
            (false, Some(id)) => {
                let Some(id) = id.as_u64() else { continue };
                // A response ends its request, and the subscription it may be.
                table.notices.remove(&id);
                if let Some(sender) = table.responses.remove(&id) {
                    let _ = sender.send(message);
                }
            }
            (true, None) => match route_of(&message).and_then(|key| table.notices.get(&key)) {
                Some(notices) => {
                    let _ = notices.try_send(message);
                }
                None if shared.session.load(Ordering::Acquire) => {
                    table
                        .watchers
                        .retain(|watcher| !matches!(watcher.try_send(message.clone()), Err(TrySendError::Closed(_))));
                }
                None => {}
            },
            (true, Some(_)) if shared.session.load(Ordering::Acquire) => {
                let Some(answers) = answers.upgrade() else { continue };
                let shared = shared.clone();
                // Answered on a task of its own: a person may take minutes, and the
                // responses to other requests must not wait behind them.
                tokio::spawn(async move {
                    let response = super::legacy::respond(&answers, message).await;
                    let mut line = serde_json::to_vec(&response).expect("JSON");
                    line.push(b'\n');
                    // The queue is looked up only now: holding it while the person thinks
                    // would keep a closed client's child waiting for its stdin to end.
                    let lines = lock(&shared.lines).clone();
                    if let Some(lines) = lines {
                        let _ = lines.send(line).await;
                    }
                });
            }
            _ => {}
        }
    }
    lock(&shared.routes).take();
}

/// One line into `line`, without its end; `false` at the end of the stream.
async fn read_line(reader: &mut BufReader<ChildStdout>, line: &mut Vec<u8>, limit: usize) -> Result<bool, String> {
    loop {
        let available =
            reader.fill_buf().await.map_err(|error| format!("reading the server's stdout failed: {error}"))?;
        if available.is_empty() {
            return Ok(!line.is_empty());
        }
        let (taken, ended) = match memchr::memchr(b'\n', available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if line.len() + taken > limit + 1 {
            return Err(format!("the server wrote a line longer than the client's bound of {limit} bytes"));
        }
        line.extend_from_slice(&available[..taken]);
        reader.consume(taken);
        if ended {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(true);
        }
    }
}

/// How long a closed child may take to exit, by default.
pub(super) const EXIT_WAIT: Duration = Duration::from_secs(2);
