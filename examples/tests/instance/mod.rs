//! `everything` processes for the tests of running several instances: a child serving
//! HTTP on a port of its own choosing (read back from its log), SIGTERM sent with
//! `kill`, a `redis-server` of a test's own (`redis`), and a deliberately small blocking
//! HTTP/1.1 client for 2026-07-28 requests (and 2025 sessions: `legacy`). Every wait is bounded, and a child still
//! running when its test ends is killed.

mod cluster;
mod legacy;
mod redis;
pub(crate) mod sentinel;
mod tls;

pub(crate) use self::cluster::Cluster;
pub(crate) use self::legacy::LegacySession;
pub(crate) use self::redis::Redis;
pub(crate) use self::sentinel::Sentinels;

use std::collections::hash_map::RandomState;
use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

/// The longest any one step of a test waits for a child or a socket.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// An `everything --port 0` child serving HTTP on 127.0.0.1.
pub(crate) struct Instance {
    child: Child,
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    stderr: Receiver<String>,
    /// Log lines read while waiting for the address.
    log: Vec<String>,
}

impl Instance {
    /// Starts `everything` with this `MCP_MRTR_STATE_KEYS` (`None`: unset) and returns
    /// once it listens.
    pub(crate) fn start(keys: Option<&str>) -> Self {
        Self::start_with(&keys.map(|keys| ("MCP_MRTR_STATE_KEYS", keys)).into_iter().collect::<Vec<_>>())
    }

    /// Starts `everything` with these environment variables (and none of the `MCP_MRTR_*`
    /// ones of the test's own environment) and returns once it listens.
    pub(crate) fn start_with(env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_everything"));
        command.args(["--port", "0"]).env("RUST_LOG", "info");
        for name in mcp_mrtr_examples::everything::ENV {
            command.env_remove(name);
        }
        command.envs(env.iter().copied());
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start everything");
        let stderr = crate::common::forward(child.stderr.take().expect("piped stderr"));
        let mut log = Vec::new();
        let deadline = Instant::now() + TIMEOUT;
        let addr = loop {
            let line = stderr
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("everything did not say where it listens: {log:?}"));
            let addr = line.contains("serving MCP over HTTP").then(|| listening_on(&line)).flatten();
            log.push(line);
            if let Some(addr) = addr {
                break addr;
            }
        };
        Self { child, addr, stderr, log }
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its resident memory, in KiB.
    pub(crate) fn resident_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("the process's status");
        let line = status.lines().find(|line| line.starts_with("VmRSS:")).expect("VmRSS");
        line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("a number of KiB")
    }

    /// Kills it with SIGKILL: no drain, no hand-back, as when its machine dies.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM, as `docker stop` or Kubernetes would.
    pub(crate) fn terminate(&self) {
        terminate(&self.child);
    }

    /// Waits for the child to exit, at most `within`; returns its status and its log.
    pub(crate) fn exit_within(mut self, within: Duration) -> (ExitStatus, String) {
        let status = exit_within(&mut self.child, within);
        let mut log = std::mem::take(&mut self.log);
        log.extend(self.stderr.try_iter());
        (status, log.join("\n"))
    }

    /// Stops it gracefully and checks that it exited cleanly.
    pub(crate) fn stop(self) {
        self.terminate();
        let (status, log) = self.exit_within(TIMEOUT);
        assert!(status.success(), "{status}: {log}");
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A key entry `id:base64` with a fresh random 32-byte secret, as
/// `openssl rand -base64 32` would make.
pub(crate) fn new_key(id: &str) -> String {
    let random = RandomState::new();
    let secret: Vec<u8> = (0u64..4).flat_map(|i| random.hash_one(i).to_le_bytes()).collect();
    format!("{id}:{}", base64::engine::general_purpose::STANDARD.encode(secret))
}

/// Sends SIGTERM to `child` with `kill` (no signal crate is needed for one signal).
pub(crate) fn terminate(child: &Child) {
    let sent = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("run kill");
    assert!(sent.success(), "kill -TERM failed");
}

/// Waits for `child` to exit, at most `within`.
pub(crate) fn exit_within(child: &mut Child, within: Duration) -> ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            return status;
        }
        assert!(Instant::now() < deadline, "the child did not exit within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The address in a `serving MCP over HTTP local=127.0.0.1:PORT …` log line.
fn listening_on(line: &str) -> Option<SocketAddr> {
    line.split_whitespace().find_map(|word| word.strip_prefix("local="))?.parse().ok()
}

/// A 2026-07-28 request: `params` plus the `_meta` envelope declaring `caps`.
pub(crate) fn request(method: &str, mut params: Value, caps: &Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "instances-test", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })
}

/// Sends `message` as a conforming client would (its `Mcp-Method` and `Mcp-Name`
/// headers included) and returns the socket, to read the answer as it arrives.
pub(crate) fn open(addr: SocketAddr, message: &Value) -> TcpStream {
    let body = message.to_string();
    let method = message["method"].as_str().unwrap_or_default();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost:{}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\nContent-Length: {}\r\n",
        addr.port(),
        body.len()
    );
    let params = &message["params"];
    if let Some(name) = params["name"].as_str().or_else(|| params["taskId"].as_str()) {
        let _ = write!(head, "Mcp-Name: {name}\r\n");
    }
    let mut socket = TcpStream::connect(addr).expect("connect");
    socket.set_read_timeout(Some(TIMEOUT)).unwrap();
    socket.write_all(format!("{head}\r\n{body}").as_bytes()).expect("send the request");
    socket
}

/// Reads from `socket` until what arrived so far contains `text`.
pub(crate) fn read_until(socket: &mut TcpStream, seen: &mut String, text: &str) {
    let mut buf = [0u8; 4096];
    while !seen.contains(text) {
        let n = socket.read(&mut buf).expect("the server kept talking");
        assert!(n > 0, "the stream ended before {text:?}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

/// Reads `socket` to its end and returns the JSON-RPC messages of the answer after what
/// was `seen` already: the JSON body, or each SSE `data:` line.
pub(crate) fn finish(mut socket: TcpStream, mut seen: String) -> (u16, Vec<Value>) {
    socket.read_to_string(&mut seen).expect("read the answer to its end");
    let status = seen.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status: {seen}"));
    let (head, body) = seen.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head: {seen}"));
    (status, messages(head, body))
}

/// The JSON-RPC messages of an answer's `body`: each SSE `data:` line when `head` (the
/// response's head, or its content type) says `text/event-stream`, else the JSON body.
pub(crate) fn messages(head: &str, body: &str) -> Vec<Value> {
    if head.to_ascii_lowercase().contains("text/event-stream") {
        body.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| serde_json::from_str(d.trim()).unwrap()).collect()
    } else if body.is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))]
    }
}

/// Sends `message` and returns the JSON-RPC reply, expecting HTTP 200.
pub(crate) fn call(addr: SocketAddr, message: &Value) -> Value {
    let (status, mut messages) = finish(open(addr, message), String::new());
    assert_eq!(status, 200, "{messages:?}");
    messages.pop().expect("a reply")
}
