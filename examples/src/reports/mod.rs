//! The reports example (serverless): a server made to run as an AWS Lambda function, with
//! its task work on workers apart from it.
//!
//! `monthly_report {team, month}` asks what the report covers (a form), reserves a report
//! number (a `once!` step: a real service would insert a row), then continues as a task:
//! it compiles the report, asks whether to publish it, and publishes it once (`once!`).
//! A client that declares tasks gets a task, which a worker runs; any other gets the same
//! questions as rounds of the call, each answered by whichever container AWS picks.
//!
//! Each side effect returns a receipt that names the process and the moment it was taken,
//! so a client (and the tests) can see that no round, container or worker took a step
//! twice: a replay returns the receipt it journaled. Publishing sends the report (a real
//! service would mail it) and waits a moment for the mail service to confirm; with an
//! outbox (`REPORTS_OUTBOX` names the file), each sending is also appended to it, outside
//! the process, with the step's idempotency key (`Ctx::step_key`), as a mail service would
//! see it. A worker stopped by a deploy while sending finishes the sending before it hands
//! the task back.
//!
//! ```text
//! reports_lambda      # the function: run by the Lambda runtime (cargo lambda watch, or AWS)
//! reports_lambda --port 3003   # the same server over HTTP on 127.0.0.1, outside Lambda
//! reports_worker      # a task worker: runs the tasks the function creates
//! ```
//!
//! Both read the same environment: `MCP_MRTR_STATE_KEYS` (shared by every container), and
//! `MCP_MRTR_REDIS_URL` (or a cluster's, a Sentinel's: see `everything::from_env`) for the
//! single-use guard and the task store they share.

mod function;

use anyhow::Context as _;
use mcp_mrtr::prelude::*;
use mcp_mrtr::redis::RedisConfig;
use mcp_mrtr::request_state::StateConfig;
use mcp_mrtr::tasks::TaskConfig;

pub use self::function::{monthly_report, sending_to, server, Outbox, Publish, Report, Sections};
use crate::everything::tasks::receipt;

/// The server with what its containers and workers share, from the environment: the
/// request-state keys (`MCP_MRTR_STATE_KEYS`), the single-use guard and the task store in
/// Redis (`MCP_MRTR_REDIS_*`), and task work left to workers. Without Redis, everything
/// stays in this process (one instance, whose tasks wait for a worker in this process,
/// which there is none of: the log says so).
pub async fn from_env() -> anyhow::Result<Server> {
    // The default reads `MCP_MRTR_STATE_KEYS` when serving starts.
    configured(StateConfig::default(), crate::everything::redis_config()?).await
}

/// [`from_env`] for a function's container: Redis is connected at its first use, so a
/// container whose Redis is away at start still starts (and says so), serves what needs
/// no Redis, and connects when it can, rather than failing every invocation.
pub fn in_function_from_env() -> anyhow::Result<Server> {
    let redis = match crate::everything::redis_config()? {
        Some(config) => Some(mcp_mrtr::redis::Redis::connect_lazily(config).context("Redis (MCP_MRTR_REDIS_*)")?),
        None => None,
    };
    Ok(sharing(StateConfig::default(), redis.as_ref()))
}

/// The server with these request-state settings and this Redis, its task work left to
/// workers.
pub async fn configured(state: StateConfig, redis: Option<RedisConfig>) -> anyhow::Result<Server> {
    let redis = match redis {
        Some(config) => Some(mcp_mrtr::redis::Redis::connect(config).await.context("Redis (MCP_MRTR_REDIS_*)")?),
        None => None,
    };
    Ok(sharing(state, redis.as_ref()))
}

/// The server with these request-state settings, sharing `redis` (when given) for its guard
/// and task store, its task work left to workers.
pub fn sharing(state: StateConfig, redis: Option<&mcp_mrtr::redis::Redis>) -> Server {
    let tasks = TaskConfig::default().run_on_workers(true);
    match redis {
        Some(redis) => {
            server().request_state(state.single_use(redis.state_guard())).tasks(tasks.store(redis.task_store()))
        }
        None => server().request_state(state).tasks(tasks),
    }
}
