//! The conformance fixture server.
//!
//! ```text
//! everything --port 3000     # Streamable HTTP on http://127.0.0.1:3000/mcp
//! everything --stdio         # newline-delimited JSON-RPC on stdin/stdout
//! everything --task-worker   # runs the tasks of the instances sharing its Redis, takes no request
//! everything                 # run by the AWS Lambda runtime (cargo lambda watch): a function
//! ```

use anyhow::{bail, Context as _};
use mcp_mrtr::http::{Http, ListenerLimits};
use mcp_mrtr::lambda::Lambda;
use mcp_mrtr::stdio::Stdio;
use mcp_mrtr::tasks::Worker;

const USAGE: &str = "usage: everything --port N | everything --stdio | everything --task-worker

  --port N        serve Streamable HTTP on http://127.0.0.1:N/mcp
  --stdio         serve newline-delimited JSON-RPC on stdin/stdout
  --task-worker   run tasks from the task store in Redis (created or left by instances
                  sharing it), and take no request, until SIGTERM or Ctrl-C
  --help          print this and exit
  (no argument, with AWS_LAMBDA_RUNTIME_API set: serve as an AWS Lambda function)

environment:
  MCP_MRTR_STATE_KEYS     the key ring sealing request states (instances share it)
  MCP_MRTR_REDIS_URL      redis://host:port/ (rediss:// for TLS): single-use states,
                          tasks and list changes in Redis, shared by every instance
  MCP_MRTR_REDIS_CA       PEM file of the CA a TLS Redis's certificate is checked
                          against (default: the system's roots)
  MCP_MRTR_REDIS_CERT     PEM files of a client certificate and its key, for a TLS
  MCP_MRTR_REDIS_KEY      Redis that requires one
  MCP_MRTR_REDIS_SENTINELS  host:port,...: Redis behind these sentinels instead, whose
  MCP_MRTR_REDIS_MASTER     service (default mymaster) the stores follow across failovers
  MCP_MRTR_REDIS_CLUSTER  redis://host:port,...: a Redis Cluster's seed nodes instead
  MCP_MRTR_TASK_LEASE_MS  how long a running task's lease lasts (default 10000)
  MCP_MRTR_TASKS_ON_WORKERS  1: run no task here, leave them to task workers (a front end)
  MCP_MRTR_TASK_RATE      tasks one client may start per second, and hold live at once
                          (for load runs; default 1/s after a burst of 16, 16 live)
  MCP_MRTR_MAX_LISTENERS  listen streams held at once (for load runs; default 1024)
  MCP_MRTR_BENCH_ROUND_TRIP  host:port of a Redis: tasks in memory, one PING to it
                          before each store call (measuring the wait; not for use)
  EVERYTHING_OUTBOX       a file test_task_steps appends the effects of its steps to";

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Over stdio one client: one thread serves it best (the guide's "One thread for stdio").
    let mut runtime = match args.first().map(String::as_str) {
        Some("--stdio") => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    runtime.enable_all().build()?.block_on(serve(&args))
}

async fn serve(args: &[String]) -> anyhow::Result<()> {
    let server = mcp_mrtr_examples::everything::from_env(mcp_mrtr_examples::everything::server()).await?;
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["--stdio"] => server.serve(Stdio::new()).await?,
        ["--task-worker"] => server.serve(Worker::new()).await?,
        ["--port", port] => {
            let port: u16 = port.parse().with_context(|| format!("--port takes a number, got {port:?}"))?;
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            let mut http = Http::listener(listener);
            if let Some(streams) = mcp_mrtr_examples::everything::max_listeners()? {
                http = http.limits(ListenerLimits::default().max_connections(streams + 1024));
            }
            server.serve(http).await?;
        }
        // As a Lambda function (`cargo lambda watch`): the conformance suite through the runtime.
        [] if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() => server.serve(Lambda::new()).await?,
        ["--help" | "-h"] => println!("{USAGE}"),
        _ => bail!("{USAGE}"),
    }
    Ok(())
}
