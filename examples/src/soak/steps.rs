//! The check of the `task_steps` flow against the outbox, the store outside the processes
//! that its `once!` steps hand their effects to (`outbox`), and its figures:
//!
//! - duplicated: a step attempted again, unless the process that made the attempt before
//!   was SIGKILLed (only a process killed inside a step leaves it to the next run); a step
//!   cut by a SIGTERM (an attempt never confirmed, by a process SIGTERMed and not killed),
//!   taken again or not: a graceful stop lets the step finish (the sixth audit's E7);
//! - unavoidable: a step attempted again after a Redis outage between the two attempts
//!   that outlasted the run's lease, by a process no fault hit: a run that cannot record
//!   its step's result stops, and once the store is back the lease has lapsed and the run
//!   that takes the task over takes the step again (a shorter outage is no excuse: the
//!   run still held its lease when the store came back);
//! - lost: a completed task whose result names a receipt the outbox does not hold;
//! - wrong: a step under two idempotency keys, two steps under one, a result that does not
//!   name the last attempt of each step, or one never confirmed.
//!
//! Everything else about the task (lost, unknown, failed) is the tasks' check (`checks`).

use std::collections::{BTreeMap, BTreeSet};

use super::checks::{answers, Verdict};
use super::faults::FaultKind;
use super::history::{Fact, FaultLog, Kind, OpLog};

/// The steps of `test_task_steps`, in order.
pub(crate) const STEPS: [&str; 3] = ["reserved", "charged", "shipped"];

/// One attempt at a step, as the outbox saw it (times in the run's ms).
#[derive(Clone, Copy, Debug)]
struct Try<'a> {
    key: &'a str,
    receipt: &'a str,
    pid: u32,
    sent: u64,
    confirmed: Option<u64>,
}

/// The attempts of `op`, by step, in the order they were sent.
fn tries(op: &OpLog) -> BTreeMap<&str, Vec<Try<'_>>> {
    let mut by_step: BTreeMap<&str, Vec<Try<'_>>> = BTreeMap::new();
    for fact in op.facts() {
        if let Fact::Step { step, key, receipt, pid, sent_ms, confirmed_ms } = fact {
            let one = Try { key, receipt, pid: *pid, sent: *sent_ms, confirmed: *confirmed_ms };
            by_step.entry(step).or_default().push(one);
        }
    }
    for attempts in by_step.values_mut() {
        attempts.sort_by_key(|a| (a.sent, a.confirmed.is_none()));
    }
    by_step
}

/// How far apart the run's clock and the outbox's may read one instant (both read this
/// machine's clocks, converted at the run's start).
const SKEW_MS: u64 = 50;
/// How long an attempt can be under way: its confirmation takes at most 300 ms in the
/// soak; a SIGTERM later than this after it was sent did not find it under way.
const STEP_MAX_MS: u64 = 1_000;

/// The processes the faults hit, and when: SIGKILLed, and SIGTERMed (instances and workers).
struct Hit {
    killed: Vec<(u32, u64)>,
    stopped: Vec<(u32, u64)>,
}

impl Hit {
    fn of(faults: &[FaultLog]) -> Self {
        let pids = |kinds: &[FaultKind]| {
            faults.iter().filter(|f| kinds.contains(&f.kind)).filter_map(|f| Some((f.victim?.pid, f.at_ms))).collect()
        };
        Self { killed: pids(&[FaultKind::Kill]), stopped: pids(&[FaultKind::Term, FaultKind::WorkerTerm]) }
    }

    /// Whether `pid` was hit from `from` (less the skew: a fault is logged as its signal
    /// leaves) and before `to`. Strictly before: a worker's SIGTERM is timed to land just
    /// after an attempt is sent (`faults`), so a fault at `to` or later hit that attempt
    /// and cannot have caused it.
    fn between(hits: &[(u32, u64)], pid: u32, from: u64, to: u64) -> bool {
        hits.iter().any(|&(p, at)| p == pid && at + SKEW_MS >= from && at < to)
    }

    /// An attempt a SIGTERM cut off: never confirmed, by a process SIGTERMed while the
    /// attempt could be under way, and not killed since.
    fn cut_by_term(&self, attempt: &Try<'_>) -> bool {
        let (pid, sent) = (attempt.pid, attempt.sent);
        attempt.confirmed.is_none()
            && Self::between(&self.stopped, pid, sent, sent + STEP_MAX_MS)
            && !Self::between(&self.killed, pid, sent, u64::MAX)
    }
}

