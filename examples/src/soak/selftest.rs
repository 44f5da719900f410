//! `--self-test WHAT`: corrupts the recorded history in one way before the checks run,
//! so that one can see the check for it fail (the run then exits 1). `--self-test all`
//! applies each corruption to a copy of the history in turn and reports whether the
//! checks caught it: a check that cannot fail is worthless.

use serde_json::json;

use super::checks::{self, Verdict};
use super::client::Transport;
use super::faults::FaultKind;
use super::history::{End, Fact, FaultLog, Kind, OpLog, Outcome};

pub(crate) const ALL: [&str; 15] = [
    "duplicate-receipt",
    "second-run",
    "once-count",
    "task-step",
    "step-after-sigterm",
    "step-cut-by-sigterm",
    "step-twice",
    "step-lost",
    "lost-task",
    "stuck-task",
    "missed-change",
    "wrong-result",
    "hung",
    "replay-accepted",
    "tamper-accepted",
];

fn completed(op: &OpLog, kind: Kind) -> bool {
    op.kind == kind && op.end == Some(End::Done) && !checks::excluded(op)
}

fn first(ops: &mut [OpLog], test: impl Fn(&OpLog) -> bool) -> Option<&mut OpLog> {
    ops.iter_mut().find(|op| test(op))
}

/// Applies corruption `what`; says what it changed, or why it could not.
pub(crate) fn corrupt(ops: &mut [OpLog], faults: &[FaultLog], what: &str) -> Result<String, String> {
    let none = || format!("{what}: no operation in this history to corrupt");
    let receipt_of = |op: &OpLog| op.facts().any(|f| matches!(f, Fact::Receipt { .. }));
    match what {
        "duplicate-receipt" | "second-run" => {
            let op = first(ops, |op| completed(op, Kind::Once) && receipt_of(op)).ok_or_else(none)?;
            for (_, fact) in &mut op.facts {
                if let Fact::Receipt { receipt, call_id } = fact {
                    let receipt_new =
                        if what == "second-run" { receipt.replace("/run1", "/run2") } else { "pid1/run1".into() };
                    let call_id = call_id.clone();
                    if what == "second-run" {
                        *receipt = receipt_new;
                    } else {
                        let at = op.start_ms;
                        op.facts.push((at, Fact::Receipt { call_id, receipt: receipt_new }));
                    }
                    return Ok(format!("{what}: op {}", op.id));
                }
            }
            Err(none())
        }
        "once-count" => {
            let op = first(ops, |op| completed(op, Kind::Once)).ok_or_else(none)?;
            for (_, fact) in &mut op.facts {
                if let Fact::OnceFinal { ran, .. } = fact {
                    *ran = Some(ran.unwrap_or(0) + 1);
                    return Ok(format!("{what}: op {} now reports one run more", op.id));
                }
            }
            Err(none())
        }
        "task-step" => {
            let durable = |op: &OpLog| {
                completed(op, Kind::TaskAsk)
                    && op.detail["tool"] == "test_durable_task"
                    && op.facts().any(|f| matches!(f, Fact::TaskFinal { text, .. } if text.contains("work@")))
            };
            let op = first(ops, durable).ok_or_else(none)?;
            for (_, fact) in &mut op.facts {
                if let Fact::TaskFinal { text, .. } = fact {
                    *text = text
                        .split(' ')
                        .map(|w| if w.starts_with("ticket@") { "ticket@pid0#0" } else { w })
                        .collect::<Vec<_>>()
                        .join(" ");
                }
            }
            Ok(format!("{what}: op {}'s result names another ticket", op.id))
        }
        "step-after-sigterm" | "step-cut-by-sigterm" | "step-twice" | "step-lost" => outbox_step(ops, faults, what),
        "lost-task" | "stuck-task" => {
            let last_outage = faults.iter().filter(|f| f.kind == FaultKind::Redis).map(|f| f.at_ms).max();
            let task = |op: &OpLog| {
                matches!(op.kind, Kind::TaskAsk | Kind::TaskCompute)
                    && op.end == Some(End::Done)
                    && last_outage.is_none_or(|down| op.start_ms > down)
            };
            let op = first(ops, task).ok_or_else(none)?;
            op.facts.retain(|(_, f)| !matches!(f, Fact::TaskFinal { .. }));
            if what == "lost-task" {
                let at = op.start_ms + 1;
                op.facts.push((at, Fact::TaskUnknown));
            }
            op.end = Some(End::Failed("corrupted".into()));
            Ok(format!("{what}: op {}", op.id))
        }
        "missed-change" => {
            let mut touched = 0;
            for op in ops.iter_mut().filter(|op| completed(op, Kind::Listen)) {
                touched += 1;
                op.facts.retain(|(_, f)| !matches!(f, Fact::Notified));
            }
            Ok(format!("{what}: every notification of {touched} listeners dropped"))
        }
        "wrong-result" => {
            let op = first(ops, |op| completed(op, Kind::Elicitation)).ok_or_else(none)?;
            for (_, fact) in &mut op.facts {
                if let Fact::Text(text) = fact {
                    text.push('!');
                }
            }
            Ok(format!("{what}: op {}", op.id))
        }
        "hung" => {
            let op = first(ops, |op| !op.requests.is_empty() && !checks::excluded(op)).ok_or_else(none)?;
            op.requests[0].outcome = Outcome::Transport(Transport::Timeout);
            Ok(format!("{what}: op {}'s first request timed out", op.id))
        }
        "replay-accepted" | "tamper-accepted" => {
            let kind = if what == "replay-accepted" { Kind::Replay } else { Kind::Tampered };
            let refused = |op: &OpLog| completed(op, kind) && op.facts().any(|f| matches!(f, Fact::Refused { .. }));
            let op = first(ops, refused).ok_or_else(none)?;
            op.facts.retain(|(_, f)| !matches!(f, Fact::Refused { .. }));
            let at = op.start_ms;
            op.facts.push((at, Fact::Accepted));
            op.detail["claimed_ms"] = json!(op.start_ms);
            Ok(format!("{what}: op {}", op.id))
        }
        other => Err(format!("unknown self-test {other:?}; one of {}, or all", ALL.join(", "))),
    }
}

