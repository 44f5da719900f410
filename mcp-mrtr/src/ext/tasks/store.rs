//! Where tasks live: [`TaskRecord`] (a task's status, outcome and journal, as plain
//! serializable data) and the [`TaskStore`] trait, with
//! [`MemoryTaskStore`](super::MemoryTaskStore) as the single-instance default.
//!
//! A store offers four operations: create, get, a compare-and-set replace keyed by the
//! record's version, and a list of the tasks whose runner's lease lapsed. Every change
//! the runtime makes is a change to a copy of the record and a replace that only lands if
//! nobody wrote in between; the copy is of the record the writer already holds when it
//! has one (its request read it, its run wrote it), else of a fresh read, and a lost race
//! is retried from a fresh read. That is all a
//! shared store (Redis, SQL) needs to provide to let several instances serve the same
//! tasks, and take over those of an instance that died.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::error::Chained;
use crate::mrtr::replay::Carried;
use crate::protocol::{ClientCapabilities, ErrorObject, Implementation, InputRequest, JsonObject};

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// The handler is running.
    Working,
    /// The handler waits for answers (`inputRequests`, answered with `tasks/update`).
    InputRequired,
    /// The tool returned a result (an `isError` result too).
    Completed,
    /// The call failed with a JSON-RPC error.
    Failed,
    /// The client cancelled it.
    Cancelled,
}

impl TaskStatus {
    /// `completed`, `failed` and `cancelled` are final.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// The durable record of one task: what was called, where it stands, its outcome, and
/// the journal (answers and `once!` results) its handler is replayed from.
///
/// Opaque to stores: serialize it whole (it is plain data) and key it by [`id`](Self::id).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    id: String,
    version: u64,
    pub(crate) owner: Option<String>,
    pub(crate) status: TaskStatus,
    pub(crate) status_message: Option<String>,
    pub(crate) created_at_ms: u64,
    pub(crate) updated_at_ms: u64,
    pub(crate) ttl_ms: Option<u64>,
    pub(crate) call: TaskCall,
    pub(crate) journal: Carried,
    /// The questions still open, by the key the client sees (see [`TaskRecord::ask`]).
    pub(crate) input_requests: BTreeMap<String, InputRequest>,
    /// For each open question, the handler's key behind the client's key.
    pub(crate) handler_keys: BTreeMap<String, String>,
    /// How often the handler asked under each key in this task.
    pub(crate) times_asked: BTreeMap<String, u32>,
    /// Answers received and not yet replayed.
    pub(crate) input_responses: JsonObject,
    pub(crate) result: Option<Value>,
    pub(crate) error: Option<ErrorObject>,
    /// Which run of the handler holds the task, while it is `working`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lease: Option<Lease>,
    /// How often a run's lease lapsed and another run took the task over.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) takeovers: u32,
}

#[allow(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero(count: &u32) -> bool {
    *count == 0
}

/// A run's hold on a `working` task: renewed while the handler runs; once it lapses
/// (the instance died, or hung), any instance may take the task over.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Lease {
    /// The run holding it: random per run, so a run that lost its lease (and has not
    /// noticed yet) can never write again, even on the instance that took it back.
    pub(crate) holder: String,
    pub(crate) until_ms: u64,
}

/// What a task runs: the tool call as the client made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskCall {
    pub(crate) tool: String,
    pub(crate) arguments: JsonObject,
    pub(crate) protocol_version: String,
    pub(crate) client_capabilities: ClientCapabilities,
    pub(crate) client_info: Option<Implementation>,
    /// The authenticated caller of the `tools/call`, handed to the handler's replays;
    /// replaced by the caller of each `tasks/update` that answers a question, so a
    /// replay runs with the scopes of whoever answered, as they are now.
    #[serde(default)]
    pub(crate) caller: Option<CallerRecord>,
}

/// A [`Caller`](crate::Caller) as a record keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CallerRecord {
    pub(crate) id: String,
    pub(crate) scopes: Vec<String>,
}

