//! A task worker of the reports example (see `reports`): the same server, sharing the
//! function's Redis, running the tasks the function creates and resumes. Runs until
//! SIGTERM or Ctrl-C, then hands its running tasks back for another worker.

use mcp_mrtr::tasks::Worker;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let server = mcp_mrtr_examples::reports::from_env().await?;
    server.serve(Worker::new()).await?;
    Ok(())
}