/// The Redis outages (from, to) that a run's lease of `lease_ms` may not outlive, counting
/// the step it was renewed before.
pub(crate) fn lease_losing(faults: &[FaultLog], lease_ms: u64) -> Vec<(u64, u64)> {
    faults
        .iter()
        .filter(|f| f.kind == FaultKind::Redis)
        .map(|f| (f.at_ms, f.restored_ms.unwrap_or(u64::MAX)))
        .filter(|&(down, up)| up.saturating_sub(down) + STEP_MAX_MS >= lease_ms)
        .collect()
}

/// Why the attempt `after` was made after `before`: `Ok(true)` the process of `before`
/// was SIGKILLed in between, `Ok(false)` a Redis outage that outlasted the lease came in
/// between, `Err` nothing allows it (a SIGTERM in between is named: a stop must let the
/// step finish).
fn again(hit: &Hit, outages: &[(u64, u64)], before: &Try<'_>, after: &Try<'_>) -> Result<bool, String> {
    let (pid, from, to) = (before.pid, before.sent, after.sent);
    if Hit::between(&hit.killed, pid, from, to) {
        return Ok(true);
    }
    if Hit::between(&hit.stopped, pid, from, to) {
        return Err(format!("pid {pid} took it first ({}) and was SIGTERMed, not killed", before.receipt));
    }
    if outages.iter().any(|&(down, up)| down <= to && up >= from) {
        return Ok(false);
    }
    Err(format!("pid {pid} took it first ({}) and no fault came in between", before.receipt))
}

/// The verdict the attempts of `op` force, if any; `None` leaves the verdict to the task's.
/// `outages`: those a lease may not outlive ([`lease_losing`]).
pub(crate) fn verdict(op: &OpLog, faults: &[FaultLog], outages: &[(u64, u64)]) -> Option<Verdict> {
    let hit = Hit::of(faults);
    let by_step = tries(op);
    let mut keys: BTreeMap<&str, &str> = BTreeMap::new();
    let mut unavoidable = None;
    for (step, attempts) in &by_step {
        let distinct: BTreeSet<&str> = attempts.iter().map(|a| a.key).collect();
        if distinct.len() > 1 {
            return Some(Verdict::Wrong(format!("the {step} step had {} idempotency keys", distinct.len())));
        }
        if let Some(other) = keys.insert(attempts[0].key, step) {
            return Some(Verdict::Wrong(format!("the {other} and {step} steps share an idempotency key")));
        }
        if let Some(cut) = attempts.iter().find(|a| hit.cut_by_term(a)) {
            return Some(Verdict::Duplicated(format!(
                "the {step} step was cut by the SIGTERM of pid {} ({}): a stop must let it finish",
                cut.pid, cut.receipt
            )));
        }
        for pair in attempts.windows(2) {
            match again(&hit, outages, &pair[0], &pair[1]) {
                Ok(true) => {}
                Ok(false) => {
                    let why = format!(
                        "the {step} step was taken again ({}) across a Redis outage longer than the lease",
                        pair[1].receipt
                    );
                    unavoidable = Some(Verdict::Unavoidable(why));
                }
                Err(why) => {
                    return Some(Verdict::Duplicated(format!(
                        "the {step} step was taken again ({}): {why}",
                        pair[1].receipt
                    )));
                }
            }
        }
    }
    unavoidable
}

/// The first SIGKILL or SIGTERM (of an instance or a worker) that hit a process of `op`'s
/// steps while an attempt that was cut off, or taken again, could be under way.
pub(crate) fn fault_in_step<'a>(op: &OpLog, faults: &'a [FaultLog]) -> Option<&'a FaultLog> {
    let by_step = tries(op);
    // Those never confirmed, and all but the last of each step.
    let odd: Vec<&Try<'_>> = by_step
        .values()
        .flat_map(|attempts| attempts.iter().enumerate().map(move |(n, a)| (n + 1 < attempts.len(), a)))
        .filter(|(again, a)| *again || a.confirmed.is_none())
        .map(|(_, a)| a)
        .collect();
    let hits = |f: &&FaultLog| matches!(f.kind, FaultKind::Kill | FaultKind::Term | FaultKind::WorkerTerm);
    faults.iter().filter(hits).find(|f| {
        let Some(victim) = f.victim else { return false };
        let during = |a: &&Try<'_>| {
            a.pid == victim.pid
                && a.sent <= f.at_ms + SKEW_MS
                && f.at_ms <= a.confirmed.unwrap_or(a.sent + STEP_MAX_MS) + SKEW_MS
        };
        odd.iter().any(during)
    })
}

