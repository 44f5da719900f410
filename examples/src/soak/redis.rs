//! The soak's own Redis deployment on 127.0.0.1, in one of four shapes (`--redis`), and
//! its fault:
//!
//! - `standalone`: one `redis-server` keeping nothing (`--save "" --appendonly no`); the
//!   fault restarts it empty on the same port, so it forgets everything;
//! - `persistent`: one keeping an AOF fsynced on every write (`appendfsync always`); the
//!   fault kills it (SIGKILL) and restarts it from its AOF, so it forgets nothing;
//! - `sentinel`: a primary, a replica and three sentinels; the fault kills the primary,
//!   waits for the sentinels to promote the replica and restarts the old one as its
//!   replica. Replication is asynchronous, so writes of the last moment may be lost;
//! - `cluster`: three primaries with a replica each; the fault kills a primary, waits for
//!   its replica to take its slots over and restarts the old one, which rejoins as a
//!   replica. Same asynchronous replication.
//!
//! Commands to the nodes go through `redis-cli` (Debian's `redis-tools`, which
//! `redis-server` depends on).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

/// The service name the sentinels monitor.
const MASTER: &str = "mymaster";

/// How far back a failover may forget writes Redis acknowledged: replication lag, which
/// on loopback is well under this.
const REPLICATION_LAG_MS: u64 = 1_000;

/// How long a node must not answer before the sentinels (`down-after-milliseconds`) or
/// the cluster (`cluster-node-timeout`) fail it over. A 20-minute soak with 1 s on this
/// loaded 2-core machine saw a sentinel take a primary promoted a second before for dead
/// and fail over again, to the old primary just restarted as a replica and still syncing:
/// a spurious failover that lost a few seconds of tasks (Redis's, not ours; nothing was
/// done twice). 5 s is still short beside production's usual 5 to 30 s.
const DOWN_AFTER_MS: u64 = 5_000;

/// A deployment's shape (`--redis`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Standalone,
    Persistent,
    Sentinel,
    Cluster,
}

impl Shape {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "standalone" => Self::Standalone,
            "persistent" => Self::Persistent,
            "sentinel" => Self::Sentinel,
            "cluster" => Self::Cluster,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Standalone => "standalone",
            Self::Persistent => "persistent",
            Self::Sentinel => "sentinel",
            Self::Cluster => "cluster",
        }
    }
}

/// What one Redis fault did.
pub(crate) struct Faulted {
    pub(crate) note: String,
    /// How far back before the fault acknowledged writes may be gone (`u64::MAX`:
    /// everything).
    pub(crate) forgets_ms: u64,
}

/// One `redis-server` process: its port, its settings, and the running child.
struct Node {
    port: u16,
    args: Vec<String>,
    child: Mutex<Option<Child>>,
}

pub(crate) struct Redis {
    shape: Shape,
    nodes: Vec<Node>,
    sentinels: Vec<Node>,
    dir: PathBuf,
    log: PathBuf,
}

impl Redis {
    /// Starts a deployment of `shape` and returns once it serves.
    pub(crate) async fn start(out: &Path, shape: Shape) -> anyhow::Result<Self> {
        Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .context("redis-server is not installed (Debian: apt-get install redis-server)")?;
        let dir = std::env::temp_dir().join(format!("mcp-mrtr-soak-redis-{}-{}", std::process::id(), free_port()?));
        std::fs::create_dir_all(&dir).context("a folder for redis")?;
        let mut redis = Self { shape, nodes: Vec::new(), sentinels: Vec::new(), dir, log: out.join("redis.log") };
        match shape {
            Shape::Standalone => redis.add_node(&["--save", "", "--appendonly", "no"]).await?,
            Shape::Persistent => {
                redis.add_node(&["--save", "", "--appendonly", "yes", "--appendfsync", "always"]).await?;
            }
            Shape::Sentinel => redis.start_sentinel().await?,
            Shape::Cluster => redis.start_cluster().await?,
        }
        Ok(redis)
    }

