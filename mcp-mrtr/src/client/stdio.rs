//! A server spoken to over stdio: a child process of the client's, newline-delimited JSON
//! on its stdin and stdout (everything else is in `_meta`). One task reads the child's
//! stdout and hands each response to the request waiting for its id; a line past
//! [`ClientLimits::max_response_bytes`] ends the connection rather than grow without bound.
//! The child's stderr goes where its `Command` says (by default, the client's own).
//!
//! The child dies with the client: [`Client::close`](super::Client::close) closes its stdin
//! and gives it [`ClientLimits::exit_wait`] to exit before killing it; a client dropped
//! without closing kills it at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::error::ClientError;
use super::message::reply;
use super::ClientLimits;
use crate::protocol::JsonObject;

/// Requests waiting for their response, by id; `None` once the child's stdout has ended.
type Waiting = Arc<Mutex<Option<HashMap<u64, oneshot::Sender<Value>>>>>;

pub(super) struct StdioTransport {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    child: Mutex<Option<Child>>,
    waiting: Waiting,
    reader: JoinHandle<()>,
    limits: ClientLimits,
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl StdioTransport {
    pub(super) fn spawn(mut command: Command, limits: ClientLimits) -> Result<Self, ClientError> {
        let program = command.as_std().get_program().to_string_lossy().into_owned();
        command.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).kill_on_drop(true);
        let mut child =
            command.spawn().map_err(|error| ClientError::Connect(format!("could not start {program}: {error}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("both were piped above")
        };
        let waiting: Waiting = Arc::new(Mutex::new(Some(HashMap::new())));
        let reader = tokio::spawn(read_replies(stdout, waiting.clone(), limits.max_response_bytes, program));
        Ok(Self {
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            child: Mutex::new(Some(child)),
            waiting,
            reader,
            limits,
        })
    }

    /// Sends request `id` (its JSON `body`, one line) and returns its result or error.
    pub(super) async fn request(&self, id: u64, mut body: Vec<u8>) -> Result<JsonObject, ClientError> {
        let gone = || ClientError::Connect("the server's process has exited".into());
        let (sender, receiver) = oneshot::channel();
        match lock(&self.waiting).as_mut() {
            Some(waiting) => waiting.insert(id, sender),
            None => return Err(gone()),
        };
        // Removed however the wait ends: answered, timed out, or the caller gone.
        let _forget = Forget { waiting: &self.waiting, id };
        body.push(b'\n');
        {
            let mut stdin = self.stdin.lock().await;
            let stdin = stdin.as_mut().ok_or_else(|| ClientError::Connect("the client was closed".into()))?;
            let written = async {
                stdin.write_all(&body).await?;
                stdin.flush().await
            };
            written
                .await
                .map_err(|error| ClientError::Connect(format!("could not write to the server's stdin: {error}")))?;
        }
        let after = self.limits.request_timeout;
        let message = tokio::time::timeout(after, receiver)
            .await
            .map_err(|_| ClientError::Timeout { waiting_for: "the response", after })?
            .map_err(|_| gone())?;
        reply(message, id)
    }

    /// Closes the child's stdin, then waits for it to exit, at most `exit_wait`, before
    /// killing it.
    pub(super) async fn close(&self) {
        self.stdin.lock().await.take();
        let child = lock(&self.child).take();
        if let Some(mut child) = child {
            if tokio::time::timeout(self.limits.exit_wait, child.wait()).await.is_err() {
                tracing::warn!(after = ?self.limits.exit_wait, "the server's process did not exit when its stdin closed; killing it");
                let _ = child.kill().await;
            }
        }
    }
}

/// Forgets a request's wait when dropped.
struct Forget<'a> {
    waiting: &'a Waiting,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        if let Some(waiting) = lock(self.waiting).as_mut() {
            waiting.remove(&self.id);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads the child's stdout to its end, handing each response to its request. Lines that
/// are not responses (notifications, anything unreadable) are passed over; a line longer
/// than `limit` ends the reading, as the end of the stream does: every request waiting, and
/// every later one, fails.
async fn read_replies(stdout: ChildStdout, waiting: Waiting, limit: usize, program: String) {
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
        let Some(id) = message.get("id").and_then(Value::as_u64) else { continue };
        if message.get("method").is_some() {
            // A request from the server: 2026-07-28 servers ask by `input_required` instead.
            continue;
        }
        let sender = lock(&waiting).as_mut().and_then(|waiting| waiting.remove(&id));
        if let Some(sender) = sender {
            let _ = sender.send(message);
        }
    }
    lock(&waiting).take();
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
