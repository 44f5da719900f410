//! The fault schedule (seeded) and the faults themselves: SIGKILL of a random instance
//! (one computing a task, when one is) and its restart on a new port, SIGTERM (graceful) of another and its restart, the
//! Redis deployment's own fault (an empty restart, a restart from its AOF, a failover:
//! `redis.rs`), a client that opens a listen stream and stops reading it, and SIGTERM of
//! a task worker while it is inside a `once!` step (timed by the outbox) and its restart.
//!
//! A dead instance stays in the spreader's rotation for [`DETECT`] (its requests are
//! refused and retried elsewhere), as behind a load balancer whose health check has not
//! noticed yet; its restarted process joins the rotation once it listens.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cluster::Cluster;
use super::flows::{source, stalled_listener, Shared};
use super::history::FaultLog;
use super::redis::Redis;
use super::rng::Rng;
use super::rpc::Client;

/// How long the spreader takes to notice a dead instance.
const DETECT: Duration = Duration::from_millis(500);
/// How long an instance may take to drain after SIGTERM before it is killed.
const DRAIN: Duration = Duration::from_secs(30);
/// How long the stalled client leaves its stream unread, and the changes made meanwhile.
const STALL: Duration = Duration::from_secs(15);
const STALL_BURST: usize = 30;
/// Worker SIGTERMs: the first this far in, then one every `WORKER_EVERY`, until 12 s
/// before the end (a 60 s run gets two).
const WORKER_FIRST: u64 = 12;
const WORKER_EVERY: u64 = 20;
/// How long a worker's SIGTERM waits for a worker to be inside a step (a few steps of
/// 100–300 ms are under way at any moment, most of them on workers) before it terminates
/// one anyway.
const STEP_WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum FaultKind {
    Kill,
    Term,
    Redis,
    Stall,
    WorkerTerm,
}

impl FaultKind {
    pub(crate) const ALL: [FaultKind; 5] =
        [FaultKind::Kill, FaultKind::Term, FaultKind::Redis, FaultKind::Stall, FaultKind::WorkerTerm];
    /// The kinds each round of the schedule deals; worker SIGTERMs have a schedule of their own.
    const ROUND: [FaultKind; 4] = [FaultKind::Kill, FaultKind::Term, FaultKind::Redis, FaultKind::Stall];

