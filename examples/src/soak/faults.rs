//! The fault schedule (seeded) and the faults themselves: SIGKILL of a random instance
//! (one computing a task, when one is) and its restart on a new port, SIGTERM (graceful) of another and its restart, the
//! Redis deployment's own fault (an empty restart, a restart from its AOF, a failover:
//! `redis.rs`), and a client that opens a listen stream and stops reading it.
//!
//! A dead instance stays in the spreader's rotation for [`DETECT`] (its requests are
//! refused and retried elsewhere), as behind a load balancer whose health check has not
//! noticed yet; its restarted process joins the rotation once it listens.

use std::sync::Arc;
use std::time::{Duration, Instant};

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

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum FaultKind {
    Kill,
    Term,
    Redis,
    Stall,
}

impl FaultKind {
    pub(crate) const ALL: [FaultKind; 4] = [FaultKind::Kill, FaultKind::Term, FaultKind::Redis, FaultKind::Stall];

    pub(crate) fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "sigkill",
            FaultKind::Term => "sigterm",
            FaultKind::Redis => "redis_restart",
            FaultKind::Stall => "stalled_reader",
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
/// 60 s run gets five, the first four of them one of each.
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
            round = FaultKind::ALL.to_vec();
            rng.shuffle(&mut round);
        }
        let jitter = rng.below(gap / 4 + 1);
        planned.push(Planned { at: Duration::from_secs(at + jitter), kind: round.remove(0) });
        at += gap;
    }
    planned
}

/// Runs the schedule from `started`; each fault is logged once it is over.
pub(crate) async fn run(plan: Vec<Planned>, shared: Arc<Shared>, redis: Arc<Redis>, mut rng: Rng, started: Instant) {
    let mut last_killed = None;
    let mut stalls = Vec::new();
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
                terminate(&shared, slot).await;
            }
            FaultKind::Redis => restart_redis(&shared, &redis).await,
            // It lasts longer than a gap: the schedule goes on meanwhile.
            FaultKind::Stall => stalls.push(tokio::spawn(stall(shared.clone(), rng.fork(0x57a1)))),
        }
    }
    for stall in stalls {
        let _ = stall.await;
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
    let note = format!("cut {computing} computing task(s) off; {}", restart_note(shared, slot).await);
    history.fault(FaultLog {
        kind: FaultKind::Kill,
        at_ms,
        restored_ms: Some(history.now_ms()),
        victim: Some(victim),
        note,
        forgets_ms: 0,
    });
}

async fn terminate(shared: &Shared, slot: usize) {
    let (cluster, history) = (&shared.cluster, &shared.history);
    let Some(victim) = cluster.live().into_iter().find(|t| t.slot == slot) else { return };
    let at_ms = history.now_ms();
    let started = Instant::now();
    if let Err(error) = cluster.terminate(slot) {
        let note = format!("SIGTERM failed: {error:#}");
        return history.fault(FaultLog {
            kind: FaultKind::Term,
            at_ms,
            restored_ms: None,
            victim: Some(victim),
            note,
            forgets_ms: 0,
        });
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
    let note = format!("{exit}, handing {handed} running task(s) back; {}", restart_note(shared, slot).await);
    history.fault(FaultLog {
        kind: FaultKind::Term,
        at_ms,
        restored_ms: Some(history.now_ms()),
        victim: Some(victim),
        note,
        forgets_ms: 0,
    });
}

async fn restart_note(shared: &Shared, slot: usize) -> String {
    let started = Instant::now();
    match shared.cluster.restart(slot).await {
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
