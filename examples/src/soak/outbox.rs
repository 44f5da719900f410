//! The outbox: the store outside every process that the steps of `test_task_steps` hand
//! their effects to (`EVERYTHING_OUTBOX`). It is a file in the run's folder, not the soak's
//! Redis: the faults restart and fail Redis over on purpose, and a store that forgets
//! could not tell a step taken once from one whose record it lost.
//!
//! Each attempt at a step appends a `sent` line (the step's idempotency key, the call, the
//! process, a receipt no other attempt shares) and, once the service confirms it, a
//! `confirmed` line naming the receipt. The fault injector reads it to time a worker's
//! SIGTERM inside a step; at the end each attempt becomes a fact of the operation whose
//! call made it, for the checks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::flows::Shared;
use super::history::{unix_ms, Fact};

/// One attempt at a step, as the outbox saw it (times in ms since the Unix epoch).
#[derive(Clone, Debug)]
pub(crate) struct Attempt {
    pub(crate) call: String,
    pub(crate) step: String,
    pub(crate) key: String,
    pub(crate) receipt: String,
    pub(crate) pid: u32,
    pub(crate) sent: u64,
    pub(crate) confirmed: Option<u64>,
}

pub(crate) struct Outbox {
    path: PathBuf,
}

/// What the outbox held: the attempts in the order they were sent, the lines that are not
/// one (a confirmation of no attempt, or no JSON at all), and a last line not ended yet.
#[derive(Default)]
pub(crate) struct Read {
    pub(crate) attempts: Vec<Attempt>,
    pub(crate) stray: Vec<String>,
    pub(crate) unended: Option<String>,
}

impl Outbox {
    /// The outbox of the run writing to `out`, empty.
    pub(crate) fn create(out: &Path) -> anyhow::Result<Self> {
        let path = out.join("outbox.jsonl");
        std::fs::write(&path, "")?;
        Ok(Self { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Every attempt so far. A last line without its newline is still being written: it
    /// is left for the next read.
    pub(crate) fn read(&self) -> Read {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let (complete, unended) = text.rsplit_once('\n').unwrap_or(("", &text));
        let mut read = Read { unended: (!unended.is_empty()).then(|| unended.to_owned()), ..Read::default() };
        let mut by_receipt: BTreeMap<String, usize> = BTreeMap::new();
        for line in complete.lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                read.stray.push(line.to_owned());
                continue;
            };
            let text = |field: &str| entry[field].as_str().unwrap_or_default().to_owned();
            let ms = entry["ms"].as_u64().unwrap_or(0);
            if let Some(receipt) = entry["sent"].as_str() {
                by_receipt.insert(receipt.to_owned(), read.attempts.len());
                read.attempts.push(Attempt {
                    call: text("call"),
                    step: text("step"),
                    key: text("key"),
                    receipt: receipt.to_owned(),
                    pid: entry["pid"].as_u64().and_then(|p| u32::try_from(p).ok()).unwrap_or(0),
                    sent: ms,
                    confirmed: None,
                });
            } else if let Some(&at) = entry["confirmed"].as_str().and_then(|r| by_receipt.get(r)) {
                read.attempts[at].confirmed = Some(ms);
            } else {
                read.stray.push(line.to_owned());
            }
        }
        read
    }

    /// A step under way in one of `pids`: sent in the last `within`, not confirmed yet
    /// (an older one was cut off, by a lease lost, say). Its process and receipt.
    pub(crate) fn under_way(&self, pids: &[u32], within: Duration) -> Option<(u32, String)> {
        let since = unix_ms(SystemTime::now()).saturating_sub(u64::try_from(within.as_millis()).unwrap_or(u64::MAX));
        let recent = |a: &Attempt| a.confirmed.is_none() && a.sent >= since && pids.contains(&a.pid);
        self.read().attempts.into_iter().rev().find(recent).map(|a| (a.pid, a.receipt))
    }
}

/// Records each attempt in the outbox as a fact of the operation whose call made it, once
/// every process has stopped; returns the lines that belong to no operation (there must
/// be none: only the soak's calls write there).
pub(crate) fn record(shared: &Shared) -> Vec<String> {
    let history = &shared.history;
    let Read { attempts, mut stray, unended } = shared.outbox.read();
    // Every process has stopped: a line left unended was cut off as it was written.
    stray.extend(unended);
    for attempt in attempts {
        let Some(op) = shared.step_call_op(&attempt.call) else {
            stray.push(format!("{} (call {:?}: no operation made it)", attempt.receipt, attempt.call));
            continue;
        };
        let fact = Fact::Step {
            step: attempt.step,
            key: attempt.key,
            receipt: attempt.receipt,
            pid: attempt.pid,
            sent_ms: history.ms_of_unix(attempt.sent),
            confirmed_ms: attempt.confirmed.map(|at| history.ms_of_unix(at)),
        };
        history.fact(op, fact);
    }
    stray
}