    /// What the fixture is told to reach it with.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        let list = |nodes: &[Node], form: &dyn Fn(u16) -> String| {
            nodes.iter().map(|node| form(node.port)).collect::<Vec<_>>().join(",")
        };
        match self.shape {
            Shape::Standalone | Shape::Persistent => {
                vec![("MCP_MRTR_REDIS_URL".into(), format!("redis://127.0.0.1:{}/", self.nodes[0].port))]
            }
            Shape::Sentinel => vec![
                ("MCP_MRTR_REDIS_SENTINELS".into(), list(&self.sentinels, &|port| format!("127.0.0.1:{port}"))),
                ("MCP_MRTR_REDIS_MASTER".into(), MASTER.into()),
            ],
            Shape::Cluster => {
                vec![("MCP_MRTR_REDIS_CLUSTER".into(), list(&self.nodes, &|port| format!("redis://127.0.0.1:{port}/")))]
            }
        }
    }

    /// The running data nodes' process ids, for the samples.
    pub(crate) fn pids(&self) -> Vec<u32> {
        self.nodes.iter().filter_map(Node::pid).collect()
    }

    /// Kills every process.
    pub(crate) fn kill(&self) {
        for node in self.nodes.iter().chain(&self.sentinels) {
            node.kill();
        }
    }

    /// The deployment's fault (see the module docs); returns once it serves again.
    pub(crate) async fn fault(&self) -> anyhow::Result<Faulted> {
        let started = Instant::now();
        let only = &self.nodes[0];
        match self.shape {
            Shape::Standalone => {
                only.kill();
                self.spawn(only, &[]).await?;
                let note = format!("empty again on the same port after {} ms", started.elapsed().as_millis());
                Ok(Faulted { note, forgets_ms: u64::MAX })
            }
            Shape::Persistent => {
                only.kill();
                self.spawn(only, &[]).await?;
                let note = format!("SIGKILL, back from its AOF after {} ms", started.elapsed().as_millis());
                Ok(Faulted { note, forgets_ms: 0 })
            }
            Shape::Sentinel => self.fail_over_sentinel(started).await,
            Shape::Cluster => self.fail_over_cluster(started).await,
        }
    }

    async fn start_sentinel(&mut self) -> anyhow::Result<()> {
        self.add_node(&["--save", "", "--appendonly", "no"]).await?;
        let primary = self.nodes[0].port.to_string();
        self.add_node(&["--save", "", "--appendonly", "no", "--replicaof", "127.0.0.1", &primary]).await?;
        for n in 0..3 {
            let port = free_port()?;
            let conf = self.dir.join(format!("sentinel-{n}.conf"));
            let text = format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\nsentinel monitor {MASTER} 127.0.0.1 {primary} 2\n\
                 sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}\nsentinel failover-timeout {MASTER} 10000\n",
                dir = self.dir.display(),
            );
            std::fs::write(&conf, text).context("write a sentinel's configuration")?;
            let node =
                Node { port, args: vec![conf.display().to_string(), "--sentinel".into()], child: Mutex::new(None) };
            self.spawn_raw(&node).await?;
            self.sentinels.push(node);
        }
        self.until("the sentinels to see the replica", Duration::from_secs(30), || {
            cli(self.sentinels[0].port, &["SENTINEL", "REPLICAS", MASTER]).is_ok_and(|out| !out.trim().is_empty())
                && cli(self.sentinels[0].port, &["SENTINEL", "CKQUORUM", MASTER]).is_ok_and(|out| out.starts_with("OK"))
        })
        .await
    }

    async fn start_cluster(&mut self) -> anyhow::Result<()> {
        for _ in 0..6 {
            self.add_node(&[
                "--save",
                "",
                "--appendonly",
                "no",
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                &DOWN_AFTER_MS.to_string(),
            ])
            .await?;
        }
        let addresses: Vec<String> = self.nodes.iter().map(|node| format!("127.0.0.1:{}", node.port)).collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .context("run redis-cli --cluster create")?;
        if !created.status.success() {
            bail!("redis-cli --cluster create failed: {}", String::from_utf8_lossy(&created.stdout));
        }
        self.until("the cluster to serve every slot", Duration::from_secs(30), || self.cluster_ok()).await
    }

    async fn fail_over_sentinel(&self, started: Instant) -> anyhow::Result<Faulted> {
        let named = || cli(self.sentinels[0].port, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER]);
        let primary: u16 = named()?.lines().nth(1).and_then(|port| port.trim().parse().ok()).context("no primary")?;
        let victim = self.nodes.iter().find(|node| node.port == primary).context("the primary is not ours")?;
        victim.kill();
        self.until("the sentinels to promote the replica", Duration::from_mins(1), || {
            named().is_ok_and(|out| out.lines().nth(1).is_some_and(|port| port.trim() != primary.to_string()))
        })
        .await?;
        let promoted = named()?.lines().nth(1).unwrap_or_default().trim().to_owned();
        let took = started.elapsed().as_millis();
        self.spawn(victim, &["--replicaof", "127.0.0.1", &promoted]).await?;
        let note = format!(
            "primary :{primary} SIGKILLed; :{promoted} promoted after {took} ms; :{primary} back as its replica"
        );
        Ok(Faulted { note, forgets_ms: REPLICATION_LAG_MS })
    }

    async fn fail_over_cluster(&self, started: Instant) -> anyhow::Result<Faulted> {
        let victim = self
            .nodes
            .iter()
            .find(|node| node.pid().is_some() && cli(node.port, &["ROLE"]).is_ok_and(|role| role.starts_with("master")))
            .context("no primary")?;
        victim.kill();
        // The others first mark it failed, then serve every slot again.
        let marked = Instant::now();
        while self.cluster_ok() && marked.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.until("a replica to take the slots over", Duration::from_mins(1), || self.cluster_ok()).await?;
        let took = started.elapsed().as_millis();
        self.spawn(victim, &[]).await?;
        let note = format!(
            "primary :{} SIGKILLed; its replica served its slots after {took} ms; back as a replica",
            victim.port
        );
        Ok(Faulted { note, forgets_ms: REPLICATION_LAG_MS })
    }

    /// Whether every running node says `cluster_state:ok`.
    fn cluster_ok(&self) -> bool {
        self.nodes
            .iter()
            .filter(|node| node.pid().is_some())
            .all(|node| cli(node.port, &["CLUSTER", "INFO"]).is_ok_and(|info| info.contains("cluster_state:ok")))
    }

    async fn until(&self, what: &str, within: Duration, done: impl Fn() -> bool) -> anyhow::Result<()> {
        let started = Instant::now();
        while !done() {
            if started.elapsed() > within {
                bail!("waited too long for {what}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// A data node with these settings, in a folder of its own, running.
    async fn add_node(&mut self, settings: &[&str]) -> anyhow::Result<()> {
        let port = free_port()?;
        let dir = self.dir.join(port.to_string());
        std::fs::create_dir_all(&dir).context("a folder for a redis node")?;
        let mut args: Vec<String> =
            ["--port", &port.to_string(), "--bind", "127.0.0.1", "--dir"].map(str::to_owned).into();
        args.push(dir.display().to_string());
        args.extend(settings.iter().map(|s| (*s).to_owned()));
        let node = Node { port, args, child: Mutex::new(None) };
        self.spawn_raw(&node).await?;
        self.nodes.push(node);
        Ok(())
    }

    /// Starts `node` again, with `more` settings after its own.
    async fn spawn(&self, node: &Node, more: &[&str]) -> anyhow::Result<()> {
        let mut args = node.args.clone();
        args.extend(more.iter().map(|s| (*s).to_owned()));
        self.start_process(node, &args).await
    }

    async fn spawn_raw(&self, node: &Node) -> anyhow::Result<()> {
        self.start_process(node, &node.args).await
    }

    async fn start_process(&self, node: &Node, args: &[String]) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log)?;
        let mut child = Command::new("redis-server")
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("start redis-server")?;
        let started = Instant::now();
        // Listening is not serving: a node loading its AOF answers LOADING meanwhile.
        while cli(node.port, &["PING"]).map_or(true, |reply| !reply.starts_with("PONG")) {
            if let Ok(Some(status)) = child.try_wait() {
                bail!("redis-server exited before serving: {status}");
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                bail!("redis-server did not serve on {} in time", node.port);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        *node.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(child);
        Ok(())
    }
}

impl Node {
    fn pid(&self) -> Option<u32> {
        self.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref().map(Child::id)
    }

    /// Kills it (SIGKILL).
    fn kill(&self) {
        let child = self.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(mut child) = child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `redis-cli -p port args…`'s output, or why it failed.
fn cli(port: u16, args: &[&str]) -> anyhow::Result<String> {
    let output =
        Command::new("redis-cli").args(["-p", &port.to_string()]).args(args).output().context("run redis-cli")?;
    if !output.status.success() {
        bail!("redis-cli failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A free port whose cluster bus port (10,000 above) is a port and free too: a cluster
/// node listens on both, and fails to start past 55,535.
fn free_port() -> anyhow::Result<u16> {
    for _ in 0..100 {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).context("a free port")?.port();
        if port <= 55_535 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return Ok(port);
        }
    }
    bail!("no free port with a free cluster bus port")
}
