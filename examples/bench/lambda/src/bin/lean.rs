//! The reports function as the deploy guide builds it for the smallest start: the
//! `lambda` feature alone (no Redis: its stores stay in the process), a `Targets` log filter
//! rather than `EnvFilter`'s regex engine, and a current-thread runtime. Its code is the
//! reports example's own (`examples/src/reports/function.rs`), included here.

#[path = "../../../../src/reports/function.rs"]
mod reports;

/// What the example's `everything::tasks::receipt` gives: the step, the process, the moment.
fn receipt(step: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{step}@pid{}#{nanos}", std::process::id())
}

use mcp_mrtr::lambda::Lambda;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::prelude::*;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false))
        .with(Targets::new().with_default(LevelFilter::INFO))
        .init();
    reports::server().serve(Lambda::new()).await?;
    Ok(())
}
