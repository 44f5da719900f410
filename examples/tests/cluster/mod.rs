//! Several `everything` processes and a real `redis-server` on 127.0.0.1, for the tests
//! of running on many instances.
//!
//! Without `redis-server` on the PATH these tests say so and skip, unless
//! `MCP_MRTR_REQUIRE_REDIS=1` (CI sets it), which makes a missing Redis a failure.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a process gets to start listening.
const START_WITHIN: Duration = Duration::from_secs(20);

/// A key ring the instances of a test share (random per test run).
pub(crate) fn key_ring() -> String {
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut key)).expect("urandom");
    format!("k1:{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key))
}

/// A port nobody listens on right now.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

fn wait_for_port(port: u16, child: &mut Child, what: &str) {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited before listening: {status}");
        }
        assert!(started.elapsed() < START_WITHIN, "{what} did not listen on {port} in time");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `redis-server` of this test's own: a free port, a temporary directory, no saving.
pub(crate) struct Redis {
    pub(crate) port: u16,
    child: Child,
    dir: PathBuf,
}

impl Redis {
    /// Starts one, or `None` (after saying why) when `redis-server` is not installed and
    /// the run does not require it.
    pub(crate) fn start() -> Option<Self> {
        let found = Command::new("redis-server").arg("--version").stdout(Stdio::null()).status().is_ok();
        if !found {
            assert!(
                std::env::var("MCP_MRTR_REQUIRE_REDIS").is_err(),
                "MCP_MRTR_REQUIRE_REDIS is set but redis-server is not installed"
            );
            eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
            return None;
        }
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("mcp-mrtr-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for redis");
        let child = Self::spawn(port, &dir);
        Some(Self { port, child, dir })
    }

    fn spawn(port: u16, dir: &std::path::Path) -> Child {
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("start redis-server");
        wait_for_port(port, &mut child, "redis-server");
        child
    }

    /// Kills it (SIGKILL); everything it held is gone.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts an empty one again on the same port.
    pub(crate) fn restart(&mut self) {
        self.kill();
        self.child = Self::spawn(self.port, &self.dir);
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One `everything` process serving HTTP on 127.0.0.1.
pub(crate) struct Instance {
    pub(crate) addr: SocketAddr,
    child: Child,
}

impl Instance {
    /// Starts `everything --port <free>` with these environment variables.
    pub(crate) fn start(env: &[(&str, &str)]) -> Self {
        let port = free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_everything"));
        command.args(["--port", &port.to_string()]).env("RUST_LOG", "warn").stdout(Stdio::null());
        command.env_remove("MCP_MRTR_REDIS_URL").env_remove("MCP_MRTR_STATE_KEYS");
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("start everything");
        wait_for_port(port, &mut child, "everything");
        Self { addr: SocketAddr::from(([127, 0, 0, 1], port)), child }
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills it with SIGKILL: no shutdown, no goodbye.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What a client declares: elicitation, and the tasks extension.
pub(crate) fn caps() -> Value {
    json!({ "elicitation": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } })
}

/// The head and body of a 2026-07-28 request.
fn request(addr: SocketAddr, method: &str, mut params: Value) -> (String, String) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "many-instances", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": caps(),
    });
    let name = params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str).map(str::to_owned);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string();
    let name_header = name.map(|name| format!("Mcp-Name: {name}\r\n")).unwrap_or_default();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\n{name_header}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    (head, body)
}

/// Sends one 2026-07-28 request and returns the JSON-RPC reply (from a JSON body or
/// the last message of an SSE stream).
pub(crate) async fn rpc(addr: SocketAddr, method: &str, params: Value) -> Value {
    let (head, body) = request(addr, method, params);
    let raw = tokio::time::timeout(Duration::from_secs(30), async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        Ok::<_, std::io::Error>(raw)
    })
    .await
    .unwrap_or_else(|_| panic!("{method} to {addr} was not answered in time"))
    .unwrap_or_else(|e| panic!("{method} to {addr}: {e}"));
    let text = String::from_utf8_lossy(&raw);
    let (_, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("not HTTP: {text}"));
    let message = if text.to_ascii_lowercase().contains("content-type: text/event-stream") {
        body.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .next_back()
            .unwrap_or("null")
            .to_owned()
    } else {
        body.to_owned()
    };
    serde_json::from_str(&message).unwrap_or_else(|e| panic!("{method}: not JSON ({e}): {text}"))
}

/// An open `subscriptions/listen` stream, read message by message.
pub(crate) struct Listener {
    stream: tokio::net::TcpStream,
    seen: String,
}

impl Listener {
    /// Opens a stream on `addr` for the notifications `filter` selects.
    pub(crate) async fn open(addr: SocketAddr, filter: Value) -> Self {
        let (head, body) = request(addr, "subscriptions/listen", json!({ "notifications": filter }));
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.write_all(head.as_bytes()).await.expect("write");
        stream.write_all(body.as_bytes()).await.expect("write");
        Self { stream, seen: String::new() }
    }

    /// The next JSON-RPC message on the stream (bounded wait).
    pub(crate) async fn next(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Some(at) = self.seen.find("data:") {
                    if let Some(end) = self.seen[at..].find('\n') {
                        let line = self.seen[at + 5..at + end].trim().to_owned();
                        self.seen.drain(..at + end);
                        return serde_json::from_str(&line).expect("a JSON message");
                    }
                }
                let mut chunk = [0u8; 4096];
                let n = self.stream.read(&mut chunk).await.expect("read the stream");
                assert!(n > 0, "the stream ended; so far: {}", self.seen);
                self.seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        })
        .await
        .expect("a message on the listen stream in time")
    }
}

/// `tools/call` of `name`.
pub(crate) async fn call(addr: SocketAddr, name: &str, arguments: Value) -> Value {
    rpc(addr, "tools/call", json!({ "name": name, "arguments": arguments })).await
}

/// The task as `tasks/get` on `addr` shows it.
pub(crate) async fn task(addr: SocketAddr, id: &str) -> Value {
    rpc(addr, "tasks/get", json!({ "taskId": id })).await["result"].clone()
}

/// Polls `tasks/get` on `addr` until `done` holds for the task (bounded).
pub(crate) async fn poll_until(addr: SocketAddr, id: &str, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let task = task(addr, id).await;
        if done(&task) {
            return task;
        }
        assert!(started.elapsed() < within, "task {id} never reached the expected state; last: {task}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
