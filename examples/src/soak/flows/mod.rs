//! The operations a soak drives, each a small async state machine that records its
//! requests and what it saw in the history, and the workers that run them.
//!
//! Workers pick operations from a weighted mix, back to back, until the run's end; each
//! operation is bounded by deadlines of its own, so a worker always comes back. Listeners
//! run in loops of their own, since a listen stream holds its worker for its lifetime.

mod hostile;
mod listen;
mod mrtr;
mod session;
mod tasks;

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

pub(crate) use self::listen::{stalled_listener, trigger};
use super::cluster::{Cluster, Target};
use super::history::{History, Kind, OpId};
use super::outbox::Outbox;
use super::rng::Rng;
use super::rpc::Client;

/// A `once!` round already taken: its state may be replayed by hostile traffic.
pub(crate) struct Consumed {
    pub(crate) call_id: String,
    /// The state the claiming round presented, and its answers.
    pub(crate) state: Value,
    pub(crate) responses: Value,
    /// When the round that claimed it was sent.
    pub(crate) claimed_ms: u64,
}

/// Where tasks run apart from the instances: the front end that leaves the tasks made
/// there to the workers, the workers, and the outbox their steps' effects go to.
pub(crate) struct Runners {
    pub(crate) front: Arc<Cluster>,
    pub(crate) workers: Arc<Cluster>,
    pub(crate) outbox: Outbox,
}

/// What every flow shares.
pub(crate) struct Shared {
    /// The instances, behind the spreader.
    pub(crate) cluster: Arc<Cluster>,
    pub(crate) front: Arc<Cluster>,
    pub(crate) workers: Arc<Cluster>,
    pub(crate) outbox: Outbox,
    pub(crate) history: Arc<History>,
    /// When workers stop starting operations.
    pub(crate) stop_at: Instant,
    consumed: Mutex<VecDeque<Consumed>>,
    calls: AtomicU64,
    /// Instances computing a task, and until when.
    computing: Mutex<Vec<(Target, Instant)>>,
    /// The operation of each call of `test_task_steps`, for the outbox's lines.
    step_calls: Mutex<BTreeMap<String, OpId>>,
}

impl Shared {
    pub(crate) fn new(cluster: Arc<Cluster>, runners: Runners, history: Arc<History>, stop_at: Instant) -> Self {
        let Runners { front, workers, outbox } = runners;
        Self {
            cluster,
            front,
            workers,
            outbox,
            history,
            stop_at,
            consumed: Mutex::default(),
            calls: AtomicU64::new(0),
            computing: Mutex::default(),
            step_calls: Mutex::default(),
        }
    }

    /// Every process serving: the instances, the front end and the workers.
    pub(crate) fn clusters(&self) -> [&Arc<Cluster>; 3] {
        [&self.cluster, &self.front, &self.workers]
    }

    pub(crate) fn step_call(&self, call_id: &str, op: OpId) {
        self.step_calls.lock().unwrap_or_else(PoisonError::into_inner).insert(call_id.to_owned(), op);
    }

    /// The operation that made the call `call_id` of `test_task_steps`.
    pub(crate) fn step_call_op(&self, call_id: &str) -> Option<OpId> {
        self.step_calls.lock().unwrap_or_else(PoisonError::into_inner).get(call_id).copied()
    }

    /// A fresh `once!` call id: zero-padded and rising, so the fixture (which remembers
    /// its last 10,000 calls, forgetting the smallest id first) forgets the oldest.
    pub(crate) fn call_id(&self, worker: usize) -> String {
        format!("{:012}-w{worker}", self.calls.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn push_consumed(&self, consumed: Consumed) {
        let mut pool = self.consumed.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() >= 256 {
            pool.pop_front();
        }
        pool.push_back(consumed);
    }

    /// A claimed state to replay: mostly a recent one, sometimes the oldest kept.
    pub(crate) fn pop_consumed(&self, oldest: bool) -> Option<Consumed> {
        let mut pool = self.consumed.lock().unwrap_or_else(PoisonError::into_inner);
        if oldest {
            pool.pop_front()
        } else {
            pool.pop_back()
        }
    }

    pub(crate) fn computing(&self, target: Target, until: Instant) {
        let mut computing = self.computing.lock().unwrap_or_else(PoisonError::into_inner);
        computing.retain(|(_, end)| *end > Instant::now());
        computing.push((target, until));
    }

    /// The live instances computing a task for at least another second.
    pub(crate) fn busy(&self) -> Vec<Target> {
        let soon = Instant::now() + Duration::from_secs(1);
        let live = self.cluster.live();
        let computing = self.computing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut busy: Vec<Target> =
            computing.iter().filter(|(t, end)| *end > soon && live.contains(t)).map(|(t, _)| *t).collect();
        busy.dedup();
        busy
    }

    /// How many tasks `target` is computing now.
    pub(crate) fn computing_on(&self, target: Target) -> usize {
        let now = Instant::now();
        let computing = self.computing.lock().unwrap_or_else(PoisonError::into_inner);
        computing.iter().filter(|(t, end)| *t == target && *end > now).count()
    }

    pub(crate) fn running(&self) -> bool {
        Instant::now() < self.stop_at
    }
}

/// The loopback address client `n` connects from (the server is always 127.0.0.1).
pub(crate) fn source(n: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, u8::try_from(10 + n % 240).unwrap_or(250)))
}

/// The mix: each kind with its weight.
const MIX: [(Kind, u32); 12] = [
    (Kind::Elicitation, 10),
    (Kind::Sampling, 8),
    (Kind::Roots, 8),
    (Kind::MultiRound, 10),
    (Kind::Once, 14),
    (Kind::TaskAsk, 7),
    (Kind::TaskCompute, 5),
    (Kind::TaskSteps, 4),
    (Kind::Session, 8),
    (Kind::Trigger, 6),
    (Kind::Tampered, 4),
    (Kind::Replay, 4),
];

/// One worker: operations from the mix until the run's end.
pub(crate) async fn worker(shared: Arc<Shared>, n: usize, rng: Rng) {
    let mut client = Client::new(shared.clone(), source(n), rng);
    let weights: Vec<u32> = MIX.iter().map(|(_, w)| *w).collect();
    while shared.running() {
        let kind = MIX[client.rng.weighted(&weights)].0;
        run(&mut client, kind, n).await;
        let pause = client.rng.range(2, 20);
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
}

async fn run(client: &mut Client, kind: Kind, worker: usize) {
    match kind {
        Kind::Elicitation | Kind::Sampling | Kind::Roots | Kind::MultiRound => mrtr::plain(client, kind).await,
        Kind::Once => mrtr::once(client, worker).await,
        Kind::TaskAsk => tasks::asks(client).await,
        Kind::TaskCompute => tasks::computes(client).await,
        Kind::TaskSteps => tasks::steps(client, worker).await,
        Kind::Session => session::run(client).await,
        Kind::Trigger => trigger(client).await,
        Kind::Tampered => hostile::tampered(client).await,
        Kind::Replay => {
            if !hostile::replay(client).await {
                mrtr::once(client, worker).await;
            }
        }
        Kind::Listen => listen::listen(client).await,
    }
}

/// One listener: listen streams back to back until the run's end.
pub(crate) async fn listener(shared: Arc<Shared>, n: usize, rng: Rng) {
    let mut client = Client::new(shared.clone(), source(100 + n), rng);
    while shared.running() {
        listen::listen(&mut client).await;
        tokio::time::sleep(Duration::from_millis(client.rng.range(10, 200))).await;
    }
}

/// The first text block of a tool result.
pub(crate) fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}
