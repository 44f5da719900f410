//! A child server process for one test, bounded in time: every read waits at most
//! [`TIMEOUT`], and the child is killed when the test ends, so a hung server fails its
//! test instead of hanging `cargo test`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The longest any one step of a test waits for the child.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// A running child with piped stdin and stdout; stderr is collected.
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Receiver<String>,
}

impl Server {
    /// Starts `command` with its standard streams piped.
    pub(crate) fn start(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the server");
        let lines = forward(child.stdout.take().unwrap());
        let stderr = forward(child.stderr.take().unwrap());
        Self { stdin: child.stdin.take(), child, lines, stderr }
    }

    /// Writes one line of JSON to the child's stdin.
    pub(crate) fn send(&mut self, message: &Value) {
        writeln!(self.stdin.as_mut().expect("stdin is open"), "{message}").unwrap();
    }

    /// Writes raw bytes to the child's stdin.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        self.stdin.as_mut().expect("stdin is open").write_all(bytes).unwrap();
    }

    /// Closes the child's stdin: the end of its input.
    pub(crate) fn close_input(&mut self) {
        drop(self.stdin.take());
    }

    /// The next line the child writes, as JSON.
    pub(crate) fn next(&self) -> Value {
        self.next_within(TIMEOUT)
    }

    /// The next line the child writes within `wait`, as JSON.
    pub(crate) fn next_within(&self, wait: Duration) -> Value {
        let line = self.lines.recv_timeout(wait).unwrap_or_else(|_| panic!("the server wrote no line within {wait:?}"));
        serde_json::from_str(&line).unwrap()
    }

    /// Closes stdin, waits for the child to exit, and returns whether it succeeded and
    /// what it wrote to stdout (lines not read yet) and stderr.
    pub(crate) fn finish(mut self) -> (bool, Vec<String>, String) {
        drop(self.stdin.take());
        let succeeded = exited(&mut self.child);
        let stdout = self.lines.try_iter().collect();
        let stderr: Vec<String> = self.stderr.try_iter().collect();
        (succeeded, stdout, stderr.join("\n"))
    }
}

/// Waits for `child` to exit, within [`TIMEOUT`], and says whether it succeeded.
pub(crate) fn exited(child: &mut Child) -> bool {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.success();
        }
        assert!(Instant::now() < deadline, "the server did not exit in time");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends each line `stream` yields to the returned channel, from a thread of its own.
pub(crate) fn forward(stream: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}
