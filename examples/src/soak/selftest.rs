//! `--self-test WHAT`: corrupts the recorded history in one way before the checks run,
//! so that one can see the check for it fail (the run then exits 1). `--self-test all`
//! applies each corruption to a copy of the history in turn and reports whether the
//! checks caught it: a check that cannot fail is worthless.

use serde_json::json;

use super::checks::{self, Verdict};
use super::client::Transport;
use super::history::{End, Fact, FaultLog, Kind, OpLog, Outcome};

pub(crate) const ALL: [&str; 11] = [
    "duplicate-receipt",
    "second-run",
    "once-count",
    "task-step",
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
        "lost-task" | "stuck-task" => {
            let last_outage =
                faults.iter().filter(|f| f.kind == super::faults::FaultKind::Redis).map(|f| f.at_ms).max();
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

/// Every corruption, each on a copy of the history: a line for each, and whether every
/// one that applied was caught.
pub(crate) fn all(ops: &[OpLog], faults: &[FaultLog]) -> (Vec<String>, bool) {
    let mut caught_all = true;
    let lines = ALL
        .iter()
        .map(|what| {
            let mut copy = ops.to_vec();
            let line = match corrupt(&mut copy, faults, what) {
                Ok(done) => {
                    let (judged, _) = checks::judge(&copy, faults);
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
