//! The `everything` processes, and the spreader in front of the instances.
//!
//! Each process is a slot; a restart puts a new process (a new generation, on a new
//! port) in the same slot. The spreader hands out live slots round robin, one request at
//! a time; a slot leaves the rotation when the fault injector retires it (as a load
//! balancer's health check would, a moment after the process died) and comes back with
//! its new address when the restarted process listens.
//!
//! Three fleets of the same binary share the key ring and Redis, each a `Cluster` of its
//! [`Role`]: the instances (serving requests and running their tasks), one front end
//! whose tasks run on workers, and the task workers (no address, no request).

use std::fmt;
use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use base64::Engine as _;

/// What the processes of a cluster are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Serves requests and runs the tasks made or answered there, and any whose runner died.
    Instance,
    /// Serves requests; the tasks made there run on workers (`MCP_MRTR_TASKS_ON_WORKERS`).
    FrontEnd,
    /// Runs tasks from the store only (`everything --task-worker`): it takes no request.
    Worker,
}

impl Role {
    /// The letter of its targets (`i0.g1`) and the start of its logs' names.
    fn names(self) -> (char, &'static str) {
        match self {
            Role::Instance => ('i', "instance"),
            Role::FrontEnd => ('f', "front-end"),
            Role::Worker => ('w', "worker"),
        }
    }
}

/// Where one request goes: a slot, the process now in it, and its address (unspecified,
/// port 0, for a worker, which listens on none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) role: Role,
    pub(crate) slot: usize,
    pub(crate) generation: u32,
    pub(crate) addr: SocketAddr,
    pub(crate) pid: u32,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}.g{}", self.role.names().0, self.slot, self.generation)
    }
}

struct Slot {
    /// The process now in the slot, if any.
    child: Option<Child>,
    /// Its target, while it is in the rotation.
    live: Option<Target>,
    generation: u32,
}

struct State {
    slots: Vec<Slot>,
    next: usize,
}

pub(crate) struct Cluster {
    role: Role,
    exe: PathBuf,
    env: Vec<(String, String)>,
    out: PathBuf,
    state: Mutex<State>,
}

/// A fresh key ring of one random 32-byte key, as `openssl rand -base64 32` makes.
pub(crate) fn new_key_ring() -> anyhow::Result<String> {
    let mut secret = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut secret)?;
    Ok(format!("soak:{}", base64::engine::general_purpose::STANDARD.encode(secret)))
}

