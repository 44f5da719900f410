//! The floor under an HTTP MCP server's cost: a bare hyper HTTP/1.1 server that reads each
//! request whole and answers it with the same bytes (a `tools/list` answer recorded from
//! `everything`), doing nothing else. `examples/bench/flows.py compare` measures its CPU
//! per request, so each flow's CPU per flow reads against its requests × the floor: what
//! is left above that line is the server's own work.
//!
//! ```text
//! floor --port 3010 --body tools-list.json
//! ```

use std::convert::Infallible;

use anyhow::Context as _;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (port, body) = options()?;
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        // As `everything` and the load client do: a response is never held back by Nagle.
        stream.set_nodelay(true)?;
        let body = body.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| answer(request, body.clone()));
            // A client that goes away ends its connection, nothing more.
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

async fn answer(request: Request<Incoming>, body: Bytes) -> Result<Response<Full<Bytes>>, Infallible> {
    // Read whole, as any server that parses a request must.
    let _ = request.into_body().collect().await;
    let mut response = Response::new(Full::new(body));
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

/// `--port N --body FILE`.
fn options() -> anyhow::Result<(u16, Bytes)> {
    let (mut port, mut body) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().with_context(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--port" => port = Some(value.parse().context("--port takes a port number")?),
            "--body" => body = Some(std::fs::read(&value).with_context(|| format!("cannot read {value}"))?),
            _ => anyhow::bail!("unknown option {arg} (usage: floor --port N --body FILE)"),
        }
    }
    Ok((port.context("--port is required")?, Bytes::from(body.context("--body is required")?)))
}
