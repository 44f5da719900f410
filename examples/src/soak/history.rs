//! The history of a run: every operation's start, each request it made (when, to which
//! instance, how long, what came back), the facts it observed (answers it gave, receipts,
//! task states, notifications) and how it ended, plus every fault. Each entry is written
//! as a JSON line to `history.jsonl` as it happens, and kept in memory for the checks.
//!
//! Flows only record; they never judge. The verdicts come from `checks`, from these facts.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::cluster::Target;
use super::faults::FaultKind;

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    Elicitation,
    Sampling,
    Roots,
    MultiRound,
    Once,
    TaskAsk,
    TaskCompute,
    TaskSteps,
    Listen,
    Trigger,
    Session,
    Tampered,
    Replay,
}

impl Kind {
    pub(crate) const ALL: [Kind; 13] = [
        Kind::Elicitation,
        Kind::Sampling,
        Kind::Roots,
        Kind::MultiRound,
        Kind::Once,
        Kind::TaskAsk,
        Kind::TaskCompute,
        Kind::TaskSteps,
        Kind::Listen,
        Kind::Trigger,
        Kind::Session,
        Kind::Tampered,
        Kind::Replay,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Elicitation => "mrtr_elicitation",
            Kind::Sampling => "mrtr_sampling",
            Kind::Roots => "mrtr_roots",
            Kind::MultiRound => "mrtr_multi_round",
            Kind::Once => "mrtr_once",
            Kind::TaskAsk => "task_asks",
            Kind::TaskCompute => "task_computes",
            Kind::TaskSteps => "task_steps",
            Kind::Listen => "listen",
            Kind::Trigger => "list_change",
            Kind::Session => "session_2025",
            Kind::Tampered => "hostile_tampered",
            Kind::Replay => "hostile_replay",
        }
    }
}

/// What one request got.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// A JSON-RPC result (its `resultType`, or `status` of a task).
    Result(String),
    /// A JSON-RPC error.
    Error { code: i64, message: String },
    /// HTTP without a JSON-RPC message (202 for an answer, 404 for a lost session).
    Http(u16),
    /// Below HTTP: not sent, cut off, or no answer by the deadline.
    Transport(super::client::Transport),
}

