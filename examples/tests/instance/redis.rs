//! A `redis-server` of a test's own: a free port, a temporary directory, no saving; in
//! plain text, or TLS only with certificates the test made ([`Redis::start_tls`]).
//!
//! Without `redis-server` on the PATH the tests that need it say so and skip, unless
//! `MCP_MRTR_REQUIRE_REDIS=1` (CI sets it), which makes a missing Redis a failure.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use super::tls::TlsFiles;
use super::TIMEOUT;

pub(crate) struct Redis {
    port: u16,
    child: Child,
    dir: PathBuf,
    /// Set when it speaks TLS only (and requires a client certificate).
    tls: Option<TlsFiles>,
    /// Whether it runs (it was not killed since it last started).
    up: bool,
    /// Whether clients log in as the ACL user (`start_tls`).
    login: bool,
    /// What it was started with beyond the defaults, for a restart.
    args: Vec<String>,
}

impl Redis {
    /// Starts one, or `None` (after saying why) when `redis-server` is not installed and
    /// the run does not require it.
    pub(crate) fn start() -> Option<Self> {
        Self::start_with(Vec::new())
    }

    /// Starts one with these settings beyond the defaults (`--name value…`).
    pub(crate) fn start_with(args: Vec<String>) -> Option<Self> {
        installed().then(|| Self::spawn_new(None, args))
    }

    /// Starts one as a managed service runs: TLS only, with a CA, a server certificate and
    /// a client certificate made for it (clients must present theirs), and no default
    /// user: clients log in as an ACL user allowed only the commands the guide lists.
    pub(crate) fn start_tls() -> Option<Self> {
        if !installed() {
            return None;
        }
        let dir = new_dir();
        let tls = TlsFiles::make(&dir);
        let mut args = tls.server_args();
        args.extend(["--user", "default", "off", "--user"].map(str::to_owned));
        args.extend(ACL_USER.split(' ').map(str::to_owned));
        let mut redis = Self::spawn_with(dir, Some(tls), args);
        redis.login = true;
        Some(redis)
    }

    /// Starts one that speaks TLS only with `tls` (a deployment's shared CA), with these
    /// settings beyond; no login.
    pub(crate) fn start_tls_with(tls: &TlsFiles, more: Vec<String>) -> Option<Self> {
        if !installed() {
            return None;
        }
        let mut args = tls.server_args();
        args.extend(more);
        Some(Self::spawn_new(Some(tls.clone()), args))
    }

    fn spawn_new(tls: Option<TlsFiles>, args: Vec<String>) -> Self {
        Self::spawn_with(new_dir(), tls, args)
    }

    fn spawn_with(dir: PathBuf, tls: Option<TlsFiles>, mut args: Vec<String>) -> Self {
        let port = free_port();
        if tls.is_some() {
            // Its only listener is the TLS one; the plain port is off.
            args.extend(["--port".into(), "0".into(), "--tls-port".into(), port.to_string()]);
        }
        let child = spawn(port, &dir, &args);
        Self { port, child, dir, tls, args, up: true, login: false }
    }

    /// The certificates a TLS one was started with.
    pub(crate) fn tls(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// What the `everything` fixture is told to reach it with.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![("MCP_MRTR_REDIS_URL", self.url())];
        env.extend(self.tls.iter().flat_map(TlsFiles::env));
        env
    }

    /// `redis-cli`'s answer to `args` (its plain output, trimmed), over TLS when it
    /// speaks TLS.
    pub(crate) fn cli(&self, args: &[&str]) -> String {
        cli(self.port, self.tls.as_ref(), args)
    }

    /// How a server reaches it: its URL and, for TLS, the CA and a client certificate.
    pub(crate) fn config(&self) -> mcp_mrtr::redis::RedisConfig {
        certified(mcp_mrtr::redis::RedisConfig::url(self.url()), self.tls.as_ref())
    }
}

/// Whether `redis-server` is installed; when not, says so, and fails the run when it
/// must not skip.
fn installed() -> bool {
    if Command::new("redis-server").arg("--version").stdout(Stdio::null()).status().is_err() {
        assert!(
            std::env::var_os("MCP_MRTR_REQUIRE_REDIS").is_none(),
            "MCP_MRTR_REQUIRE_REDIS is set but redis-server is not installed"
        );
        eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
        return false;
    }
    true
}

/// The password of [`ACL_USER`].
const ACL_PASSWORD: &str = "the-fleet-only";

