//! The checks: a verdict for every operation, from its recorded facts alone.
//!
//! - hung: a request got no answer by its deadline, or the operation never ended;
//! - wrong: a final text differs from what the answers given call for, a hostile request
//!   was served, a cancelled task came back;
//! - duplicated: two different receipts for one `once!` call, a run number above one, a
//!   last round reporting more runs than receipts, a task step whose receipt changed, a
//!   claimed state accepted again (even after an empty Redis restart: the guard notices),
//!   a task's step attempted again in the outbox or cut by a SIGTERM (`steps`);
//! - lost: a task gone ("unknown task") within its TTL, a task that never reached a final
//!   state, a list change missed by a listener connected through it (changes made around
//!   a Redis restart count as one: the fanout then says every list may have changed; a
//!   change whose instance was killed within 200 ms may never have been published);
//! - unavoidable: a task gone after Redis restarted empty since (the store was emptied);
//! - failed cleanly: an error the client saw as one (a JSON-RPC error, a refused or cut
//!   connection, a 404 for a session), with the fault that explains it, if any.

use std::cell::Cell;
use std::collections::BTreeMap;

use super::cluster::Target;
use super::expect::{self, Answers};
use super::faults::FaultKind;
use super::history::{End, Fact, FaultLog, Kind, OpLog, Outcome};
use super::steps;

/// A trigger must have reached a listener connected this long after it was answered.
const GRACE_MS: u64 = 3_000;
/// After Redis comes back, the fanout reconnects (after 1 s) and tells its listeners.
const REDIS_GRACE_MS: u64 = 5_000;
/// A change made this soon before its instance was killed may never have been published.
const UNPUBLISHED_MS: u64 = 200;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Completed,
    FailedClean(String),
    Unavoidable(String),
    Lost(String),
    Duplicated(String),
    Wrong(String),
    Hung(String),
}

impl Verdict {
    pub(crate) const COLUMNS: [&'static str; 7] =
        ["completed", "failed_clean", "unavoidable", "lost", "duplicated", "wrong", "hung"];

    pub(crate) fn column(&self) -> usize {
        match self {
            Verdict::Completed => 0,
            Verdict::FailedClean(_) => 1,
            Verdict::Unavoidable(_) => 2,
            Verdict::Lost(_) => 3,
            Verdict::Duplicated(_) => 4,
            Verdict::Wrong(_) => 5,
            Verdict::Hung(_) => 6,
        }
    }

    /// Whether the run fails for it.
    pub(crate) fn bad(&self) -> bool {
        self.column() >= 3
    }

    pub(crate) fn reason(&self) -> &str {
        match self {
            Verdict::Completed => "",
            Verdict::FailedClean(r)
            | Verdict::Unavoidable(r)
            | Verdict::Lost(r)
            | Verdict::Duplicated(r)
            | Verdict::Wrong(r)
            | Verdict::Hung(r) => r,
        }
    }
}

pub(crate) struct Judged {
    pub(crate) op: usize,
    pub(crate) kind: Kind,
    pub(crate) verdict: Verdict,
    /// The fault that explains a failure ("none" when none does).
    pub(crate) cause: String,
}

/// Whether an operation is left out of the checks (the stalled reader is a fault).
pub(crate) fn excluded(op: &OpLog) -> bool {
    op.detail.get("stalled").is_some()
}

/// Every distinct receipt of each once! call id, with the operations that saw it and when.
type Receipts<'a> = BTreeMap<&'a str, BTreeMap<&'a str, Vec<(usize, u64)>>>;

struct Context<'a> {
    faults: &'a [FaultLog],
    /// Redis outages: (down, up, how far back it forgot).
    outages: Vec<(u64, u64, u64)>,
    /// Those a task run's lease may not outlive (`steps::lease_losing`).
    lease_losing: Vec<(u64, u64)>,
    receipts: Receipts<'a>,
    /// Successful list changes: (sent, answered, instance).
    triggers: Vec<(u64, u64, Target)>,
    coverage: Coverage,
}