impl Outcome {
    fn to_json(&self) -> Value {
        match self {
            Outcome::Result(kind) => json!({ "result": kind }),
            Outcome::Error { code, message } => json!({ "error": code, "message": message }),
            Outcome::Http(status) => json!({ "http": status }),
            Outcome::Transport(transport) => json!({ "transport": transport.to_string() }),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct RequestLog {
    pub(crate) at_ms: u64,
    pub(crate) ms: u64,
    pub(crate) method: String,
    pub(crate) target: Target,
    pub(crate) outcome: Outcome,
}

/// What an operation saw or did, for the checks.
#[derive(Clone, Debug)]
pub(crate) enum Fact {
    /// An answer it gave (an input response, a task update, an answer to the bridge).
    Answered { key: String, value: Value },
    /// A final result's text.
    Text(String),
    /// A `once!` step was taken for `call_id`: who took it.
    Receipt { call_id: String, receipt: String },
    /// The last round of a `once!` flow, served by `pid`, said the step ran `text`.
    OnceFinal { call_id: String, pid: u32, ran: Option<u32> },
    /// A task was created (`sent_ms`: when the creating request left).
    TaskCreated { task_id: String, ttl_ms: u64, sent_ms: u64 },
    /// A task's status as polled, with its message and its questions' messages.
    TaskStatus { status: String, message: String },
    /// A task's final state.
    TaskFinal { status: String, text: String },
    /// The store no longer knows the task.
    TaskUnknown,
    /// An attempt at a `once!` step of the task, as the outbox outside the processes saw
    /// it: the step, its idempotency key, the receipt the attempt made, the process that
    /// made it, when it was sent and when (if ever) the service confirmed it.
    Step { step: String, key: String, receipt: String, pid: u32, sent_ms: u64, confirmed_ms: Option<u64> },
    /// A `tasks/cancel` was acknowledged with this status.
    Cancelled { status: String },
    /// A listen stream was acknowledged.
    Listening,
    /// A listen stream carried `notifications/tools/list_changed`.
    Notified,
    /// A listen stream ended: by the client (`closed`), or the server (how).
    StreamEnded { how: String },
    /// A hostile request was refused with a JSON-RPC error.
    Refused { code: i64 },
    /// A hostile request was served as if valid.
    Accepted,
}

impl Fact {
    fn to_json(&self) -> Value {
        match self {
            Fact::Answered { key, value } => json!({ "answered": key, "value": value }),
            Fact::Text(text) => json!({ "text": text }),
            Fact::Receipt { call_id, receipt } => json!({ "receipt": receipt, "call_id": call_id }),
            Fact::OnceFinal { call_id, pid, ran } => json!({ "once_final": call_id, "pid": pid, "ran": ran }),
            Fact::TaskCreated { task_id, ttl_ms, sent_ms } => {
                json!({ "task_created": task_id, "ttl_ms": ttl_ms, "sent_ms": sent_ms })
            }
            Fact::TaskStatus { status, message } => json!({ "task_status": status, "message": message }),
            Fact::TaskFinal { status, text } => json!({ "task_final": status, "text": text }),
            Fact::TaskUnknown => json!({ "task_unknown": true }),
            Fact::Step { step, key, receipt, pid, sent_ms, confirmed_ms } => json!({
                "step": step, "key": key, "receipt": receipt, "pid": pid,
                "sent_t": sent_ms, "confirmed_t": confirmed_ms,
            }),
            Fact::Cancelled { status } => json!({ "cancel_ack": status }),
            Fact::Listening => json!({ "listening": true }),
            Fact::Notified => json!({ "notified": "tools/list_changed" }),
            Fact::StreamEnded { how } => json!({ "stream_ended": how }),
            Fact::Refused { code } => json!({ "refused": code }),
            Fact::Accepted => json!({ "accepted": true }),
        }
    }
}

/// How the flow itself says it ended (the checks decide what that means).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum End {
    Done,
    Failed(String),
}

#[derive(Clone)]
pub(crate) struct OpLog {
    pub(crate) id: usize,
    pub(crate) kind: Kind,
    pub(crate) start_ms: u64,
    pub(crate) end_ms: Option<u64>,
    pub(crate) detail: Value,
    pub(crate) requests: Vec<RequestLog>,
    pub(crate) facts: Vec<(u64, Fact)>,
    pub(crate) end: Option<End>,
    /// The instance a listen stream or session was bound to.
    pub(crate) bound: Option<Target>,
}

impl OpLog {
    pub(crate) fn facts(&self) -> impl Iterator<Item = &Fact> {
        self.facts.iter().map(|(_, fact)| fact)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct FaultLog {
    pub(crate) kind: FaultKind,
    pub(crate) at_ms: u64,
    /// When the fault's effect ended (the instance or Redis was back).
    pub(crate) restored_ms: Option<u64>,
    /// The process the fault hit (kill, term, the stalled stream's instance).
    pub(crate) victim: Option<Target>,
    pub(crate) note: String,
    /// For a Redis fault: how far back before it acknowledged writes may be gone
    /// (`u64::MAX`: everything, an empty restart; 0: nothing).
    pub(crate) forgets_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpId(usize);

struct Inner {
    out: BufWriter<File>,
    ops: Vec<OpLog>,
    faults: Vec<FaultLog>,
}

pub(crate) struct History {
    start: Instant,
    /// The same instant on the wall clock, in ms since the Unix epoch: the outbox's times.
    start_unix_ms: u64,
    inner: Mutex<Inner>,
}

impl History {
    pub(crate) fn create(path: &Path) -> anyhow::Result<Self> {
        let out = BufWriter::new(File::create(path)?);
        let start_unix_ms = unix_ms(SystemTime::now());
        let inner = Mutex::new(Inner { out, ops: Vec::new(), faults: Vec::new() });
        Ok(Self { start: Instant::now(), start_unix_ms, inner })
    }

    /// Milliseconds since the run started.
    pub(crate) fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The run's milliseconds at `unix_ms` on the wall clock (0 before the run).
    pub(crate) fn ms_of_unix(&self, unix_ms: u64) -> u64 {
        unix_ms.saturating_sub(self.start_unix_ms)
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(inner: &mut Inner, line: &Value) {
        let _ = writeln!(inner.out, "{line}");
    }

    pub(crate) fn begin(&self, kind: Kind, detail: Value) -> OpId {
        let at = self.now_ms();
        let mut inner = self.inner();
        let id = inner.ops.len();
        Self::write(&mut inner, &json!({ "t": at, "op": id, "start": kind.name(), "detail": detail }));
        inner.ops.push(OpLog {
            id,
            kind,
            start_ms: at,
            end_ms: None,
            detail,
            requests: Vec::new(),
            facts: Vec::new(),
            end: None,
            bound: None,
        });
        OpId(id)
    }

    pub(crate) fn request(&self, op: OpId, request: RequestLog) {
        let mut inner = self.inner();
        let line = json!({
            "t": request.at_ms, "op": op.0, "request": request.method, "instance": request.target.to_string(),
            "port": request.target.addr.port(), "ms": request.ms, "outcome": request.outcome.to_json(),
        });
        Self::write(&mut inner, &line);
        if let Some(log) = inner.ops.get_mut(op.0) {
            log.requests.push(request);
        }
    }

    pub(crate) fn fact(&self, op: OpId, fact: Fact) {
        let at = self.now_ms();
        let mut inner = self.inner();
        Self::write(&mut inner, &json!({ "t": at, "op": op.0, "fact": fact.to_json() }));
        if let Some(log) = inner.ops.get_mut(op.0) {
            log.facts.push((at, fact));
        }
    }

    pub(crate) fn bind(&self, op: OpId, target: Target) {
        let at = self.now_ms();
        let mut inner = self.inner();
        Self::write(&mut inner, &json!({ "t": at, "op": op.0, "bound_to": target.to_string() }));
        if let Some(log) = inner.ops.get_mut(op.0) {
            log.bound = Some(target);
        }
    }

    pub(crate) fn end(&self, op: OpId, end: End) {
        let at = self.now_ms();
        let mut inner = self.inner();
        let how = match &end {
            End::Done => json!("done"),
            End::Failed(why) => json!({ "failed": why }),
        };
        Self::write(&mut inner, &json!({ "t": at, "op": op.0, "end": how }));
        if let Some(log) = inner.ops.get_mut(op.0) {
            log.end = Some(end);
            log.end_ms = Some(at);
        }
    }

    pub(crate) fn fault(&self, fault: FaultLog) {
        let mut inner = self.inner();
        let line = json!({
            "t": fault.at_ms, "fault": fault.kind.name(), "restored_t": fault.restored_ms,
            "victim": fault.victim.map(|t| t.to_string()), "note": fault.note,
            "forgets_ms": (fault.kind == FaultKind::Redis).then_some(fault.forgets_ms),
        });
        Self::write(&mut inner, &line);
        inner.faults.push(fault);
    }

    pub(crate) fn flush(&self) {
        let _ = self.inner().out.flush();
    }

    /// Everything recorded so far, for the checks (later entries still go to the file).
    pub(crate) fn take(&self) -> (Vec<OpLog>, Vec<FaultLog>) {
        let mut inner = self.inner();
        let _ = inner.out.flush();
        (std::mem::take(&mut inner.ops), std::mem::take(&mut inner.faults))
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_ms(at: SystemTime) -> u64 {
    u64::try_from(at.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(u64::MAX)
}