/// The ACL user of a TLS Redis: the commands the many-instances guide tells users to
/// allow, and no others, so a store that needs one more fails these tests.
const ACL_USER: &str =
    "mcp-mrtr on >the-fleet-only ~mcp-mrtr:* &mcp-mrtr:* -@all +ping +get +set +exists +hget +hset +zadd +zrem \
                        +zrangebyscore +zremrangebyscore +zrange +zcard +zscore +zpopmin +incrby +pexpireat +publish +subscribe \
                        +eval +evalsha +script +info +time +config|get";

/// `config` with the CA and client certificate of `tls`, when there is one.
pub(super) fn certified(config: mcp_mrtr::redis::RedisConfig, tls: Option<&TlsFiles>) -> mcp_mrtr::redis::RedisConfig {
    let Some(tls) = tls else { return config };
    let read = |p: &Path| std::fs::read(p).expect("read a certificate");
    config.ca_certificate(read(&tls.ca)).client_certificate(read(&tls.client_cert), read(&tls.client_key))
}

/// `redis-cli -p port [TLS flags] args…`'s output, trimmed.
pub(super) fn cli(port: u16, tls: Option<&TlsFiles>, args: &[&str]) -> String {
    let output = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(tls.map(TlsFiles::cli_args).unwrap_or_default())
        .args(args)
        .output()
        .expect("run redis-cli");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// A free port whose cluster bus port (10,000 above) is a port and free too: a cluster
/// node listens on both, and fails to start past 55,535.
pub(super) fn free_port() -> u16 {
    for _ in 0..100 {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        if port <= 55_535 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
    panic!("no free port with a free cluster bus port")
}

/// A fresh directory of its own under the system's temporary one.
pub(super) fn new_dir() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("mcp-mrtr-redis-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for redis");
    dir
}

impl Redis {
    /// A second one (plain text) that replicates `primary`, once it holds everything
    /// `primary` held.
    pub(crate) fn replica_of(primary: &Redis) -> Self {
        let replica = Self::spawn_new(None, vec!["--replicaof".into(), "127.0.0.1".into(), primary.port.to_string()]);
        primary.synced();
        replica
    }

    /// Waits until every replica acknowledged every write made so far (`WAIT`).
    pub(crate) fn synced(&self) {
        let started = Instant::now();
        while self.cli(&["WAIT", "1", "1000"]) != "1" {
            assert!(started.elapsed() < TIMEOUT, "the replica did not catch up in time");
        }
    }

    /// Runs one command that answers with one line (`+OK`, `:1`, an error), as any
    /// client could, and returns that line. Plain text only, as are `publish` and
    /// `subscribe`.
    pub(crate) fn command(&self, args: &[&str]) -> String {
        let mut connection = Resp::connect(self.port);
        connection.send(args);
        connection.line()
    }

    /// The keys matching `pattern` (`KEYS`: a test's Redis holds few).
    pub(crate) fn keys(&self, pattern: &str) -> Vec<String> {
        let mut connection = Resp::connect(self.port);
        connection.send(&["KEYS", pattern]);
        connection.array()
    }

    /// Where instances find it (with the ACL user's name and password, when it has one).
    pub(crate) fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "rediss" } else { "redis" };
        let login = if self.login { format!("mcp-mrtr:{ACL_PASSWORD}@") } else { String::new() };
        format!("{scheme}://{login}127.0.0.1:{}/", self.port)
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
        self.up = false;
    }

    /// Whether it runs: it was not killed since it last started.
    pub(crate) fn is_up(&self) -> bool {
        self.up
    }

    /// Kills it and starts it again on the same port and directory: empty, unless a
    /// snapshot was saved there (`SAVE`), which it then loads.
    pub(crate) fn restart(&mut self) {
        self.kill();
        self.child = spawn(self.port, &self.dir, &self.args);
        self.up = true;
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn spawn(port: u16, dir: &Path, more: &[String]) -> Child {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .args(more)
        .stdout(Stdio::null())
        .spawn()
        .expect("start redis-server");
    wait_listening(child, port)
}

/// `child`, once it listens on `port`.
pub(super) fn wait_listening(mut child: Child, port: u16) -> Child {
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

    /// The `size` bytes of a bulk string whose header was read, and its line end.
    fn bulk_of(&mut self, size: usize) -> String {
        let mut bytes = vec![0; size + 2];
        self.0.read_exact(&mut bytes).expect("a bulk string");
        bytes.truncate(size);
        String::from_utf8(bytes).expect("UTF-8")
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
                self.bulk_of(size)
            })
            .collect()
    }
}
