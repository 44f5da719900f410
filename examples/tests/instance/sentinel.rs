//! A Sentinel deployment of a test's own on 127.0.0.1: a primary, one replica and three
//! sentinels (`redis-server --sentinel`, quorum two) watching them, with timeouts short
//! enough that a killed primary is replaced within seconds.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::redis::{free_port, new_dir, wait_listening, Resp};
use super::{Redis, TIMEOUT};

/// The service name the sentinels monitor.
pub(crate) const MASTER: &str = "mymaster";

pub(crate) struct Sentinels {
    pub(crate) primary: Redis,
    pub(crate) replica: Redis,
    ports: Vec<u16>,
    children: Vec<Child>,
    dir: PathBuf,
}

impl Sentinels {
    /// Starts the deployment and returns once every sentinel sees the replica and agrees
    /// the primary can be failed over, or `None` when Redis is not installed.
    pub(crate) fn start() -> Option<Self> {
        let primary = Redis::start()?;
        let replica = Redis::replica_of(&primary);
        let dir = new_dir();
        let (mut ports, mut children) = (Vec::new(), Vec::new());
        for n in 0..3 {
            let port = free_port();
            let conf = dir.join(format!("sentinel-{n}.conf"));
            let text = format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\nsentinel monitor {MASTER} 127.0.0.1 {primary} 2\n\
                 sentinel down-after-milliseconds {MASTER} 1000\nsentinel failover-timeout {MASTER} 5000\n",
                dir = dir.display(),
                primary = primary.port(),
            );
            std::fs::write(&conf, text).expect("write a sentinel's configuration");
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .spawn()
                .expect("start redis-server --sentinel");
            ports.push(port);
            children.push(wait_listening(child, port));
        }
        let sentinels = Self { primary, replica, ports, children, dir };
        sentinels.until(|s| s.ask(&["SENTINEL", "CKQUORUM", MASTER]).starts_with("+OK"), "the sentinels to agree");
        sentinels.until(|s| s.ask(&["SENTINEL", "REPLICAS", MASTER]) != "*0", "the sentinels to see the replica");
        Some(sentinels)
    }

    /// What the `everything` fixture is told to reach the primary with.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        let list: Vec<String> = self.ports.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        vec![("MCP_MRTR_REDIS_SENTINELS", list.join(",")), ("MCP_MRTR_REDIS_MASTER", MASTER.to_owned())]
    }

    /// The port of the primary the sentinels name now.
    pub(crate) fn primary_port(&self) -> u16 {
        let mut connection = Resp::connect(self.ports[0]);
        connection.send(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER]);
        connection.array()[1].parse().expect("a port")
    }

    /// Kills the primary (SIGKILL) and returns once the sentinels name the replica.
    pub(crate) fn fail_over(&mut self) {
        let replica = self.replica.port();
        self.primary.kill();
        let started = Instant::now();
        while self.primary_port() != replica {
            assert!(started.elapsed() < TIMEOUT, "the sentinels did not promote the replica in time");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The first line a sentinel answers `command` with.
    fn ask(&self, command: &[&str]) -> String {
        let mut connection = Resp::connect(self.ports[0]);
        connection.send(command);
        connection.line()
    }

    fn until(&self, done: impl Fn(&Self) -> bool, what: &str) {
        let started = Instant::now();
        while !done(self) {
            assert!(started.elapsed() < TIMEOUT, "waited too long for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Sentinels {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