/// How much the checks had to examine: a check over nothing proves nothing.
#[derive(Debug, Default)]
pub(crate) struct Coverage {
    /// (listener, change) pairs that had to be heard, one notification each.
    pub(crate) pairs: Cell<usize>,
    /// (listener, Redis restart) pairs that had to be told "every list may have changed".
    pub(crate) windows: Cell<usize>,
    /// Pairs not required: the change's instance was killed before it could publish it.
    pub(crate) excused: Cell<usize>,
    /// `once!` call ids with a receipt, and the receipts seen.
    pub(crate) calls: usize,
    pub(crate) receipts: usize,
}

fn bump(cell: &Cell<usize>, by: usize) {
    cell.set(cell.get() + by);
}

/// The verdicts of `ops`, given the faults, and the task lease the processes ran with.
pub(crate) fn judge(ops: &[OpLog], faults: &[FaultLog], lease_ms: u64) -> (Vec<Judged>, Coverage) {
    let outages = faults
        .iter()
        .filter(|f| f.kind == FaultKind::Redis)
        .map(|f| (f.at_ms, f.restored_ms.unwrap_or(u64::MAX), f.forgets_ms))
        .collect();
    let mut receipts = Receipts::new();
    for op in ops {
        for (at, fact) in &op.facts {
            if let Fact::Receipt { call_id, receipt } = fact {
                receipts.entry(call_id).or_default().entry(receipt).or_default().push((op.id, *at));
            }
        }
    }
    let triggers = ops
        .iter()
        .filter(|op| op.kind == Kind::Trigger && op.end == Some(End::Done) && !excluded(op))
        .filter_map(|op| op.requests.iter().rev().find(|r| matches!(r.outcome, Outcome::Result(_))))
        .map(|r| (r.at_ms, r.at_ms + r.ms, r.target))
        .collect();
    let coverage =
        Coverage { calls: receipts.len(), receipts: receipts.values().map(BTreeMap::len).sum(), ..Coverage::default() };
    let lease_losing = steps::lease_losing(faults, lease_ms);
    let context = Context { faults, outages, lease_losing, receipts, triggers, coverage };
    let judged = ops
        .iter()
        .filter(|op| !excluded(op))
        .map(|op| {
            let verdict = hung(op).unwrap_or_else(|| context.verdict(op));
            let cause = match &verdict {
                Verdict::Completed => String::new(),
                Verdict::Unavoidable(_) => context.outage_since(op),
                _ => context.cause(op),
            };
            Judged { op: op.id, kind: op.kind, verdict, cause }
        })
        .collect();
    (judged, context.coverage)
}

fn hung(op: &OpLog) -> Option<Verdict> {
    if op.end.is_none() {
        return Some(Verdict::Hung("the operation never ended".into()));
    }
    op.requests
        .iter()
        .find(|r| r.outcome == Outcome::Transport(super::client::Transport::Timeout))
        .map(|r| Verdict::Hung(format!("{} to {} got no answer within its deadline", r.method, r.target)))
}

pub(crate) fn failed(op: &OpLog) -> Option<&str> {
    match &op.end {
        Some(End::Failed(why)) => Some(why),
        _ => None,
    }
}

pub(crate) fn texts(op: &OpLog) -> impl Iterator<Item = &str> {
    op.facts().filter_map(|f| if let Fact::Text(t) = f { Some(t.as_str()) } else { None })
}

pub(crate) fn answers(op: &OpLog) -> Answers<'_> {
    Answers(
        op.facts()
            .filter_map(|f| if let Fact::Answered { key, value } = f { Some((key.as_str(), value)) } else { None })
            .collect(),
    )
}

pub(crate) fn tool(op: &OpLog) -> &str {
    op.detail["tool"].as_str().unwrap_or_default()
}