/// Whether `op` took a step (as the outbox saw it).
fn steps_taken(op: &OpLog) -> bool {
    op.facts().any(|f| matches!(f, Fact::Step { .. }))
}

/// The corruptions of what the outbox saw of the `task_steps` flow.
fn outbox_step(ops: &mut [OpLog], faults: &[FaultLog], what: &str) -> Result<String, String> {
    match what {
        "step-after-sigterm" | "step-cut-by-sigterm" => step_under_sigterm(ops, faults, what),
        _ => step_again_or_lost(ops, what),
    }
}

/// A step of a completed task taken again a millisecond later by a process no fault hit
/// (`step-twice`), or missing from the outbox while the result names it (`step-lost`).
fn step_again_or_lost(ops: &mut [OpLog], what: &str) -> Result<String, String> {
    let none = || format!("{what}: no completed task with steps in this history");
    let op = first(ops, |op| completed(op, Kind::TaskSteps) && steps_taken(op)).ok_or_else(none)?;
    let (at, attempt) = op.facts.iter().find(|(_, f)| matches!(f, Fact::Step { .. })).cloned().ok_or_else(none)?;
    let Fact::Step { step, key, receipt, sent_ms, confirmed_ms, .. } = attempt else { return Err(none()) };
    if what == "step-lost" {
        op.facts.retain(|(_, f)| !matches!(f, Fact::Step { receipt: r, .. } if *r == receipt));
        return Ok(format!("{what}: op {}'s outbox lost {receipt}, which its result names", op.id));
    }
    let again = Fact::Step {
        step,
        key,
        receipt: format!("{receipt}-again"),
        pid: 1,
        sent_ms: sent_ms + 1,
        confirmed_ms: confirmed_ms.map(|c| c + 1),
    };
    op.facts.insert(0, (at, again));
    Ok(format!("{what}: op {}'s {receipt} taken again by pid 1", op.id))
}

/// E7 undone: a step under way when its process was SIGTERMed is taken again by another
/// (`step-after-sigterm`), or is never confirmed (`step-cut-by-sigterm`, as if the stop had
/// cut it off).
fn step_under_sigterm(ops: &mut [OpLog], faults: &[FaultLog], what: &str) -> Result<String, String> {
    let stops: Vec<(u32, u64)> = faults
        .iter()
        .filter(|f| matches!(f.kind, FaultKind::Term | FaultKind::WorkerTerm))
        .filter_map(|f| Some((f.victim?.pid, f.at_ms)))
        .collect();
    let under_way = |fact: &Fact| match fact {
        Fact::Step { pid, sent_ms, confirmed_ms, .. } => stops
            .iter()
            .find(|&&(p, at)| p == *pid && *sent_ms <= at && confirmed_ms.is_none_or(|c| c >= at))
            .map(|&(_, at)| at),
        _ => None,
    };
    let Some(op) = ops.iter_mut().find(|op| !checks::excluded(op) && op.facts().any(|f| under_way(f).is_some())) else {
        return Err(format!("{what}: no step under way at a SIGTERM in this history"));
    };
    let at = op.facts.iter().position(|(_, f)| under_way(f).is_some()).unwrap_or_default();
    let stopped = under_way(&op.facts[at].1).unwrap_or_default();
    let (seen, Fact::Step { step, key, receipt, pid, .. }) = op.facts[at].clone() else {
        return Err(format!("{what}: no step"));
    };
    if what == "step-cut-by-sigterm" {
        if let Fact::Step { confirmed_ms, .. } = &mut op.facts[at].1 {
            *confirmed_ms = None;
        }
        return Ok(format!("{what}: op {}'s {receipt} never confirmed, pid {pid} SIGTERMed", op.id));
    }
    let again = Fact::Step {
        step,
        key,
        receipt: format!("{receipt}-again"),
        pid: 1,
        sent_ms: stopped + 500,
        confirmed_ms: None,
    };
    op.facts.push((seen, again));
    Ok(format!("{what}: op {}'s {receipt} taken again after pid {pid} was SIGTERMed inside it", op.id))
}

/// Every corruption, each on a copy of the history: a line for each, and whether every
/// one that applied was caught.
pub(crate) fn all(ops: &[OpLog], faults: &[FaultLog], lease_ms: u64) -> (Vec<String>, bool) {
    let mut caught_all = true;
    let lines = ALL
        .iter()
        .map(|what| {
            let mut copy = ops.to_vec();
            let line = match corrupt(&mut copy, faults, what) {
                Ok(done) => {
                    let (judged, _) = checks::judge(&copy, faults, lease_ms);
                    let bad: Vec<String> = judged
                        .iter()
                        .filter(|j| j.verdict.bad())
                        .map(|j| format!("{} {}", Verdict::COLUMNS[j.verdict.column()], j.kind.name()))
                        .collect();
                    caught_all &= !bad.is_empty();
                    match bad.first() {
                        None => format!("NOT CAUGHT {done}"),
                        Some(first) => format!("caught: {done} -> {} bad ({first}…)", bad.len()),
                    }
                }
                Err(skipped) => format!("skipped: {skipped}"),
            };
            format!("self-test {what}: {line}")
        })
        .collect();
    (lines, caught_all)
}
