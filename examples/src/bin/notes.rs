//! The team-notes example: Streamable HTTP on 127.0.0.1 behind bearer auth.
//!
//! ```text
//! notes --port 3000 --dev                      # serve http://127.0.0.1:3000/mcp (and /health)
//! notes --port 3000 --dev --mint-token alice   # print a development token for alice
//! ```
//!
//! Without `--dev`, `NOTES_JWT_SECRET` must name a secret of your own.

use anyhow::{bail, Context as _};
use mcp_mrtr_examples::notes::auth::{self, AuthConfig, DEV_SCOPES};

const USAGE: &str = "usage: notes --port N [--dev] [--mint-token USER]

Serves team notes on http://127.0.0.1:N/mcp; every request needs a bearer token.
  --port N            the port (the token audience is http://127.0.0.1:N/mcp)
  --dev               sign and verify with the development secret published in this
                      repository when NOTES_JWT_SECRET is unset (a laptop only: anyone
                      can mint tokens with it)
  --mint-token USER   print a development token for USER (scopes: notes:read notes:write) and exit
Environment: NOTES_ISSUER, NOTES_JWT_SECRET (HS256, 32+ bytes; required without --dev), NOTES_RESOURCE.";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let dev = args.iter().any(|arg| arg == "--dev");
    args.retain(|arg| arg != "--dev");
    let (port, mint_for) = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["--help" | "-h"] => {
            println!("{USAGE}");
            return Ok(());
        }
        ["--port", port] => (port.to_string(), None),
        ["--port", port, "--mint-token", user] | ["--mint-token", user, "--port", port] => {
            (port.to_string(), Some(user.to_string()))
        }
        _ => bail!("{USAGE}"),
    };
    let port: u16 = port.parse().with_context(|| format!("--port takes a number, got {port:?}"))?;
    let config = if dev { AuthConfig::dev_from_env(port) } else { AuthConfig::from_env(port)? };
    if let Some(user) = mint_for {
        println!("{}", config.mint(&user, DEV_SCOPES)?);
        return Ok(());
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let app = auth::app(&config)?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("notes: serving {} (bearer token required; /health is public)", config.resource);
    let dev_flag = if dev { " --dev" } else { "" };
    eprintln!(
        "  get a token:  cargo run -p mcp-mrtr-examples --bin notes -- --port {port}{dev_flag} --mint-token alice"
    );
    if config.is_dev_secret() {
        eprintln!("  warning: signing with the public development secret (--dev); never for anything shared");
    }
    // Not `axum::serve`: this bounds connections (a header deadline, a connection cap),
    // and Ctrl-C or SIGTERM drains them and hands the server's tasks back.
    mcp_mrtr::http::serve_router(listener, app).await?;
    Ok(())
}