impl Context<'_> {
    fn verdict(&self, op: &OpLog) -> Verdict {
        match op.kind {
            Kind::Elicitation | Kind::Sampling | Kind::Roots | Kind::MultiRound => expect::mrtr(op),
            Kind::Once => self.once(op),
            Kind::TaskAsk | Kind::TaskCompute => self.task(op),
            Kind::TaskSteps => steps::verdict(op, self.faults, &self.lease_losing).unwrap_or_else(|| self.task(op)),
            Kind::Listen => self.listen(op),
            Kind::Trigger => expect::trigger(op),
            Kind::Session => expect::session(op),
            Kind::Tampered | Kind::Replay => Self::hostile(op),
        }
    }

    /// A Redis outage that began after `since` (and by `until`) and forgot what was
    /// written then: an empty restart forgets everything, a failover the last moment's
    /// writes (not yet replicated), a restart from an AOF fsynced on every write nothing.
    fn emptied_between(&self, since: u64, until: u64) -> bool {
        self.outages.iter().any(|&(down, _, forgets)| down >= since && down <= until && down - since <= forgets)
    }

    fn once(&self, op: &OpLog) -> Verdict {
        let call_id = op.detail["call_id"].as_str().unwrap_or_default();
        if let Some(duplicate) = self.duplicate_receipt(op, call_id) {
            return duplicate;
        }
        if let Some(why) = failed(op) {
            return Verdict::FailedClean(why.to_owned());
        }
        let Some((pid, ran, last_at)) = op.facts.iter().find_map(|(at, f)| match f {
            Fact::OnceFinal { pid, ran, .. } => Some((*pid, *ran, *at)),
            _ => None,
        }) else {
            return Verdict::Wrong(format!("the flow ended without its last round: {:?}", texts(op).last()));
        };
        // The runs the process serving the last round had taken by then, by the receipts seen
        // (at the same millisecond too: a fast last round follows its step within one).
        let prefix = format!("pid{pid}/");
        let taken = self.receipts.get(call_id).map_or(0, |receipts| {
            receipts.iter().filter(|(r, seen)| r.starts_with(&prefix) && seen.iter().any(|s| s.1 <= last_at)).count()
        });
        let text = texts(op).last().unwrap_or_default();
        match ran {
            Some(ran) if usize::try_from(ran).unwrap_or(usize::MAX) > taken => Verdict::Duplicated(format!(
                "pid {pid} reports the step ran {ran} time(s) for {call_id}, but took it {taken} time(s) in view"
            )),
            _ if text == expect::once_text(call_id, taken) => Verdict::Completed,
            _ => Verdict::Wrong(format!("expected {:?}, got {text:?}", expect::once_text(call_id, taken))),
        }
    }

    /// Duplicated when `op` saw a receipt of `call_id` that is not the first one taken,
    /// or a run number above one.
    fn duplicate_receipt(&self, op: &OpLog, call_id: &str) -> Option<Verdict> {
        let receipts = self.receipts.get(call_id)?;
        let mine: Vec<&str> = op
            .facts()
            .filter_map(|f| if let Fact::Receipt { receipt, .. } = f { Some(receipt.as_str()) } else { None })
            .collect();
        let first = receipts.iter().min_by_key(|(_, seen)| seen.iter().map(|s| s.1).min()).map(|(r, _)| *r);
        let again = mine.iter().find(|r| Some(**r) != first || (r.contains("/run") && !r.ends_with("/run1")))?;
        let all: Vec<&str> = receipts.keys().copied().collect();
        Some(Verdict::Duplicated(format!("the once! step of {call_id} was taken again ({again}; all: {all:?})")))
    }

    fn hostile(op: &OpLog) -> Verdict {
        if let Some(why) = failed(op) {
            return Verdict::FailedClean(why.to_owned());
        }
        if op.facts().any(|f| matches!(f, Fact::Refused { .. })) {
            return Verdict::Completed;
        }
        if !op.facts().any(|f| matches!(f, Fact::Accepted)) {
            return Verdict::Wrong("neither refused nor accepted".into());
        }
        if op.kind == Kind::Tampered {
            return Verdict::Wrong(format!("a {} state was accepted", op.detail["variant"].as_str().unwrap_or("bad")));
        }
        // Even across a Redis restart that emptied its records: the guard notices the
        // store was emptied and refuses states sealed before (the library's fix for
        // what this check first found), so an accepted replay is always a duplicate.
        let call_id = op.detail["call_id"].as_str().unwrap_or_default();
        Verdict::Duplicated(format!("the claimed once! state of {call_id} was accepted again"))
    }

    fn task(&self, op: &OpLog) -> Verdict {
        let Some((ttl_ms, sent_ms)) = op.facts().find_map(|f| match f {
            Fact::TaskCreated { ttl_ms, sent_ms, .. } => Some((*ttl_ms, *sent_ms)),
            _ => None,
        }) else {
            return Verdict::FailedClean(failed(op).unwrap_or("no task was created").to_owned());
        };
        if let Some(&(at, _)) = op.facts.iter().find(|(_, f)| matches!(f, Fact::TaskUnknown)) {
            if self.emptied_between(sent_ms, at) {
                return Verdict::Unavoidable("lost to the Redis restart (unavoidable: the store was emptied)".into());
            }
            if at < sent_ms + ttl_ms {
                return Verdict::Lost(format!(
                    "unknown task {} s after its creation, within its TTL",
                    (at - sent_ms) / 1000
                ));
            }
            return Verdict::FailedClean("expired".into());
        }
        let finals: Vec<(&str, &str)> = op
            .facts()
            .filter_map(|f| {
                if let Fact::TaskFinal { status, text } = f {
                    Some((status.as_str(), text.as_str()))
                } else {
                    None
                }
            })
            .collect();
        let Some(&(status, text)) = finals.first() else {
            return Verdict::Lost(format!("never reached a final state: {}", failed(op).unwrap_or("?")));
        };
        // A cancel the server acknowledged ends the task cancelled, unless it had ended
        // already; once read cancelled, it stays so.
        if op.facts().any(|f| matches!(f, Fact::Cancelled { .. })) {
            if let Some(at) = finals.iter().position(|(s, _)| *s == "cancelled") {
                return match finals[at..].iter().find(|(s, _)| *s != "cancelled") {
                    None => Verdict::Completed,
                    Some((other, _)) => Verdict::Wrong(format!("a cancelled task was later read {other}")),
                };
            }
        }
        match status {
            "completed" => expect::task_result(op, text),
            "failed" => Verdict::FailedClean(format!("the task failed: {text}")),
            other => Verdict::Wrong(format!("a task nobody cancelled ended {other}")),
        }
    }

    fn listen(&self, op: &OpLog) -> Verdict {
        let Some(&(acked, _)) = op.facts.iter().find(|(_, f)| matches!(f, Fact::Listening)) else {
            return Verdict::FailedClean(failed(op).unwrap_or("not acknowledged").to_owned());
        };
        let (ended, how) = op
            .facts
            .iter()
            .find_map(|(at, f)| if let Fact::StreamEnded { how } = f { Some((*at, how.as_str())) } else { None })
            .unwrap_or((op.end_ms.unwrap_or(u64::MAX), "?"));
        let heard: Vec<u64> = op.facts.iter().filter(|(_, f)| matches!(f, Fact::Notified)).map(|(at, _)| *at).collect();
        let mut required: Vec<(u64, String)> = Vec::new();
        // Changes made around a Redis restart may miss the fanout; each instance then
        // tells its listeners once that every list may have changed: one notification
        // for the lot, required of a listener still connected after the window.
        let windows: Vec<(u64, u64)> = self
            .outages
            .iter()
            .map(|&(down, up, _)| (down.saturating_sub(1_000), up.saturating_add(REDIS_GRACE_MS)))
            .collect();
        let mut collapsed: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for &(sent, answered, target) in &self.triggers {
            if sent <= acked || answered + GRACE_MS >= ended {
                continue;
            }
            if self.killed_within(target, answered, UNPUBLISHED_MS) {
                bump(&self.coverage.excused, 1);
                continue;
            }
            if let Some(&window) = windows.iter().find(|&&(from, to)| sent >= from && sent <= to) {
                if window.1 + GRACE_MS < ended {
                    let first = collapsed.entry(window).or_insert(sent);
                    *first = (*first).min(sent);
                }
                continue;
            }
            required.push((sent, target.to_string()));
        }
        bump(&self.coverage.windows, collapsed.len());
        bump(&self.coverage.pairs, required.len());
        required.extend(collapsed.into_iter().map(|((from, _), sent)| (sent, format!("the Redis restart @{from}ms"))));
        required.sort_unstable_by_key(|(sent, _)| *sent);
        // Each required change needs a notification of its own, heard after it was sent.
        let (mut next, mut missed) = (0, Vec::new());
        for (sent, made_by) in &required {
            while next < heard.len() && heard[next] <= *sent {
                next += 1;
            }
            if next < heard.len() {
                next += 1;
            } else {
                missed.push(format!("{made_by}@{sent}ms"));
            }
        }
        if !missed.is_empty() {
            return Verdict::Lost(format!(
                "missed {} of {} changes made while it was connected: {}",
                missed.len(),
                required.len(),
                missed.join(", ")
            ));
        }
        match how {
            "closed" => Verdict::Completed,
            how => Verdict::FailedClean(format!("the stream ended early ({how})")),
        }
    }

    /// The Redis restart an unavoidable loss is due to: the first since the operation
    /// (or, for a replay, its claim) began.
    fn outage_since(&self, op: &OpLog) -> String {
        let since = op.detail["claimed_ms"].as_u64().unwrap_or(op.start_ms);
        self.outages
            .iter()
            .find(|&&(down, _, _)| down >= since)
            .map_or_else(|| "none".into(), |(down, up, _)| format!("redis_restart @{down}-{up}ms"))
    }

    /// Whether `target` was SIGKILLed within `within` after `at`.
    fn killed_within(&self, target: Target, at: u64, within: u64) -> bool {
        self.faults
            .iter()
            .any(|f| f.kind == FaultKind::Kill && f.victim == Some(target) && f.at_ms >= at && f.at_ms <= at + within)
    }

    /// The fault that explains a failed operation: one that hit the instance its stream
    /// or session was bound to, or its last failed request went to, around then; else a
    /// Redis outage around then, or since a task's creation. For a task whose steps the
    /// outbox saw, first a SIGKILL or SIGTERM of a process while it took one.
    fn cause(&self, op: &OpLog) -> String {
        if let Some(fault) = steps::fault_in_step(op, self.faults) {
            return format!("{} {}", fault.kind.name(), fault.victim.map(|t| t.to_string()).unwrap_or_default());
        }
        // A stream or session ends with its instance; any other operation with its last
        // failed request (earlier ones may have been retried elsewhere).
        let failure =
            op.requests.iter().rev().find(|r| !matches!(r.outcome, Outcome::Result(_) | Outcome::Http(200 | 202)));
        let (at, target) = match (op.bound, failure) {
            (Some(bound), _) => (op.end_ms.unwrap_or(op.start_ms), Some(bound)),
            (None, Some(r)) => (r.at_ms, Some(r.target)),
            (None, None) => (op.end_ms.unwrap_or(op.start_ms), None),
        };
        let until = op.end_ms.unwrap_or(u64::MAX);
        for fault in self.faults {
            let hit = matches!(fault.kind, FaultKind::Kill | FaultKind::Term)
                && fault.victim.is_some()
                && fault.victim == target;
            if hit && fault.at_ms <= until && fault.restored_ms.unwrap_or(u64::MAX) + 1_000 >= at.min(until) {
                return format!("{} {}", fault.kind.name(), target.map(|t| t.to_string()).unwrap_or_default());
            }
        }
        if let Some(&(down, up, _)) = self.outages.iter().find(|&&(down, up, _)| at + 500 >= down && at <= up + 10_000)
        {
            return format!("redis_restart @{down}-{up}ms");
        }
        if matches!(op.kind, Kind::TaskAsk | Kind::TaskCompute | Kind::TaskSteps)
            && self.emptied_between(op.start_ms, until)
        {
            return "redis_restart (since creation)".into();
        }
        let stalled =
            self.faults.iter().any(|f| f.kind == FaultKind::Stall && f.at_ms <= at && f.restored_ms.unwrap_or(0) >= at);
        if stalled {
            "none (during stalled_reader)".into()
        } else {
            "none".into()
        }
    }
}