    pub(crate) fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "sigkill",
            FaultKind::Term => "sigterm",
            FaultKind::Redis => "redis_restart",
            FaultKind::Stall => "stalled_reader",
            FaultKind::WorkerTerm => "worker_sigterm",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Planned {
    pub(crate) at: Duration,
    pub(crate) kind: FaultKind,
}

/// Faults from 8 s in until 12 s before the end, one every 6–45 s (a fifth of the span
/// between), the kinds in shuffled rounds of four so that each round has every kind: a
/// 60 s run gets five, the first four of them one of each. Besides, a worker SIGTERM
/// every 20 s from 12 s in (see [`WORKER_FIRST`]), each up to 4 s late.
pub(crate) fn plan(seconds: u64, rng: &mut Rng) -> Vec<Planned> {
    let (first, last) = (8, seconds.saturating_sub(12));
    if last < first {
        return Vec::new();
    }
    let gap = ((last - first) / 4).clamp(6, 45);
    let mut planned = Vec::new();
    let mut round = Vec::new();
    let mut at = first;
    while at <= last {
        if round.is_empty() {
            round = FaultKind::ROUND.to_vec();
            rng.shuffle(&mut round);
        }
        let jitter = rng.below(gap / 4 + 1);
        planned.push(Planned { at: Duration::from_secs(at + jitter), kind: round.remove(0) });
        at += gap;
    }
    // From a stream forked after the rounds, so a seed deals them as it did before.
    let mut own = rng.fork(0x3075);
    let mut at = WORKER_FIRST;
    while at <= last {
        planned.push(Planned { at: Duration::from_secs(at + own.below(5)), kind: FaultKind::WorkerTerm });
        at += WORKER_EVERY;
    }
    planned.sort_by_key(|p| p.at);
    planned
}

/// Runs the schedule from `started`; each fault is logged once it is over.
pub(crate) async fn run(plan: Vec<Planned>, shared: Arc<Shared>, redis: Arc<Redis>, mut rng: Rng, started: Instant) {
    let mut last_killed = None;
    // Faults that last longer than a gap, or wait for their moment: the schedule goes on meanwhile.
    let mut lasting = Vec::new();
    for fault in plan {
        tokio::time::sleep((started + fault.at).saturating_duration_since(Instant::now())).await;
        let slots = shared.cluster.slots();
        match fault.kind {
            FaultKind::Kill => {
                // A random instance; among those computing a task when some are, so the
                // kill cuts a computation off and another instance must take it over.
                let busy = shared.busy();
                let slot = if busy.is_empty() { rng.index(slots) } else { busy[rng.index(busy.len())].slot };
                last_killed = Some(slot);
                kill(&shared, slot).await;
            }
            FaultKind::Term => {
                let mut slot = rng.index(slots);
                if slots > 1 && Some(slot) == last_killed {
                    slot = (slot + 1) % slots;
                }
                terminate(&shared, &shared.cluster, slot, FaultKind::Term, String::new()).await;
            }
            FaultKind::Redis => restart_redis(&shared, &redis).await,
            FaultKind::Stall => lasting.push(tokio::spawn(stall(shared.clone(), rng.fork(0x57a1)))),
            FaultKind::WorkerTerm => lasting.push(tokio::spawn(terminate_worker(shared.clone(), rng.fork(0x3075)))),
        }
    }
    for fault in lasting {
        let _ = fault.await;
    }
}

async fn kill(shared: &Shared, slot: usize) {
    let (cluster, history) = (&shared.cluster, &shared.history);
    let Some(victim) = cluster.live().into_iter().find(|t| t.slot == slot) else { return };
    let at_ms = history.now_ms();
    let computing = shared.computing_on(victim);
    cluster.kill(slot);
    tokio::time::sleep(DETECT).await;
    cluster.retire(slot);
    let note = format!("cut {computing} computing task(s) off; {}", restart_note(cluster, slot).await);
    history.fault(FaultLog {
        kind: FaultKind::Kill,
        at_ms,
        restored_ms: Some(history.now_ms()),
        victim: Some(victim),
        note,
        forgets_ms: 0,
    });
}

/// A SIGTERM to a task worker, timed to land inside a `once!` step: the first worker the
/// outbox shows inside one (a step sent, not confirmed yet), or, if none is within
/// [`STEP_WAIT`], a random one. It must finish the step before it hands its task back.
async fn terminate_worker(shared: Arc<Shared>, mut rng: Rng) {
    let workers = &shared.workers;
    let deadline = Instant::now() + STEP_WAIT;
    let (slot, lead) = loop {
        let live = workers.live();
        let pids: Vec<u32> = live.iter().map(|t| t.pid).collect();
        let inside = shared.outbox.under_way(&pids, Duration::from_millis(60));
        if let Some((target, receipt)) = inside.and_then(|(pid, r)| Some((live.iter().find(|t| t.pid == pid)?, r))) {
            break (target.slot, format!("inside the step {receipt}; "));
        }
        if Instant::now() > deadline {
            let wait = STEP_WAIT.as_secs();
            break (rng.index(workers.slots()), format!("no worker inside a step within {wait} s; "));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    terminate(&shared, workers, slot, FaultKind::WorkerTerm, lead).await;
}

/// SIGTERM to the process in `slot` of `cluster`, logged as `kind` with `lead` first in its note.
async fn terminate(shared: &Shared, cluster: &Cluster, slot: usize, kind: FaultKind, lead: String) {
    let history = &shared.history;
    let Some(victim) = cluster.live().into_iter().find(|t| t.slot == slot) else { return };
    let at_ms = history.now_ms();
    let started = Instant::now();
    if let Err(error) = cluster.terminate(slot) {
        let note = format!("{lead}SIGTERM failed: {error:#}");
        return history.fault(FaultLog { kind, at_ms, restored_ms: None, victim: Some(victim), note, forgets_ms: 0 });
    }
    // It may exit before the spreader notices: time the exit itself.
    let mut exited = cluster.exit_within(slot, DETECT).await.map(|status| (status, started.elapsed()));
    tokio::time::sleep(DETECT.saturating_sub(started.elapsed())).await;
    cluster.retire(slot);
    if exited.is_none() {
        exited = cluster.exit_within(slot, DRAIN).await.map(|status| (status, started.elapsed()));
    }
    let exit = if let Some((status, after)) = exited {
        format!("exited ({status}) {} ms after SIGTERM", after.as_millis())
    } else {
        cluster.kill(slot);
        format!("did not exit within {} s of SIGTERM: killed", DRAIN.as_secs())
    };
    let log = std::fs::read_to_string(cluster.log_of(victim)).unwrap_or_default();
    let handed = log.lines().filter(|l| l.contains("handed a running task back")).count();
    let note = format!("{lead}{exit}, handing {handed} running task(s) back; {}", restart_note(cluster, slot).await);
    history.fault(FaultLog {
        kind,
        at_ms,
        restored_ms: Some(history.now_ms()),
        victim: Some(victim),
        note,
        forgets_ms: 0,
    });
}

async fn restart_note(cluster: &Cluster, slot: usize) -> String {
    let started = Instant::now();
    match cluster.restart(slot).await {
        Ok(target) if target.addr.port() == 0 => {
            format!("restarted as {target} in {} ms", started.elapsed().as_millis())
        }
        Ok(target) => {
            format!("restarted as {target} on port {} in {} ms", target.addr.port(), started.elapsed().as_millis())
        }
        Err(error) => format!("restart failed: {error:#}"),
    }
}

async fn restart_redis(shared: &Shared, redis: &Redis) {
    let history = &shared.history;
    let at_ms = history.now_ms();
    let (note, forgets_ms) = match redis.fault().await {
        Ok(faulted) => (faulted.note, faulted.forgets_ms),
        Err(error) => (format!("the Redis fault failed: {error:#}"), u64::MAX),
    };
    let restored_ms = Some(history.now_ms());
    history.fault(FaultLog { kind: FaultKind::Redis, at_ms, restored_ms, victim: None, note, forgets_ms });
}

async fn stall(shared: Arc<Shared>, rng: Rng) {
    let Some(target) = shared.cluster.next() else { return };
    let at_ms = shared.history.now_ms();
    let mut client = Client::new(shared.clone(), source(239), rng);
    let note = stalled_listener(&mut client, target, STALL, STALL_BURST).await;
    let history = &shared.history;
    history.fault(FaultLog {
        kind: FaultKind::Stall,
        at_ms,
        restored_ms: Some(history.now_ms()),
        victim: Some(target),
        note,
        forgets_ms: 0,
    });
}
