//! A Sentinel deployment of a test's own on 127.0.0.1: a primary, one replica and three
//! sentinels (`redis-server --sentinel`, quorum two) watching them, with timeouts short
//! enough that a killed primary is replaced within seconds; in plain text, or TLS only
//! (clients, replication and the sentinels alike) with a CA of its own.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::redis::{certified, cli, free_port, new_dir, wait_listening};
use super::tls::TlsFiles;
use super::{Redis, TIMEOUT};

/// The service name the sentinels monitor.
pub(crate) const MASTER: &str = "mymaster";

pub(crate) struct Sentinels {
    pub(crate) primary: Redis,
    pub(crate) replica: Redis,
    ports: Vec<u16>,
    children: Vec<Child>,
    dir: PathBuf,
    tls: Option<TlsFiles>,
}

impl Sentinels {
    /// Starts the deployment and returns once every sentinel sees the replica and agrees
    /// the primary can be failed over, or `None` when Redis is not installed.
    pub(crate) fn start() -> Option<Self> {
        Self::start_as(None)
    }

    /// The same, speaking TLS only.
    pub(crate) fn start_tls() -> Option<Self> {
        Self::start_as(Some(TlsFiles::make(&new_dir())))
    }

    fn start_as(tls: Option<TlsFiles>) -> Option<Self> {
        let node = |more: Vec<String>| match &tls {
            None => Redis::start_with(more),
            Some(tls) => Redis::start_tls_with(tls, more),
        };
        let primary = node(Vec::new())?;
        let replica = node(["--replicaof", "127.0.0.1", &primary.port().to_string()].map(str::to_owned).to_vec())?;
        primary.synced();
        let dir = new_dir();
        let (mut ports, mut children) = (Vec::new(), Vec::new());
        for n in 0..3 {
            let port = free_port();
            let conf = dir.join(format!("sentinel-{n}.conf"));
            let listen = match &tls {
                None => format!("port {port}\n"),
                Some(tls) => {
                    let settings: Vec<String> = tls.server_args().chunks(2).map(|pair| pair.join(" ")).collect();
                    format!("port 0\ntls-port {port}\n{}\n", settings.join("\n").replace("--", ""))
                }
            };
            let text = format!(
                "{listen}bind 127.0.0.1\ndir {dir}\nsentinel monitor {MASTER} 127.0.0.1 {primary} 2\n\
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
        let sentinels = Self { primary, replica, ports, children, dir, tls };
        sentinels.until(|s| s.ask(&["SENTINEL", "CKQUORUM", MASTER]).starts_with("OK"), "the sentinels to agree");
        sentinels.until(|s| !s.ask(&["SENTINEL", "REPLICAS", MASTER]).is_empty(), "the sentinels to see the replica");
        Some(sentinels)
    }

    /// What the `everything` fixture is told to reach the primary with.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        let scheme = if self.tls.is_some() { "rediss" } else { "redis" };
        let list: Vec<String> = self.ports.iter().map(|port| format!("{scheme}://127.0.0.1:{port}")).collect();
        let mut env = vec![("MCP_MRTR_REDIS_SENTINELS", list.join(",")), ("MCP_MRTR_REDIS_MASTER", MASTER.to_owned())];
        env.extend(self.tls.iter().flat_map(TlsFiles::env));
        env
    }

    /// How a server reaches the primary: through the sentinels, with the certificates.
    pub(crate) fn config(&self) -> mcp_mrtr::redis::RedisConfig {
        let scheme = if self.tls.is_some() { "rediss" } else { "redis" };
        let list = self.ports.iter().map(|port| format!("{scheme}://127.0.0.1:{port}"));
        certified(mcp_mrtr::redis::RedisConfig::sentinel(MASTER, list), self.tls.as_ref())
    }

    /// The port of the primary the sentinels name now.
    pub(crate) fn primary_port(&self) -> u16 {
        let named = self.ask(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER]);
        named.lines().nth(1).and_then(|port| port.trim().parse().ok()).unwrap_or_else(|| panic!("{named:?}"))
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

    /// What the first sentinel answers `command` with, through `redis-cli`.
    fn ask(&self, command: &[&str]) -> String {
        cli(self.ports[0], self.tls.as_ref(), command)
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
