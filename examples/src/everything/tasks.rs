//! The tasks fixture (SEP-2663) and the custom-header tool (SEP-2243): the tools the
//! `tasks-*` and `http-custom-header-server-validation` scenarios call, written with the
//! same macros and `ask!`s as the multi-round ones. Whether a call runs in rounds or as
//! a task is the client's declaration and the tool's `task = …`, not the body's. Two are
//! the soak's: `test_durable_task` (receipts a takeover must replay) and `test_task_steps`
//! (`once!` steps whose effects leave the process, for task workers stopped mid-step).

use std::time::Duration;

use mcp_mrtr::prelude::*;
use mcp_mrtr::Error;
use serde_json::json;

/// A person's name.
#[derive(Deserialize, JsonSchema)]
pub struct Name {
    name: String,
}

/// A yes/no confirmation.
#[derive(Deserialize, JsonSchema)]
pub struct ConfirmDelete {
    confirm: bool,
}

/// Greets someone by name. Never a task.
#[tool]
pub async fn greet(
    /// Who to greet.
    name: String,
) -> Result<String, ToolError> {
    Ok(format!("Hello, {name}!"))
}

/// Works for `seconds`, reporting progress each second, then says it is done. With a
/// client that declares tasks it becomes a task as soon as it starts waiting.
#[tool(task = "optional")]
pub async fn slow_compute(
    ctx: &Ctx,
    /// How long to work, in seconds (at most an hour).
    seconds: f64,
    /// A name for the job.
    label: Option<String>,
) -> Result<String, ToolError> {
    let label = label.unwrap_or_else(|| "slow_compute".into());
    let total = duration(seconds, 3600)?;
    work(ctx, total, Duration::from_secs(1), |done| {
        let message = format!("{label}: {:.1}s of {:.1}s", done.as_secs_f64(), total.as_secs_f64());
        (done.as_secs_f64(), Some(total.as_secs_f64()), message)
    })
    .await;
    Ok(format!("{label} finished after {seconds}s"))
}

/// `seconds` as a duration, refused past `max`.
fn duration(seconds: f64, max: u64) -> Result<Duration, ToolError> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| d.as_secs() <= max)
        .ok_or_else(|| ToolError::invalid_params(format!("seconds must be between 0 and {max}")))
}

/// Works for `total` in steps of `every`, reporting `progress(done)` (progress, total,
/// message) after each.
async fn work(ctx: &Ctx, total: Duration, every: Duration, progress: impl Fn(Duration) -> (f64, Option<f64>, String)) {
    let mut done = Duration::ZERO;
    while done < total {
        let step = total.saturating_sub(done).min(every);
        tokio::time::sleep(step).await;
        done += step;
        let (value, of, message) = progress(done);
        let report = ctx.progress(value).message(message);
        match of {
            Some(total) => report.of(total).await,
            None => report.await,
        }
    }
}

/// Runs for about a second and fails as a tool error (`isError`): only as a task.
#[tool(task = "required")]
pub async fn failing_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::new("the job failed after one second, as it always does"))
}

/// Runs briefly and fails with a JSON-RPC error: the task ends `failed`.
#[tool(task = "optional")]
pub async fn protocol_error_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Err(ToolError::protocol(Error::internal("the job hit an internal error")))
}

/// Asks, inside a task, whether to delete `filename` (key `confirm`).
#[tool(task = "required", destructive)]
pub async fn confirm_delete(
    ctx: &Ctx,
    /// The file to delete.
    filename: String,
) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let confirm: ConfirmDelete = ask!(elicit format!("Delete {filename}?"))?;
    Ok(if confirm.confirm { format!("Deleted {filename}") } else { format!("Kept {filename}") })
}

/// Asks two questions at once inside a task (keys `input-a` and `input-b`).
#[tool(task = "required")]
pub async fn multi_input(ctx: &Ctx) -> Result<String, ToolError> {
    ctx.continue_as_task().await;
    let (first, second) =
        join!(ask!(key = "input-a", elicit "Who reviews first?"), ask!(key = "input-b", elicit "Who reviews second?"),);
    let (first, second): (Name, Name) = (first?, second?);
    Ok(format!("Reviewers: {} then {}", first.name, second.name))
}

/// Asks the user's name in an ordinary round (key `user_name`), then continues as a
/// task that greets them.
#[tool(task = "required")]
pub async fn test_tool_with_task(ctx: &Ctx) -> Result<String, ToolError> {
    let user_name: Name = ask!(elicit "What is your name?")?;
    ctx.continue_as_task().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(format!("Hello, {}! (async)", user_name.name))
}

/// Whether the person approves (the `approve` question of `test_durable_task`).
#[derive(Deserialize, JsonSchema)]
pub struct Approval {
    approve: bool,
}

/// A side effect's receipt: which process took the step, and a number no other step shares.
pub(crate) fn receipt(step: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{step}@pid{}#{nanos}", std::process::id())
}

