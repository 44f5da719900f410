//! Soak and chaos harness: starts `everything` instances sharing a fresh key ring and a
//! `redis-server` of their own on 127.0.0.1, with a front end whose tasks run on task
//! workers (`everything --task-worker`), drives a mix of every kind of operation for
//! `--seconds` while faults are injected on a seeded schedule, then checks the history
//! of every operation (and the effects the tasks' steps left in `outbox.jsonl`) and
//! prints a summary.
//!
//! ```text
//! cargo build -p mcp-mrtr-examples --bins
//! target/debug/soak --seconds 60 --instances 3            # faults on
//! target/debug/soak --seconds 60 --faults none            # the baseline
//! target/debug/soak --seconds 60 --self-test all          # shows each check can fail
//! ```
//!
//! Exit code: 0 when nothing was lost, duplicated, wrong or hung (failures the faults
//! explain, and losses an emptied Redis makes unavoidable, are reported, not fatal); 1
//! otherwise; 2 when the run could not start. `history.jsonl`, `samples.jsonl`,
//! `outbox.jsonl` and `summary.txt` are written to `--out` (default: a folder in the temp
//! dir).

use std::process::ExitCode;

use mcp_mrtr_examples::soak;

#[tokio::main]
async fn main() -> ExitCode {
    let options = match soak::Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("{error:#}");
            return ExitCode::from(2);
        }
    };
    match soak::run(options).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("soak: {error:#}");
            ExitCode::from(2)
        }
    }
}