impl TaskRecord {
    pub(crate) fn new(
        id: String,
        owner: Option<String>,
        call: TaskCall,
        journal: Carried,
        ttl: Option<Duration>,
    ) -> Self {
        let now = now_ms();
        Self {
            id,
            version: 0,
            owner,
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms: ttl.map(|ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
            call,
            journal,
            input_requests: BTreeMap::new(),
            handler_keys: BTreeMap::new(),
            times_asked: BTreeMap::new(),
            input_responses: JsonObject::new(),
            result: None,
            error: None,
            lease: None,
            takeovers: 0,
        }
    }

    /// The task's id (128 random bits, hex).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Bumped by every write: [`TaskStore::replace`] compares it.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Sets the version a replace stores (see [`TaskStore::replace`]).
    pub(crate) fn set_version(&mut self, version: u64) {
        self.version = version;
    }

    /// Where the task stands.
    pub fn status(&self) -> TaskStatus {
        self.status
    }

    /// When the record may be forgotten; `None` keeps it until the store is dropped.
    pub fn expires_at(&self) -> Option<SystemTime> {
        let ttl = self.ttl_ms?;
        Some(UNIX_EPOCH + Duration::from_millis(self.created_at_ms.saturating_add(ttl)))
    }

    /// When some instance must act on the task next, while it is live: when the lease of
    /// the run executing a `working` task lapses ([`UNIX_EPOCH`] when no run holds it, as
    /// after a graceful hand-back), or when a live task reaches the end of its lifetime
    /// and is ended as expired, whichever comes first. `None` for a final task, or one
    /// waiting for answers with no end of life. A shared store indexes it to answer
    /// [`TaskStore::lapsed`].
    pub fn lease_expires_at(&self) -> Option<SystemTime> {
        let deadline = self.deadline();
        match self.status {
            TaskStatus::Working => {
                let until = UNIX_EPOCH + Duration::from_millis(self.lease.as_ref().map_or(0, |lease| lease.until_ms));
                Some(deadline.map_or(until, |deadline| deadline.min(until)))
            }
            TaskStatus::InputRequired => deadline,
            _ => None,
        }
    }

    /// When a live task is ended as expired: shortly before its record expires (a tenth
    /// of its lifetime, at most a minute), so that the record is still there to say so
    /// to a client polling it, and for the application's end hook to be told.
    fn deadline(&self) -> Option<SystemTime> {
        let ttl = self.ttl_ms?;
        let notice = u64::try_from(expiry_notice(Duration::from_millis(ttl)).as_millis()).unwrap_or(ttl);
        Some(UNIX_EPOCH + Duration::from_millis(self.created_at_ms.saturating_add(ttl - notice)))
    }

    /// Whether the task is live and past the end of its lifetime at `now`.
    pub(crate) fn past_deadline(&self, now: SystemTime) -> bool {
        !self.status.is_terminal() && self.deadline().is_some_and(|at| at <= now)
    }

    /// Whether some instance must act on the task by `now`: no run holds the lease of a
    /// `working` task (its runner died, or handed it back), or a live task reached the
    /// end of its lifetime.
    pub(crate) fn lease_lapsed(&self, now: SystemTime) -> bool {
        self.lease_expires_at().is_some_and(|at| at < now)
    }

    /// Whether `holder` holds this task's lease: the fence on every write of a run.
    pub(crate) fn is_held_by(&self, holder: &str) -> bool {
        !self.status.is_terminal() && self.lease.as_ref().is_some_and(|lease| lease.holder == holder)
    }

    /// The record as the next write stores it: one version up, stamped now.
    pub(crate) fn next(&self) -> Self {
        let mut next = self.clone();
        next.version += 1;
        next.updated_at_ms = now_ms().max(self.updated_at_ms);
        next
    }

    /// Opens the handler's questions. Keys must be unique over a task's lifetime, so a
    /// key asked again (its answer did not decode, or its question changed) goes out
    /// under a fresh key, `key#2`, `key#3`…, mapped back when it is answered.
    pub(crate) fn ask(&mut self, questions: &BTreeMap<String, InputRequest>) {
        self.input_requests.clear();
        self.handler_keys.clear();
        for (key, request) in questions {
            let times = self.times_asked.entry(key.clone()).or_default();
            *times += 1;
            let client_key = if *times == 1 { key.clone() } else { format!("{key}#{times}") };
            self.input_requests.insert(client_key.clone(), request.clone());
            self.handler_keys.insert(client_key, key.clone());
        }
    }

    /// Journals the answer to the open question `client_key`; `false` when no such
    /// question is open (unknown, answered already, or superseded).
    pub(crate) fn answer(&mut self, client_key: &str, answer: &Value) -> bool {
        let Some(key) = self.handler_keys.remove(client_key) else { return false };
        self.input_requests.remove(client_key);
        self.input_responses.insert(key, answer.clone());
        true
    }

    /// Puts the task in the final `status` and forgets what only a live task needs: its
    /// arguments, journal, questions, answers and lease (no run will replay it). The
    /// record is then kept for `keep` from now, never past its TTL from creation, and
    /// its `ttlMs` says so.
    pub(crate) fn finish(&mut self, status: TaskStatus, keep: Duration) {
        debug_assert!(status.is_terminal(), "{status:?} is not final");
        self.status = status;
        self.lease = None;
        self.call.arguments = JsonObject::new();
        self.journal = Carried::default();
        self.input_requests.clear();
        self.handler_keys.clear();
        self.times_asked.clear();
        self.input_responses.clear();
        let keep_ms = u64::try_from(keep.as_millis()).unwrap_or(u64::MAX);
        let until = now_ms().saturating_sub(self.created_at_ms).saturating_add(keep_ms);
        self.ttl_ms = Some(self.ttl_ms.map_or(until, |ttl| ttl.min(until)));
    }

    /// Whether the record is past its TTL at `now`: a store reads it as absent.
    pub(crate) fn is_expired(&self, now: SystemTime) -> bool {
        self.expires_at().is_some_and(|at| at <= now)
    }
}

/// How long before its record goes a live task with this ttl is ended as expired: a
/// tenth of the ttl, at most a minute.
pub(crate) fn expiry_notice(ttl: Duration) -> Duration {
    (ttl / 10).min(Duration::from_secs(60))
}

pub(crate) fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// A store failed (a network error, say). The request it served fails with `-32603`.
///
/// It keeps what caused it ([`source`](std::error::Error::source)), so a log that walks
/// the chain shows the store's own error whole. Equal when they say the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(Chained);

impl StoreError {
    /// An error with this description, for server logs.
    pub fn new(message: impl Into<String>) -> Self {
        Self(Chained::new(message))
    }