/// A task that survives its instance: opens a ticket (a `once!` step), asks for
/// approval, starts work (a `once!` step), works for `seconds`, ships (a last `once!`
/// step), and reports the receipts of the three steps. Its status message shows each receipt as it is taken, so a client can
/// check that an instance taking the task over replayed the steps instead of taking them
/// again (their receipts name the process that took them).
#[tool(task = "required")]
pub async fn test_durable_task(
    ctx: &Ctx,
    /// How long to work after the approval, in seconds (at most 600).
    seconds: f64,
) -> Result<String, ToolError> {
    let total = duration(seconds, 600)?;
    ctx.continue_as_task().await;
    let ticket = once!(receipt("ticket"));
    ctx.progress(1.0).message(format!("opened {ticket}; waiting for approval")).await;
    let approval: Approval = ask!(elicit format!("Approve {ticket}?"))?;
    if !approval.approve {
        return Ok(format!("{ticket} rejected"));
    }
    let work = once!(receipt("work"));
    self::work(ctx, total, Duration::from_millis(250), |done| {
        let message = format!("{ticket} {work} working, {:.2}s of {:.2}s", done.as_secs_f64(), total.as_secs_f64());
        (2.0, None, message)
    })
    .await;
    let shipped = once!(receipt("shipped"));
    Ok(format!("{ticket} {work} {shipped}"))
}

/// Whether to go ahead (the question `test_task_steps` asks before it becomes a task).
#[derive(Deserialize, JsonSchema)]
pub struct Proceed {
    ok: bool,
}

/// Where the steps of `test_task_steps` send their effects, outside every process: a
/// file each step appends a JSON line to (one `write`, so lines never interleave) when it
/// starts and when the service confirms it, keyed by the step's idempotency key. The soak
/// reads it to count how often each step was taken, and by which process.
pub const OUTBOX: &str = "EVERYTHING_OUTBOX";

/// Asks whether to go ahead (key `ok`), continues as a task, then takes three `once!`
/// steps in turn (`reserved`, `charged`, `shipped`), each with an effect outside the
/// process: it hands the effect to a service (the `EVERYTHING_OUTBOX` file, when set) under
/// the step's idempotency key (`Ctx::step_key`), then waits `confirm_ms` for the service to
/// confirm it. A process stopped (SIGTERM) inside a step finishes it first; only one
/// killed inside a step leaves it for the next run to take again. The result names the
/// three receipts (`step@pid…#…`), one per step, as the runs that took them returned them.
#[tool(task = "required")]
pub async fn test_task_steps(
    ctx: &Ctx,
    /// A name for the call, written with each effect.
    call: String,
    /// How long the service takes to confirm each step, in milliseconds (default 200, at most 5000).
    confirm_ms: Option<u64>,
) -> Result<String, ToolError> {
    let confirm = Duration::from_millis(confirm_ms.unwrap_or(200).min(5_000));
    let proceed: Proceed = ask!(elicit format!("Take the steps of {call}?"))?;
    if !proceed.ok {
        return Ok(format!("call {call}: not started"));
    }
    ctx.continue_as_task().await;
    let reserved = once!(effect(&ctx.step_key("reserved")?, &call, "reserved", confirm).await?);
    let charged = once!(effect(&ctx.step_key("charged")?, &call, "charged", confirm).await?);
    let shipped = once!(effect(&ctx.step_key("shipped")?, &call, "shipped", confirm).await?);
    Ok(format!("call {call}: {reserved} {charged} {shipped}"))
}

/// One step's effect: handed to the service as `key`, confirmed after `confirm`. Its receipt.
async fn effect(key: &str, call: &str, step: &str, confirm: Duration) -> Result<String, ToolError> {
    let receipt = receipt(step);
    let outbox = std::env::var_os(OUTBOX);
    let pid = std::process::id();
    if let Some(outbox) = &outbox {
        let line = json!({ "sent": receipt, "key": key, "call": call, "step": step, "pid": pid, "ms": unix_ms() });
        append(outbox, line).await?;
    }
    tokio::time::sleep(confirm).await;
    if let Some(outbox) = &outbox {
        append(outbox, json!({ "confirmed": receipt, "ms": unix_ms() })).await?;
    }
    Ok(receipt)
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis()
}

/// Appends `line` to `path` in one write, off the runtime (handlers must not block it).
async fn append(path: &std::ffi::OsStr, line: serde_json::Value) -> Result<(), ToolError> {
    let (path, line) = (path.to_owned(), format!("{line}\n"));
    let write = move || {
        use std::io::Write as _;
        std::fs::OpenOptions::new().create(true).append(true).open(path)?.write_all(line.as_bytes())
    };
    let written = tokio::task::spawn_blocking(write).await.map_err(std::io::Error::other).and_then(|w| w);
    written.map_err(|error| ToolError::new(format!("the service did not take the step: {error}")))
}

/// Echoes `value`, which is mirrored into the `Mcp-Param-Value` header.
#[tool(read_only)]
pub async fn test_custom_header(
    /// Any text; clients send it as the `Mcp-Param-Value` header too.
    #[mcp(header = "Value")]
    value: String,
) -> Result<String, ToolError> {
    Ok(format!("Received {value}"))
}

/// Registers the fixture.
pub fn register(server: Server) -> Server {
    server.tools(tools![
        greet,
        slow_compute,
        failing_job,
        protocol_error_job,
        confirm_delete,
        multi_input,
        test_tool_with_task,
        test_durable_task,
        test_task_steps,
        test_custom_header,
    ])
}
