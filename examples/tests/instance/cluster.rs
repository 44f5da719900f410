//! A Redis Cluster of a test's own on 127.0.0.1: three primaries, each with a replica
//! (`redis-cli --cluster create … --cluster-replicas 1`), with a node timeout short
//! enough that a killed primary's replica takes over within seconds.

use std::time::{Duration, Instant};

use super::redis::{new_dir, Resp};
use super::{Redis, TIMEOUT};

pub(crate) struct Cluster {
    nodes: Vec<Redis>,
}

impl Cluster {
    /// Starts six nodes, joins them into a cluster and returns once every node sees all
    /// slots served, or `None` when Redis is not installed.
    pub(crate) fn start() -> Option<Self> {
        let dir = new_dir();
        let mut nodes = Vec::new();
        for n in 0..6 {
            let conf = dir.join(format!("nodes-{n}.conf")).to_str().expect("a UTF-8 path").to_owned();
            let args = ["--cluster-enabled", "yes", "--cluster-config-file", &conf, "--cluster-node-timeout", "1000"];
            nodes.push(Redis::start_with(args.iter().map(|arg| (*arg).to_owned()).collect())?);
        }
        let addresses: Vec<String> = nodes.iter().map(|node| format!("127.0.0.1:{}", node.port())).collect();
        let created = std::process::Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create");
        assert!(created.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&created.stdout));
        let cluster = Self { nodes };
        cluster.until_served();
        Some(cluster)
    }

    /// What the `everything` fixture is told to reach the cluster with: every node a seed.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        let seeds: Vec<String> = self.nodes.iter().filter(|node| node.is_up()).map(Redis::url).collect();
        vec![("MCP_MRTR_REDIS_CLUSTER", seeds.join(","))]
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
        while self.state() == "ok" && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.until_served();
    }

    fn primaries(&self) -> impl Iterator<Item = &Redis> {
        self.nodes.iter().filter(|node| node.is_up() && role(node) == "master")
    }

    /// `cluster_state` as every live node sees it: `ok` when all of them say so.
    fn state(&self) -> String {
        let states: Vec<String> = self.nodes.iter().filter(|node| node.is_up()).map(state).collect();
        states.iter().find(|state| *state != "ok").cloned().unwrap_or_else(|| "ok".to_owned())
    }

    fn until_served(&self) {
        let started = Instant::now();
        while self.state() != "ok" {
            assert!(started.elapsed() < TIMEOUT, "the cluster did not serve every slot in time");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `cluster_state` as `node` sees it.
fn state(node: &Redis) -> String {
    let mut connection = Resp::connect(node.port());
    connection.send(&["CLUSTER", "INFO"]);
    let info = connection.bulk();
    info.lines().find_map(|line| line.strip_prefix("cluster_state:")).unwrap_or("?").trim().to_owned()
}

/// The first element of `ROLE`: `master` or `slave`.
fn role(node: &Redis) -> String {
    let mut connection = Resp::connect(node.port());
    connection.send(&["ROLE"]);
    connection.array_head()
}