/// A completed task's result: one receipt per step, each the step's last attempt in the
/// outbox, confirmed (or, when the answer was no, no step at all).
pub(crate) fn result(op: &OpLog, text: &str) -> Verdict {
    let call = op.detail["arguments"]["call"].as_str().unwrap_or_default();
    let by_step = tries(op);
    match answers(op).field("ok").as_deref() {
        Some("true") => {}
        Some(_) if text == format!("call {call}: not started") && by_step.is_empty() => return Verdict::Completed,
        ok => return Verdict::Wrong(format!("ok={ok:?}, {} step(s) taken, and the result {text:?}", by_step.len())),
    }
    let named: Vec<&str> =
        text.strip_prefix(&format!("call {call}: ")).map(|rest| rest.split(' ').collect()).unwrap_or_default();
    if named.len() != STEPS.len() {
        return Verdict::Wrong(format!("the result {text:?} does not name one receipt per step"));
    }
    for (step, receipt) in STEPS.iter().zip(named) {
        let attempts = by_step.get(step).map(Vec::as_slice).unwrap_or_default();
        if !attempts.iter().any(|a| a.receipt == receipt) {
            return Verdict::Lost(format!("the result names {receipt}, which the outbox does not hold"));
        }
        let last = attempts[attempts.len() - 1];
        if last.receipt != receipt {
            return Verdict::Wrong(format!("the result names {receipt}, not the {step} step's last attempt"));
        }
        if last.confirmed.is_none() {
            return Verdict::Wrong(format!("the result names {receipt}, which the service never confirmed"));
        }
    }
    Verdict::Completed
}

/// The figures of the flow, for the summary.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Tasks with a step in the outbox, their steps, and the attempts at them.
    pub(crate) tasks: usize,
    pub(crate) steps: usize,
    pub(crate) attempts: usize,
    /// Attempts made again after the process of the one before was SIGKILLed.
    pub(crate) after_kill: usize,
    /// Attempts made again across a Redis outage longer than the lease (unavoidable).
    pub(crate) after_outage: usize,
    /// Attempts cut by a SIGTERM: must be 0.
    pub(crate) cut_by_term: usize,
    /// Attempts made again with nothing to allow it: must be 0.
    pub(crate) again: usize,
    /// Worker SIGTERMs, and those that landed while the worker was inside a step.
    pub(crate) worker_terms: usize,
    pub(crate) worker_terms_inside: usize,
}