impl Cluster {
    /// Starts `count` processes of `exe` in `role` with `env` and returns once all listen
    /// (or, workers, run tasks).
    pub(crate) async fn start(
        exe: &Path,
        role: Role,
        count: usize,
        mut env: Vec<(String, String)>,
        out: &Path,
    ) -> anyhow::Result<Self> {
        if role == Role::FrontEnd {
            env.push(("MCP_MRTR_TASKS_ON_WORKERS".to_owned(), "1".to_owned()));
        }
        let slots = (0..count).map(|_| Slot { child: None, live: None, generation: 0 }).collect();
        let state = Mutex::new(State { slots, next: 0 });
        let cluster = Self { role, exe: exe.to_owned(), env, out: out.to_owned(), state };
        for slot in 0..count {
            cluster.spawn(slot, 0).await?;
        }
        Ok(cluster)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn slots(&self) -> usize {
        self.state().slots.len()
    }

    /// The next live instance, round robin; `None` when none is live.
    pub(crate) fn next(&self) -> Option<Target> {
        let mut state = self.state();
        let count = state.slots.len();
        for _ in 0..count {
            let at = state.next % count;
            state.next = state.next.wrapping_add(1);
            if let Some(target) = state.slots[at].live {
                return Some(target);
            }
        }
        None
    }

    /// Every live instance (for sampling).
    pub(crate) fn live(&self) -> Vec<Target> {
        self.state().slots.iter().filter_map(|s| s.live).collect()
    }

    /// Takes `slot` out of the rotation.
    pub(crate) fn retire(&self, slot: usize) {
        self.state().slots[slot].live = None;
    }

    /// SIGKILL to the process in `slot` (left in the rotation: the spreader finds out
    /// when the injector retires it). Returns its exit status.
    pub(crate) fn kill(&self, slot: usize) -> Option<ExitStatus> {
        let child = self.state().slots[slot].child.take();
        child.and_then(|mut child| {
            let _ = child.kill();
            child.wait().ok()
        })
    }

    /// SIGTERM to the process in `slot`, as `docker stop` would.
    pub(crate) fn terminate(&self, slot: usize) -> anyhow::Result<()> {
        let pid = self.state().slots[slot].child.as_ref().map(Child::id).context("no process in the slot")?;
        let sent = Command::new("kill").args(["-TERM", &pid.to_string()]).status().context("run kill")?;
        if !sent.success() {
            bail!("kill -TERM {pid} failed");
        }
        Ok(())
    }

    /// Waits at most `within` for the process in `slot` to exit; `None` if it did not.
    pub(crate) async fn exit_within(&self, slot: usize, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            {
                let mut state = self.state();
                let child = state.slots[slot].child.as_mut()?;
                if let Ok(Some(status)) = child.try_wait() {
                    state.slots[slot].child = None;
                    return Some(status);
                }
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Starts a new process in `slot` (retired and dead by now) and puts it back in the
    /// rotation once it listens.
    pub(crate) async fn restart(&self, slot: usize) -> anyhow::Result<Target> {
        let generation = self.state().slots[slot].generation + 1;
        self.spawn(slot, generation).await
    }

    /// The log (stderr) of the process `target` names.
    pub(crate) fn log_of(&self, target: Target) -> PathBuf {
        self.out.join(format!("{}-{target}.log", target.role.names().1))
    }

    async fn spawn(&self, slot: usize, generation: u32) -> anyhow::Result<Target> {
        let name = Target { role: self.role, slot, generation, addr: NO_ADDR, pid: 0 };
        let log_path = self.log_of(name);
        let log = std::fs::File::create(&log_path).context("a process log")?;
        let mut command = Command::new(&self.exe);
        match self.role {
            Role::Instance | Role::FrontEnd => command.args(["--port", "0"]),
            Role::Worker => command.arg("--task-worker"),
        };
        command.env("RUST_LOG", "info").env("NO_COLOR", "1");
        for name in crate::everything::ENV {
            command.env_remove(name);
        }
        command.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("start {}", self.exe.display()))?;
        let started = Instant::now();
        let addr = loop {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let ready = match self.role {
                Role::Instance | Role::FrontEnd => {
                    text.lines().filter(|l| l.contains("serving MCP over HTTP")).find_map(listening_on)
                }
                Role::Worker => text.contains("running tasks from the task store").then_some(NO_ADDR),
            };
            if let Some(addr) = ready {
                break addr;
            }
            if let Ok(Some(status)) = child.try_wait() {
                bail!("{name} exited before it was ready ({status}): {text}");
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                bail!("{name} was not ready within 30 s: {text}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let target = Target { addr, pid: child.id(), ..name };
        let mut state = self.state();
        let entry = &mut state.slots[slot];
        entry.child = Some(child);
        entry.live = Some(target);
        entry.generation = generation;
        Ok(target)
    }

    /// Stops every instance: SIGTERM, then SIGKILL for those still running after `within`.
    pub(crate) async fn stop(&self, within: Duration) {
        for slot in 0..self.slots() {
            self.retire(slot);
            let _ = self.terminate(slot);
        }
        for slot in 0..self.slots() {
            if self.exit_within(slot, within).await.is_none() {
                self.kill(slot);
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for slot in &mut self.state().slots {
            if let Some(mut child) = slot.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// A worker's address: it listens on none.
const NO_ADDR: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 0);

/// The address in a `serving MCP over HTTP local=127.0.0.1:PORT …` log line.
fn listening_on(line: &str) -> Option<SocketAddr> {
    line.split_whitespace().find_map(|word| word.strip_prefix("local="))?.parse().ok()
}
