//! The reports example as an AWS Lambda function (see `reports`): the server is built
//! once per container, before the first invocation, and every invocation is one request.
//!
//! ```text
//! cargo lambda watch             # serves it on http://127.0.0.1:9000/lambda-url/reports_lambda/mcp
//! reports_lambda --port 3003     # outside Lambda: the same server over HTTP on 127.0.0.1
//! ```

use mcp_mrtr::http::Http;
use mcp_mrtr::lambda::Lambda;

// One thread: a container answers one invocation at a time, and worker threads would only
// lengthen its cold start (serving runs on this task).
#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    // Lambda sends stderr to CloudWatch; without ANSI colours it stays readable there.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    // Redis at its first use: a container starts (and says so) while Redis is away.
    let server = mcp_mrtr_examples::reports::in_function_from_env()?;
    match std::env::args().nth(2).filter(|_| std::env::args().nth(1).as_deref() == Some("--port")) {
        Some(port) => server.serve(Http::bind(("127.0.0.1", port.parse::<u16>()?))).await?,
        None => server.serve(Lambda::new()).await?,
    }
    Ok(())
}