pub(crate) fn tally(ops: &[OpLog], faults: &[FaultLog], lease_ms: u64) -> Tally {
    let hit = Hit::of(faults);
    let outages = lease_losing(faults, lease_ms);
    let mut tally = Tally::default();
    let mut inside: BTreeSet<usize> = BTreeSet::new();
    let terms: Vec<(usize, &FaultLog)> =
        faults.iter().enumerate().filter(|(_, f)| f.kind == FaultKind::WorkerTerm).collect();
    tally.worker_terms = terms.len();
    for op in ops.iter().filter(|op| op.kind == Kind::TaskSteps) {
        let by_step = tries(op);
        tally.tasks += usize::from(!by_step.is_empty());
        tally.steps += by_step.len();
        for attempts in by_step.values() {
            tally.attempts += attempts.len();
            tally.cut_by_term += attempts.iter().filter(|a| hit.cut_by_term(a)).count();
            for pair in attempts.windows(2) {
                match again(&hit, &outages, &pair[0], &pair[1]) {
                    Ok(true) => tally.after_kill += 1,
                    Ok(false) => tally.after_outage += 1,
                    Err(_) => tally.again += 1,
                }
            }
            for (n, term) in &terms {
                let Some(victim) = term.victim else { continue };
                let during = |a: &Try<'_>| a.sent <= term.at_ms && a.confirmed.is_none_or(|c| c >= term.at_ms);
                if attempts.iter().any(|a| a.pid == victim.pid && during(a)) {
                    inside.insert(*n);
                }
            }
        }
    }
    tally.worker_terms_inside = inside.len();
    tally
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::cluster::{Role, Target};
    use super::*;

    const LEASE_MS: u64 = 2_000;

    fn attempt(receipt: &str, pid: u32, sent_ms: u64, confirmed_ms: Option<u64>) -> (u64, Fact) {
        let (step, key) = ("reserved".to_owned(), "k1".to_owned());
        (0, Fact::Step { step, key, receipt: receipt.to_owned(), pid, sent_ms, confirmed_ms })
    }

    fn op(facts: Vec<(u64, Fact)>) -> OpLog {
        OpLog {
            id: 0,
            kind: Kind::TaskSteps,
            start_ms: 0,
            end_ms: Some(10_000),
            detail: json!({ "tool": "test_task_steps", "arguments": { "call": "c" } }),
            requests: Vec::new(),
            facts,
            end: None,
            bound: None,
        }
    }

    fn fault(kind: FaultKind, pid: u32, at_ms: u64, restored_ms: u64) -> FaultLog {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
        let victim = (pid != 0).then_some(Target { role: Role::Worker, slot: 0, generation: 0, addr, pid });
        FaultLog { kind, at_ms, restored_ms: Some(restored_ms), victim, note: String::new(), forgets_ms: 0 }
    }

    fn judged(facts: Vec<(u64, Fact)>, faults: &[FaultLog]) -> Option<Verdict> {
        verdict(&op(facts), faults, &lease_losing(faults, LEASE_MS))
    }

    #[test]
    fn a_step_is_taken_again_only_after_its_process_was_killed_inside_it() {
        let twice = || vec![attempt("a", 7, 1_000, None), attempt("b", 8, 3_500, Some(3_700))];
        assert_eq!(judged(twice(), &[fault(FaultKind::Kill, 7, 1_100, 1_600)]), None);
        // The same kill after the second attempt explains nothing.
        assert!(matches!(judged(twice(), &[fault(FaultKind::Kill, 7, 4_000, 4_500)]), Some(Verdict::Duplicated(_))));
        assert!(matches!(judged(twice(), &[]), Some(Verdict::Duplicated(_))));
        // A SIGTERM lets the step finish: an attempt cut by one, or taken again after one, is a duplicate.
        let term = [fault(FaultKind::WorkerTerm, 7, 1_100, 1_600)];
        assert!(matches!(judged(twice(), &term), Some(Verdict::Duplicated(why)) if why.contains("cut by the SIGTERM")));
        let finished = vec![attempt("a", 7, 1_000, Some(1_200)), attempt("b", 8, 3_500, Some(3_700))];
        assert!(matches!(judged(finished, &term), Some(Verdict::Duplicated(why)) if why.contains("SIGTERMed")));
        assert_eq!(judged(vec![attempt("a", 7, 1_000, Some(1_200))], &term), None);
        // The SIGTERM is named as the cause of the cut, not of a step it let finish.
        assert_eq!(fault_in_step(&op(twice()), &term).map(|f| f.kind), Some(FaultKind::WorkerTerm));
        assert!(fault_in_step(&op(vec![attempt("a", 7, 1_000, Some(1_200))]), &term).is_none());
        // A SIGTERM that landed in the second attempt (the same process took the task back
        // after a Redis outage) did not cause it: the outage did (a Sentinel run at seed 24).
        let retaken = vec![attempt("a", 7, 29_939, Some(30_154)), attempt("b", 7, 36_483, Some(36_698))];
        let faults = [fault(FaultKind::Redis, 0, 30_001, 36_427), fault(FaultKind::WorkerTerm, 7, 36_491, 37_015)];
        assert!(matches!(judged(retaken, &faults), Some(Verdict::Unavoidable(_))));
    }

    #[test]
    fn only_a_redis_outage_longer_than_the_lease_excuses_a_second_attempt() {
        let twice = || vec![attempt("a", 7, 1_000, Some(1_200)), attempt("b", 8, 8_000, Some(8_200))];
        let long = [fault(FaultKind::Redis, 0, 1_200, 7_200)];
        assert!(matches!(judged(twice(), &long), Some(Verdict::Unavoidable(_))));
        let short = [fault(FaultKind::Redis, 0, 1_200, 1_300)];
        assert!(matches!(judged(twice(), &short), Some(Verdict::Duplicated(_))));
    }
}
