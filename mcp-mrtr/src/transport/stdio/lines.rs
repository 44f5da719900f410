//! The bytes of stdio: lines in, lines out. Byte streams, and the process's stdin and
//! stdout when they are pipes or sockets (see `piped`), are read and written on the
//! runtime. Otherwise (a terminal, a file, a stdout shared with stderr) the process's
//! stdin and stdout each get a thread of their own, which talks to the runtime over a
//! channel.
//!
//! Why threads there rather than tokio's `stdin()` and `stdout()`: those hand every read
//! and write to its blocking pool, which costs a thread hand-off there and back for each
//! message, and a read on that pool cannot be cancelled, so a runtime dropped after a
//! signal would wait for the client's next line. A thread of our own blocks in `read` and
//! `write` directly: one hand-off per message, and the process exits without waiting for it.

use std::io::{self, BufRead, Write as _};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::Outgoing;

/// Longest line accepted on stdin; longer lines are answered with an error and skipped.
pub(super) const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// One line read.
pub(super) enum Line {
    Message(Vec<u8>),
    /// Longer than [`MAX_LINE_BYTES`]: skipped, never buffered whole.
    TooLong,
}

/// Where a session's lines come from.
pub(super) enum Input<R> {
    /// Read on the runtime, with what was read so far of the next line.
    Stream(R, Partial),
    /// Read by the stdin thread.
    Thread(mpsc::Receiver<io::Result<Line>>),
}

impl<R: AsyncBufRead + Unpin> Input<R> {
    /// Lines read from `reader` on the runtime.
    pub(super) fn stream(reader: R) -> Self {
        Self::Stream(reader, Partial::default())
    }

    /// The next line, or `None` at the end of input.
    ///
    /// Cancel-safe: the session drops this future when a request slot frees first, and
    /// the part of a line read by then is kept in `self`, not in the future, so the next
    /// call goes on from there. (`fill_buf` consumes nothing, and what it returned is
    /// taken and consumed with no wait in between.)
    pub(super) async fn next(&mut self) -> io::Result<Option<Line>> {
        match self {
            Self::Stream(reader, partial) => loop {
                let (taken, done) = partial.take(reader.fill_buf().await?);
                reader.consume(taken);
                if let Read::Done(line) = done {
                    return Ok(line);
                }
            },
            Self::Thread(lines) => lines.recv().await.transpose(),
        }
    }
}

/// Stdin, read line by line on a thread of its own.
pub(super) fn stdin_thread() -> io::Result<mpsc::Receiver<io::Result<Line>>> {
    // A few lines of slack: the thread reads ahead while the runtime dispatches.
    let (lines, received) = mpsc::channel(16);
    std::thread::Builder::new().name("mcp-mrtr-stdin".into()).spawn(move || {
        let mut stdin = io::stdin().lock();
        loop {
            let (line, last) = match read_line(&mut stdin) {
                Ok(Some(line)) => (Ok(line), false),
                Ok(None) => return,
                Err(error) => (Err(error), true),
            };
            // Fails once serving ended: then this thread is done too.
            if lines.blocking_send(line).is_err() || last {
                return;
            }
        }
    })?;
    Ok(received)
}

/// Reads one line, blocking, never buffering more than [`MAX_LINE_BYTES`] of it.
fn read_line(reader: &mut impl BufRead) -> io::Result<Option<Line>> {
    let mut partial = Partial::default();
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        let (taken, done) = partial.take(buf);
        reader.consume(taken);
        if let Read::Done(line) = done {
            return Ok(line);
        }
    }
}

/// Where reading a line stands after a buffer.
enum Read {
    /// The line goes on in the next buffer.
    More,
    /// Done: the line, or at the end of input the last one if it had no newline.
    Done(Option<Line>),
}

/// A line being read: what was kept of it so far.
#[derive(Default)]
pub(super) struct Partial {
    line: Vec<u8>,
    too_long: bool,
}

impl Partial {
    /// Takes bytes of `buf` up to and including the first newline; an empty `buf` is the
    /// end of input. Returns how many it took, and whether reading is done.
    fn take(&mut self, buf: &[u8]) -> (usize, Read) {
        if buf.is_empty() {
            let unterminated = !self.line.is_empty() || self.too_long;
            return (0, Read::Done(unterminated.then(|| std::mem::take(self).finish())));
        }
        let (chunk, taken) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], i + 1),
            None => (buf, buf.len()),
        };
        if !self.too_long {
            self.line.extend_from_slice(chunk);
            if self.line.len() > MAX_LINE_BYTES {
                self.too_long = true;
                self.line = Vec::new();
            }
        }
        if taken > chunk.len() {
            return (taken, Read::Done(Some(std::mem::take(self).finish())));
        }
        (taken, Read::More)
    }

    fn finish(self) -> Line {
        if self.too_long {
            Line::TooLong
        } else {
            Line::Message(self.line)
        }
    }
}

