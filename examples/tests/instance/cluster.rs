//! A Redis Cluster of a test's own on 127.0.0.1: three primaries, each with a replica
//! (`redis-cli --cluster create … --cluster-replicas 1`), with a node timeout short
//! enough that a killed primary's replica takes over within seconds; in plain text, or
//! TLS only (client connections, replication and the cluster bus) with a CA of its own.

use std::time::{Duration, Instant};

use super::redis::{certified, new_dir};
use super::tls::TlsFiles;
use super::{Redis, TIMEOUT};

pub(crate) struct Cluster {
    nodes: Vec<Redis>,
    tls: Option<TlsFiles>,
}

impl Cluster {
    /// Starts six nodes, joins them into a cluster and returns once every node sees all
    /// slots served, or `None` when Redis is not installed.
    pub(crate) fn start() -> Option<Self> {
        Self::start_as(None)
    }

    /// The same, speaking TLS only.
    pub(crate) fn start_tls() -> Option<Self> {
        Self::start_as(Some(TlsFiles::make(&new_dir())))
    }

    fn start_as(tls: Option<TlsFiles>) -> Option<Self> {
        let dir = new_dir();
        let mut nodes = Vec::new();
        for n in 0..6 {
            let conf = dir.join(format!("nodes-{n}.conf")).to_str().expect("a UTF-8 path").to_owned();
            let mut args =
                ["--cluster-enabled", "yes", "--cluster-config-file", &conf, "--cluster-node-timeout", "1000"]
                    .map(str::to_owned)
                    .to_vec();
            let node = match &tls {
                None => Redis::start_with(args)?,
                Some(tls) => {
                    args.extend(["--tls-cluster", "yes"].map(str::to_owned));
                    Redis::start_tls_with(tls, args)?
                }
            };
            nodes.push(node);
        }
        let addresses: Vec<String> = nodes.iter().map(|node| format!("127.0.0.1:{}", node.port())).collect();
        let created = std::process::Command::new("redis-cli")
            .args(tls.as_ref().map(TlsFiles::cli_args).unwrap_or_default())
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create");
        assert!(created.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&created.stdout));
        let cluster = Self { nodes, tls };
        cluster.until_served();
        Some(cluster)
    }

    /// What the `everything` fixture is told to reach the cluster with: every node a seed.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        let seeds: Vec<String> = self.nodes.iter().filter(|node| node.is_up()).map(Redis::url).collect();
        let mut env = vec![("MCP_MRTR_REDIS_CLUSTER", seeds.join(","))];
        env.extend(self.tls.iter().flat_map(TlsFiles::env));
        env
    }

    /// How a server reaches the cluster: every node a seed, with the certificates.
    pub(crate) fn config(&self) -> mcp_mrtr::redis::RedisConfig {
        let seeds = self.nodes.iter().filter(|node| node.is_up()).map(Redis::url);
        certified(mcp_mrtr::redis::RedisConfig::cluster(seeds), self.tls.as_ref())
    }

    /// Waits until every replica acknowledged every write its primary took.
    pub(crate) fn synced(&self) {
        for node in self.primaries() {
            node.synced();
        }
    }

    /// Kills one primary (SIGKILL) and returns once its replica took its slots over.
    pub(crate) fn fail_over(&mut self) {
        let port = self.primaries().next().expect("a primary").port();
        let node = self.nodes.iter_mut().find(|node| node.port() == port).expect("the primary");
        node.kill();
        // The others first mark it failed, then serve every slot again.
        let started = Instant::now();
        while self.served() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.until_served();
    }

    fn primaries(&self) -> impl Iterator<Item = &Redis> {
        self.nodes.iter().filter(|node| node.is_up() && node.cli(&["ROLE"]).starts_with("master"))
    }

    /// Whether every live node says `cluster_state:ok`.
    fn served(&self) -> bool {
        self.nodes
            .iter()
            .filter(|node| node.is_up())
            .all(|node| node.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok"))
    }

    fn until_served(&self) {
        let started = Instant::now();
        while !self.served() {
            assert!(started.elapsed() < TIMEOUT, "the cluster did not serve every slot in time");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