    /// An error with this description, caused by `source`.
    pub fn caused_by(message: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Chained::caused_by(message, source))
    }

    /// The same error, saying where it happened (an address, without its login).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn at(self, place: &str) -> Self {
        Self(self.0.with_context(place))
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task store: {}", self.0.message())
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.cause()
    }
}

/// Durable storage of task records, shared by every instance that serves the tasks.
///
/// Implementations must be strongly consistent per key: once [`create`](Self::create)
/// or a successful [`replace`](Self::replace) resolves, every [`get`](Self::get) sees it.
/// Records past [`TaskRecord::expires_at`] must read as absent; a replace may move that
/// time earlier (a finished task is kept for a shorter time), so read it from the new
/// record on every write.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new record.
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>>;

    /// The record with this id, unless it is unknown or expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>>;

    /// Replaces the stored record with `record` if the stored one is still at version
    /// `expected` (the runtime then gives `record` version `expected + 1`); `Ok(false)`
    /// when it moved on or is gone.
    fn replace(&self, expected: u64, record: TaskRecord) -> BoxFuture<'_, Result<bool, StoreError>>;

    /// Ids of at most `limit` records whose [`TaskRecord::lease_expires_at`] is before
    /// `now`: tasks whose runner died, or that reached the end of their lifetime. Every
    /// instance asks this now and then and takes the tasks over (or ends them); a record listed here may be taken already (the runtime's
    /// compare-and-set decides), so the answer need not be exact, only complete in time.
    fn lapsed(&self, now: SystemTime, limit: usize) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;

    /// Notes that the task worker `worker` is alive until `until` (a
    /// [`Worker`](crate::tasks::Worker) says so every few seconds). The default keeps
    /// nothing: a store that cannot be shared between processes has no workers to count.
    fn worker_alive(&self, worker: &str, until: SystemTime) -> BoxFuture<'_, Result<(), StoreError>> {
        let _ = (worker, until);
        Box::pin(std::future::ready(Ok(())))
    }

    /// How many workers said they are alive past `now`, or `None` when this store does
    /// not count them (the default). A front end whose tasks run on workers asks this when
    /// it starts, and warns when no worker is there to run them.
    fn workers(&self, now: SystemTime) -> BoxFuture<'_, Result<Option<usize>, StoreError>> {
        let _ = now;
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Notes that instances of the server named `server` keep tasks here until `until`, and
    /// answers the names of the other servers noted here and alive at `now`. Servers of two
    /// names on one store read each other's tasks (a task of a tool one of them lacks waits
    /// for an instance that serves it), which is a mistake a serving instance warns about.
    /// The default notes nothing and names none: a store that cannot be shared between
    /// processes has no other server.
    fn server_alive(
        &self,
        server: &str,
        now: SystemTime,
        until: SystemTime,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let _ = (server, now, until);
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
}

