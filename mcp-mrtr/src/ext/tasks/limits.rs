//! [`TaskLimits`]: how many tasks a server holds and runs, for how long, and how big.

use std::time::Duration;

use serde_json::json;

use crate::base::error::Error;
use crate::protocol::JsonObject;

/// The bounds that keep one client, or many, from filling a server with tasks (each a
/// total and a share per client, as for every pool of the server). Set them with
/// [`TaskConfig::limits`](crate::tasks::TaskConfig::limits).
///
/// Every bound is on by default, with a value meant for production:
///
/// | setting | default | applies to | at its caps |
/// |---|---|---|---|
/// | [`max_live_tasks`](Self::max_live_tasks) | 1,024 | tasks not yet completed, failed or cancelled, on this instance | ≈ 66 MiB of records (below) |
/// | [`max_live_tasks_per_client`](Self::max_live_tasks_per_client) | 16 | the same, per client | 1/64 of the total: 64 clients to fill it |
/// | [`creation_rate`](Self::creation_rate) | 16 at once, then 1/s | new tasks per client | a bucket of ≈ 100 B per client seen lately |
/// | [`max_arguments`](Self::max_arguments) | 64 KiB | a task's arguments, as the tool decodes them | bounds every record |
/// | [`max_runs`](Self::max_runs) | 128 | task handlers running at once on this instance; more wait their turn | 128 handler futures |
/// | [`run_timeout`](Self::run_timeout) | 30 min | one run of a task's handler; per tool with [`ToolRoute::task_timeout`](crate::ToolRoute::task_timeout) | a stuck run frees its slot |
/// | [`keep_finished`](Self::keep_finished) | 10 min | how long a finished task stays readable | ≈ 600 small records per client |
///
/// A *client* is the authenticated [`Caller`](crate::Caller) when there is one, else the
/// client's address (the TCP peer, or the one a trusted proxy forwarded, see
/// [`HttpConfig::trust_forwarded_for`](crate::http::HttpConfig::trust_forwarded_for); IPv6 by its
/// /64). Behind a proxy whose address is not replaced, every client shares one address and
/// the per-client bounds act as totals. On stdio there is one client.
///
/// **Per instance.** The live-task counts are kept by the instance that created each
/// task, not in the task store: counting in a shared store would cost a store round trip
/// (and a per-client index) on every creation and every end. With several instances
/// behind a load balancer the totals add up (n instances hold at most n × the cap). A
/// task that ends on another instance (after a takeover) is forgotten here when this
/// instance reads it in a final state, or, when a client is refused, by a check against
/// the store of the tasks counted against it (at most once a second), or when its
/// record expires.
///
/// **Refused, not evicted.** When a client holds its share, or the instance holds the
/// total, a new task is refused with a JSON-RPC error (`-32603`, `data.limit` naming the
/// bound) rather than ending someone else's task to make room, as the listen streams'
/// pool does: a task is work a client was promised, possibly half done with side effects
/// journaled, and ending it would lose that. Fairness comes from the share: one client
/// holds at most 1/64 of the total by default.
///
/// **Memory at the caps** (the default [`MemoryTaskStore`](crate::tasks::MemoryTaskStore)): a
/// live record holds at most 64 KiB of arguments, a status message of at most 1 KiB and
/// its journal (answers and `once!` results), so 1,024 live tasks take about 66 MiB plus
/// their journals. A finished record drops its arguments and journal and keeps its
/// outcome: a client starting tasks at its full rate keeps about 600 finished records (1
/// per second for 10 minutes) of about 1 KiB plus the tools' results.
///
/// ```
/// use std::time::Duration;
///
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::testing::TestClient;
/// use mcp_mrtr::tasks::{TaskConfig, TaskLimits};
///
/// /// Rebuilds the search index: slow, so always a task.
/// #[tool(task = "required")]
/// async fn reindex() -> Result<String, ToolError> {
///     tokio::time::sleep(Duration::from_secs(3600)).await;
///     Ok("reindexed".into())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let limits = TaskLimits::default().max_live_tasks_per_client(1).run_timeout(Some(Duration::from_secs(7200)));
/// let client = TestClient::new(Server::new("search", "1.0.0").tasks(TaskConfig::default().limits(limits)).tool(reindex));
/// let first = client.call_tool("reindex", serde_json::json!({})).start().await;
/// assert!(first.task_id().is_some());
/// // The first still runs: this client holds its share.
/// let second = client.call_tool("reindex", serde_json::json!({})).start().await;
/// assert_eq!(second.error().unwrap().data().unwrap()["limit"], "liveTasksPerClient");
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskLimits {
    pub(crate) max_live: usize,
    pub(crate) max_live_per_client: usize,
    pub(crate) creations_per_second: f64,
    pub(crate) creation_burst: u32,
    pub(crate) max_arguments: usize,
    pub(crate) max_runs: usize,
    pub(crate) run_timeout: Option<Duration>,
    pub(crate) keep_finished: Duration,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            max_live: 1_024,
            max_live_per_client: 16,
            creations_per_second: 1.0,
            creation_burst: 16,
            max_arguments: 64 * 1024,
            max_runs: 128,
            run_timeout: Some(Duration::from_secs(30 * 60)),
            keep_finished: Duration::from_secs(10 * 60),
        }
    }
}

