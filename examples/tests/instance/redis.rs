//! A `redis-server` of a test's own: a free port, a temporary directory, no saving.
//!
//! Without `redis-server` on the PATH the tests that need it say so and skip, unless
//! `MCP_MRTR_REQUIRE_REDIS=1` (CI sets it), which makes a missing Redis a failure.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use super::TIMEOUT;

pub(crate) struct Redis {
    port: u16,
    child: Child,
    dir: PathBuf,
}

impl Redis {
    /// Starts one, or `None` (after saying why) when `redis-server` is not installed and
    /// the run does not require it.
    pub(crate) fn start() -> Option<Self> {
        if Command::new("redis-server").arg("--version").stdout(Stdio::null()).status().is_err() {
            assert!(
                std::env::var_os("MCP_MRTR_REQUIRE_REDIS").is_none(),
                "MCP_MRTR_REQUIRE_REDIS is set but redis-server is not installed"
            );
            eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let dir = std::env::temp_dir().join(format!("mcp-mrtr-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for redis");
        let child = spawn(port, &dir);
        Some(Self { port, child, dir })
    }

    /// Where instances find it.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The port it listens on, on 127.0.0.1.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Publishes `message` on `channel` as any Redis client could: what someone who may
    /// publish, and is no instance of the server, sends.
    pub(crate) fn publish(&self, channel: &str, message: &str) {
        let mut connection = Resp::connect(self.port);
        connection.send(&["PUBLISH", channel, message]);
        let reply = connection.line();
        assert!(reply.starts_with(':'), "PUBLISH answered {reply:?}");
    }

    /// A subscription to `channel`, reading the messages published from now on.
    pub(crate) fn subscribe(&self, channel: &str) -> Subscription {
        let mut connection = Resp::connect(self.port);
        connection.send(&["SUBSCRIBE", channel]);
        // The confirmation: `subscribe`, the channel, the count.
        assert_eq!(connection.array(), ["subscribe", channel, "1"]);
        Subscription(connection)
    }

    /// Kills it (SIGKILL); everything it held is gone.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts an empty one again on the same port.
    pub(crate) fn restart(&mut self) {
        self.kill();
        self.child = spawn(self.port, &self.dir);
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn spawn(port: u16, dir: &Path) -> Child {
    let mut child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("start redis-server");
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("redis-server exited before listening: {status}");
        }
        assert!(started.elapsed() < TIMEOUT, "redis-server did not listen on {port} in time");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child
}

/// A subscription of [`Redis::subscribe`].
pub(crate) struct Subscription(Resp);

impl Subscription {
    /// The next message's payload, as it travelled.
    pub(crate) fn next(&mut self) -> String {
        let mut message = self.0.array();
        assert_eq!(message.first().map(String::as_str), Some("message"), "{message:?}");
        message.pop().expect("a payload")
    }
}

/// A raw RESP connection: enough of the protocol for PUBLISH and SUBSCRIBE, so tests can
/// speak to Redis as another client would, with nothing of the server's in between.
struct Resp(BufReader<TcpStream>);

impl Resp {
    fn connect(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to redis");
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        Self(BufReader::new(stream))
    }

    fn send(&mut self, args: &[&str]) {
        let mut command = format!("*{}\r\n", args.len());
        for arg in args {
            let _ = write!(command, "${}\r\n{arg}\r\n", arg.len());
        }
        self.0.get_mut().write_all(command.as_bytes()).expect("write to redis");
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.0.read_line(&mut line).expect("a reply from redis in time");
        line.trim_end_matches("\r\n").to_owned()
    }

    /// An array of bulk strings and integers, as strings.
    fn array(&mut self) -> Vec<String> {
        let head = self.line();
        let len: usize = head.strip_prefix('*').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{head:?}"));
        (0..len)
            .map(|_| {
                let item = self.line();
                if let Some(n) = item.strip_prefix(':') {
                    return n.to_owned();
                }
                let size: usize =
                    item.strip_prefix('$').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{item:?}"));
                let mut bytes = vec![0; size + 2];
                self.0.read_exact(&mut bytes).expect("a bulk string");
                bytes.truncate(size);
                String::from_utf8(bytes).expect("UTF-8")
            })
            .collect()
    }
}
