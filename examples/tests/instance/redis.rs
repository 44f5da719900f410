//! A `redis-server` of a test's own: a free port, a temporary directory, no saving.
//!
//! Without `redis-server` on the PATH the tests that need it say so and skip, unless
//! `MCP_MRTR_REQUIRE_REDIS=1` (CI sets it), which makes a missing Redis a failure.

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