impl TaskLimits {
    /// The most tasks not yet in a final state (`working` or `input_required`) this
    /// instance holds, from every client. Past it a new task is refused (`data.limit`:
    /// `"liveTasks"`). Default 1,024: about 66 MiB of records at the argument cap, and a
    /// count well above what one instance's handlers can work through, so it is only
    /// reached by many clients holding tasks at once.
    pub fn max_live_tasks(mut self, max: usize) -> Self {
        self.max_live = max.max(1);
        self
    }

    /// The most tasks not yet in a final state one client holds on this instance. Past
    /// it the client's new task is refused (`data.limit`: `"liveTasksPerClient"`) until
    /// one of its tasks ends or it cancels one. Default 16: more than an agent runs side
    /// by side, and 1/64 of the total, so one client (or a few) cannot fill the server.
    pub fn max_live_tasks_per_client(mut self, max: usize) -> Self {
        self.max_live_per_client = max.max(1);
        self
    }

    /// How fast one client may create tasks: `burst` at once, then `per_second` on
    /// average (a token bucket). Past it a new task is refused (`data.limit`:
    /// `"taskCreationRate"`, with `retryAfterMs`). Default a burst of 16 (a client may
    /// start its whole share at once), then 1 per second. It bounds what a client can
    /// churn through short tasks, which the live caps do not: finished records stay for
    /// [`keep_finished`](Self::keep_finished), so a client holds at most about
    /// `burst + per_second × keep_finished` of them (616 by default).
    pub fn creation_rate(mut self, per_second: f64, burst: u32) -> Self {
        self.creations_per_second = per_second.max(0.0);
        self.creation_burst = burst.max(1);
        self
    }

    /// The most bytes a task's arguments may take as JSON, counted after dropping the
    /// fields the tool's argument type does not read (only those are stored). A larger
    /// task is refused when it is created (`-32602`, `data.limit`: `"taskArguments"`).
    /// Default 64 KiB: pages of text or a sizeable JSON document; larger inputs belong
    /// in a resource the tool reads. Every live record is bounded by it.
    pub fn max_arguments(mut self, bytes: usize) -> Self {
        self.max_arguments = bytes;
        self
    }

    /// The most task handlers running at once on this instance. A run past it waits
    /// for a slot, in the order the runs came (the task stays `working`), rather than
    /// being refused: every run belongs to a task already admitted (the live caps bound
    /// the queue), and refusing a replay after a client answered, or a takeover, would
    /// fail work the client has invested in. Task runs do not take the HTTP transport's
    /// handler slots ([`HttpLimits::max_handlers`](crate::http::HttpLimits::max_handlers)), so requests
    /// are served whatever tasks do. Default 128: with the per-client share of 16, it
    /// takes 8 clients at their full share to make runs wait.
    pub fn max_runs(mut self, max: usize) -> Self {
        self.max_runs = max.max(1);
        self
    }

    /// How long one run of a task's handler may take (from when it gets a slot until
    /// it completes, fails or waits for answers; time waiting for a person is not
    /// counted). Past it the handler is dropped and the task fails with `-32603` "the
    /// task timed out after …". `None` lets runs go on until cancelled. Default 30
    /// minutes: long enough for a report or a build, short enough that a stuck handler
    /// gives back its slot and its client learns why well within the record's default
    /// one-hour TTL. A tool that is known to take longer sets its own with
    /// [`ToolRoute::task_timeout`](crate::ToolRoute::task_timeout).
    pub fn run_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.run_timeout = timeout;
        self
    }

    /// How long a task stays readable once it completed, failed or was cancelled
    /// (never longer than [`TaskConfig::ttl`](crate::tasks::TaskConfig::ttl) from its
    /// creation); its `ttlMs` is shortened to match. Default 10 minutes: a client polls
    /// every 500 ms and reads the outcome within a second, and one that lost its
    /// connection has minutes to come back. Finished records keep no arguments or
    /// journal, only the outcome.
    pub fn keep_finished(mut self, keep: Duration) -> Self {
        self.keep_finished = keep;
        self
    }
}

/// `Err(-32602)` naming the cap when `arguments` (as kept) take more than
/// [`TaskLimits::max_arguments`] bytes of JSON.
pub(crate) fn check_arguments(limits: &TaskLimits, arguments: &JsonObject) -> Result<(), Error> {
    let size = crate::base::kept_arguments::json_size(arguments);
    if size <= limits.max_arguments {
        return Ok(());
    }
    Err(Error::invalid_params(format!(
        "the arguments of this task take {size} bytes (counting only the fields the tool reads), more than the \
         {} a task may keep; send less, or pass large inputs by reference (a resource the tool reads)",
        limits.max_arguments
    ))
    .with_data(json!({ "limit": "taskArguments", "max": limits.max_arguments, "size": size })))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::base::kept_arguments::json_size;

    fn object(value: Value) -> JsonObject {
        let Value::Object(object) = value else { panic!("not an object") };
        object
    }

    #[test]
    fn arguments_over_the_cap_are_refused_naming_it() {
        let limits = TaskLimits::default().max_arguments(64);
        let small = object(json!({ "label": "x" }));
        assert!(check_arguments(&limits, &small).is_ok());
        let large = object(json!({ "label": "x".repeat(100) }));
        let refused = check_arguments(&limits, &large).unwrap_err();
        assert_eq!(refused.code(), crate::base::error::ErrorCode::INVALID_PARAMS);
        assert_eq!(refused.data().unwrap()["limit"], "taskArguments");
        assert_eq!(refused.data().unwrap()["size"], json_size(&large));
        assert!(refused.message().contains("more than the 64 a task may keep"), "{}", refused.message());
    }
}