/// Room for messages on their way out: beyond it, senders wait for the writer.
const OUT_QUEUE: usize = 64;

/// A writer of messages, one per line, and how its writing ended (with the first error
/// that stopped it).
pub(super) type Output = (mpsc::Sender<Outgoing>, oneshot::Receiver<io::Result<()>>);

/// Writes each message to `writer` on the runtime.
pub(super) fn stream_output<W: AsyncWrite + Unpin + Send + 'static>(mut writer: W) -> Output {
    let (messages, mut queued) = mpsc::channel::<Outgoing>(OUT_QUEUE);
    let (done, ended) = oneshot::channel();
    tokio::spawn(async move {
        let written = async {
            let mut batch = Vec::new();
            while let Some(message) = queued.recv().await {
                fill(&mut batch, message, &mut queued);
                writer.write_all(&batch).await?;
                writer.flush().await?;
            }
            Ok(())
        };
        let _ = done.send(written.await);
    });
    (messages, ended)
}

/// Writes each message to stdout on a thread of its own.
pub(super) fn stdout_thread() -> io::Result<Output> {
    let (messages, mut queued) = mpsc::channel::<Outgoing>(OUT_QUEUE);
    let (done, ended) = oneshot::channel();
    std::thread::Builder::new().name("mcp-mrtr-stdout".into()).spawn(move || {
        let written = (|| {
            let mut stdout = io::stdout().lock();
            let mut batch = Vec::new();
            while let Some(message) = queued.blocking_recv() {
                fill(&mut batch, message, &mut queued);
                stdout.write_all(&batch)?;
                stdout.flush()?;
            }
            Ok(())
        })();
        let _ = done.send(written);
    })?;
    Ok((messages, ended))
}

/// Puts `first` and every message already queued behind it into `batch`, one per line:
/// what arrived together leaves in one write.
fn fill(batch: &mut Vec<u8>, first: Outgoing, queued: &mut mpsc::Receiver<Outgoing>) {
    batch.clear();
    let mut next = Some(first);
    while let Some(message) = next {
        batch.extend_from_slice(message.into_json().as_bytes());
        batch.push(b'\n');
        next = queued.try_recv().ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line `reader` holds, as `read_line` gives them.
    fn lines(mut reader: impl BufRead) -> Vec<Option<Vec<u8>>> {
        let mut lines = Vec::new();
        while let Some(line) = read_line(&mut reader).unwrap() {
            lines.push(match line {
                Line::Message(bytes) => Some(bytes),
                Line::TooLong => None,
            });
        }
        lines
    }

    #[test]
    fn lines_split_across_reads_come_out_whole_and_a_last_line_needs_no_newline() {
        // A buffer of 3 bytes splits every line across reads.
        let reader = io::BufReader::with_capacity(3, &b"{\"a\":1}\n\n{\"b\":2}"[..]);
        assert_eq!(lines(reader), [Some(b"{\"a\":1}".to_vec()), Some(Vec::new()), Some(b"{\"b\":2}".to_vec())]);
    }

    #[test]
    fn a_line_past_the_limit_is_skipped_whole_and_the_next_one_read() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 1];
        input.extend_from_slice(b"\nnext\n");
        input.extend(vec![b'y'; MAX_LINE_BYTES + 1]);
        let reader = io::BufReader::with_capacity(64 * 1024, &input[..]);
        assert_eq!(lines(reader), [None, Some(b"next".to_vec()), None]);
    }

    /// The session drops a read when a request slot frees first (`StdioSession::read_until`).
    #[tokio::test(start_paused = true)]
    async fn a_read_dropped_mid_line_loses_nothing_of_it() {
        use tokio::io::AsyncWriteExt;

        let (mut client, server) = tokio::io::duplex(64);
        let mut input = Input::stream(tokio::io::BufReader::new(server));
        client.write_all(b"{\"a\":").await.unwrap();
        let waited = tokio::time::timeout(std::time::Duration::from_secs(1), input.next()).await;
        assert!(waited.is_err(), "half a line is no line");
        client.write_all(b"1}\n").await.unwrap();
        match input.next().await.unwrap() {
            Some(Line::Message(bytes)) => assert_eq!(bytes, b"{\"a\":1}"),
            Some(Line::TooLong) | None => panic!("the whole line"),
        }
    }
}