/// A store behind an `Arc` is the same store, so an application can keep a handle on it.
impl<T: TaskStore + ?Sized> TaskStore for std::sync::Arc<T> {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        (**self).create(record)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        (**self).get(id)
    }

    fn replace(&self, expected: u64, record: TaskRecord) -> BoxFuture<'_, Result<bool, StoreError>> {
        (**self).replace(expected, record)
    }

    fn lapsed(&self, now: SystemTime, limit: usize) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        (**self).lapsed(now, limit)
    }

    fn worker_alive(&self, worker: &str, until: SystemTime) -> BoxFuture<'_, Result<(), StoreError>> {
        (**self).worker_alive(worker, until)
    }

    fn workers(&self, now: SystemTime) -> BoxFuture<'_, Result<Option<usize>, StoreError>> {
        (**self).workers(now)
    }

    fn server_alive(
        &self,
        server: &str,
        now: SystemTime,
        until: SystemTime,
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        (**self).server_alive(server, now, until)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_store_error_keeps_its_cause_and_compares_by_what_it_says() {
        use std::error::Error as _;
        let cause = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let error = StoreError::caused_by("redis: refused", cause);
        assert_eq!(error.to_string(), "task store: redis: refused");
        assert!(error.source().is_some_and(<dyn std::error::Error>::is::<std::io::Error>));
        assert_eq!(error, StoreError::new("redis: refused"));
    }

    pub(crate) fn record(id: &str, ttl: Option<Duration>) -> TaskRecord {
        let call = TaskCall {
            tool: "t".into(),
            arguments: JsonObject::new(),
            protocol_version: "2026-07-28".into(),
            client_capabilities: ClientCapabilities::default(),
            client_info: None,
            caller: Some(CallerRecord { id: "alice".into(), scopes: vec!["read".into()] }),
        };
        TaskRecord::new(id.into(), None, call, Carried::default(), ttl)
    }

    #[test]
    fn a_key_asked_again_goes_out_under_a_fresh_key() {
        let question = InputRequest::ListRoots(JsonObject::new());
        let mut record = record("k", None);
        record.ask(&BTreeMap::from([("roots".to_owned(), question.clone())]));
        assert!(!record.answer("unknown", &Value::Null));
        assert!(record.answer("roots", &serde_json::json!({ "bad": true })));
        assert!(!record.answer("roots", &Value::Null), "answered already");
        record.ask(&BTreeMap::from([("roots".to_owned(), question)]));
        assert_eq!(record.input_requests.keys().collect::<Vec<_>>(), ["roots#2"]);
        assert!(record.answer("roots#2", &serde_json::json!({ "roots": [] })));
        assert_eq!(record.input_responses["roots"], serde_json::json!({ "roots": [] }));
    }

    #[test]
    fn a_finished_record_keeps_its_outcome_not_its_inputs_and_expires_sooner() {
        let mut task = record("f", Some(Duration::from_secs(3600)));
        task.call.arguments.insert("text".into(), Value::String("x".repeat(1000)));
        task.input_responses.insert("ok".into(), Value::Bool(true));
        task.result = Some(serde_json::json!({ "content": [] }));
        task.finish(TaskStatus::Completed, Duration::from_secs(60));
        assert_eq!(task.status, TaskStatus::Completed);
        assert!(task.call.arguments.is_empty() && task.input_responses.is_empty());
        assert!(task.result.is_some(), "the outcome stays");
        let ttl = task.ttl_ms.unwrap();
        assert!((60_000..61_000).contains(&ttl), "kept a minute from now: {ttl}");
        // Never longer than the TTL it had.
        let mut short = record("s", Some(Duration::from_millis(10)));
        short.finish(TaskStatus::Failed, Duration::from_secs(60));
        assert_eq!(short.ttl_ms, Some(10));
    }

    #[test]
    fn records_round_trip_as_json() {
        let original = record("j", Some(Duration::from_millis(1500)));
        let json = serde_json::to_value(&original).unwrap();
        assert_eq!(json["status"], "working");
        assert_eq!(json["ttlMs"], 1500);
        assert_eq!(serde_json::from_value::<TaskRecord>(json).unwrap(), original);
    }
}
