//! The client's own cost per multi round-trip flow: `client_load URL FLOWS` runs FLOWS
//! calls of `test_input_required_result_elicitation` one after another (each two requests:
//! the question, then the answer), after 200 uncounted ones, and prints the process's CPU
//! per flow. Beside the same run of another client (`tests/ts-client/mrtr-client-load.mjs`
//! runs the TypeScript SDK's), it says what the client costs an application that calls
//! servers that ask.
//!
//! ```text
//! everything --port 8931 &
//! client_load http://127.0.0.1:8931/mcp 5000
//! ```

use std::time::Instant;

use anyhow::{bail, Context as _};
use mcp_mrtr::client::{Answers, Client};
use mcp_mrtr::protocol::ElicitResult;
use serde_json::json;

/// The process's CPU time so far (user, system), in microseconds, from /proc/self/stat.
fn cpu_us() -> anyhow::Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name, which ends at the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')').context("no command name")?.1.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<u64> { Ok(fields.get(i).context("short stat")?.parse::<u64>()?) };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; 100 Hz.
    Ok((ticks(11)? * 10_000, ticks(12)? * 10_000))
}

// One thread, as a Node client has.
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let url = args.next().context("usage: client_load URL FLOWS")?;
    let flows: u64 = args.next().unwrap_or_else(|| "2000".into()).parse()?;
    let answers = Answers::new().forms(|_| async { Ok(ElicitResult::accept_as(&json!({"name": "Ada"}))?) });
    let client = Client::http(url).answers(answers).connect().await?;
    let flow = || async {
        let result = client.call_tool("test_input_required_result_elicitation", json!({})).await?;
        if result.all_text() != "Hello, Ada!" {
            bail!("unexpected result: {}", result.all_text());
        }
        Ok(())
    };
    for _ in 0..200 {
        flow().await?;
    }
    let (user, system) = cpu_us()?;
    let started = Instant::now();
    for _ in 0..flows {
        flow().await?;
    }
    let wall = started.elapsed();
    let (user_after, system_after) = cpu_us()?;
    let (user, system) = (user_after - user, system_after - system);
    let per_flow = (user + system) as f64 / flows as f64;
    println!(
        "{}",
        json!({"flows": flows, "cpu_user_us": user, "cpu_system_us": system, "cpu_us_per_flow": per_flow, "wall_ms": wall.as_millis()})
    );
    Ok(())
}
