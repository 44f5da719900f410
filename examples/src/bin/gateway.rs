//! A gateway: other MCP servers' tools, prompts and resources behind one endpoint, the
//! questions they ask halfway asked of the gateway's caller in either era.
//!
//! ```text
//! gateway --port 3002 --mount weather_=http://127.0.0.1:3001/mcp --mount "notes_=notes --stdio"
//! gateway --mount "=everything --stdio"        # over stdio, one upstream, names as they are
//! ```
//!
//! Each `--mount PREFIX=UPSTREAM` mounts a server: a URL (`http://`, `https://`), or a
//! command line run as a child over stdio (split on spaces; no shell). A server that speaks
//! only 2025-11-25 is spoken to in a session (over HTTP); `--mount-2025 PREFIX=URL` speaks
//! to one that speaks both that way, to try it. The gateway serves over stdio, or over
//! Streamable HTTP on 127.0.0.1 with `--port`.
//!
//! ```text
//! gateway --port 3000 --mount =http://127.0.0.1:3001/mcp --mount-2025 old_=http://127.0.0.1:3001/mcp \
//!         --mount rmcp_=http://127.0.0.1:3003/mcp
//! ```

use anyhow::{bail, Context as _};
use mcp_mrtr::catalog::Subscriptions;
use mcp_mrtr::client::Client;
use mcp_mrtr::http::Http;
use mcp_mrtr::mount::Mount;
use mcp_mrtr::stdio::Stdio;
use mcp_mrtr::Server;

const USAGE: &str = "usage: gateway [--port PORT] --mount PREFIX=UPSTREAM [--mount …] [--mount-2025 PREFIX=URL …]   \
                     (UPSTREAM: a URL, or a command line)";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let mut args = std::env::args().skip(1);
    // Each mount, and whether it is spoken to in a 2025-11-25 session.
    let (mut port, mut mounts) = (None, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = Some(args.next().context(USAGE)?.parse::<u16>().context("--port: not a port")?),
            "--mount" => mounts.push((args.next().context(USAGE)?, false)),
            "--mount-2025" => mounts.push((args.next().context(USAGE)?, true)),
            _ => bail!("{USAGE}"),
        }
    }
    if mounts.is_empty() {
        bail!("{USAGE}");
    }
    // Its listeners hear of the upstreams' list changes, which the mounts follow, and its
    // callers of the upstreams' log messages, which the mounts relay.
    let mut server =
        Server::new("gateway", env!("CARGO_PKG_VERSION")).subscriptions(Subscriptions::default()).logging(true);
    for (mount, legacy) in &mounts {
        let (prefix, upstream) = mount.split_once('=').context("--mount: PREFIX=UPSTREAM")?;
        let client = connect(upstream, *legacy).await.with_context(|| format!("connecting to {upstream}"))?;
        let mounted = Mount::new(client).prefix(prefix).load().await.with_context(|| format!("mounting {upstream}"))?;
        tracing::info!(prefix, upstream, ?mounted, "mounted");
        server = server.mount(mounted);
    }
    match port {
        Some(port) => server.serve(Http::bind(("127.0.0.1", port))).await?,
        None => server.serve(Stdio::new()).await?,
    }
    Ok(())
}

async fn connect(upstream: &str, legacy: bool) -> Result<Client, mcp_mrtr::client::ClientError> {
    let connect = if upstream.starts_with("http://") || upstream.starts_with("https://") {
        Client::http(upstream)
    } else {
        let mut words = upstream.split_whitespace();
        let mut command = std::process::Command::new(words.next().unwrap_or_default());
        command.args(words);
        Client::stdio(command)
    };
    // Every kind of question: the mount asks each of the caller whose call asked it.
    let connect = connect.relaying_questions();
    if legacy {
        return connect.versions(["2025-11-25"]).connect().await;
    }
    connect.connect().await
}
