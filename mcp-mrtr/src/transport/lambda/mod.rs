//! [`Lambda`]: a server served as an AWS Lambda function (the `lambda` feature), behind a
//! Function URL, API Gateway (HTTP or REST API) or an Application Load Balancer.
//!
//! The function runs the same router as [`Server::into_router`], built once per
//! container when the function starts (its cold start), with the same limits, auth and
//! `Host`/`Origin` rules as over HTTP; AWS's runtime (`lambda_http`) turns each
//! invocation's event into the request it answers. What cannot live in a function that
//! serves one request at a time is refused plainly: 2025-11-25 sessions (`-32022`, naming
//! 2026-07-28), `subscriptions/listen` (`-32601`, with why), and a session's `GET`/`DELETE`
//! (405). A request is routed by the path the function was mounted at, whatever stage or
//! custom domain's base path API Gateway puts in front of it (`mounted.rs`). See the
//! serverless part of the [many instances guide](crate::guide::many_instances).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::ConnectInfo;
use futures_util::future::{BoxFuture, LocalBoxFuture};
use http_body_util::BodyExt;
use lambda_http::request::RequestContext;
use lambda_http::{RequestExt, Service};

use crate::bounds::lifetime::Lifetime;
use crate::bounds::shutdown::Signal;
use crate::server::Server;
use crate::transport::http::HttpConfig;
use crate::transport::serve::sealed::Sealed;
use crate::transport::serve_error::ServeError;

mod mounted;
mod payload;

/// What the Lambda runtime sets in every function's environment: without it, this
/// process is not a Lambda function (and `lambda_http` would panic).
const RUNTIME_ENV: [&str; 4] = [
    "AWS_LAMBDA_RUNTIME_API",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "AWS_LAMBDA_FUNCTION_VERSION",
];

/// Serves a server as an AWS Lambda function: `server.serve(Lambda::new()).await` in
/// `main`, built with [cargo-lambda](https://www.cargo-lambda.info) (`cargo lambda build
/// --release`, `cargo lambda deploy`) and reached through a Function URL, API Gateway or
/// an ALB. Try it locally with `cargo lambda watch`.
///
/// Every request of 2026-07-28 carries what it needs (a round's state is sealed in
/// `requestState`), so any container answers any round. For more than one container,
/// share what must be shared: `MCP_MRTR_STATE_KEYS` in the function's environment, and a
/// Redis for the single-use guard of `once!` and for tasks (the `redis` feature). A
/// function stops when its response is sent, so it runs no task work: give it
/// [`TaskConfig::run_on_workers`](crate::tasks::TaskConfig::run_on_workers) and run
/// [`Worker`](crate::tasks::Worker)s beside it.
///
/// Without a [`config`](Self::config), any `Host` is answered (AWS routed the request by
/// its name) and browser requests only from loopback pages, as over HTTP. Responses are
/// buffered: a call's progress notifications reach the client with its result.
///
/// Serving runs on the task that awaits it (AWS's runtime is not `Send`, so neither is
/// this [`Serve`](crate::serve::Serve)): await it in `main`. A container answers one
/// invocation at a time, so a current-thread runtime is the one to choose: no worker
/// threads start with the container, and its cold start is about a bare `lambda_http`
/// function's (the serverless part of the [many instances
/// guide](crate::guide::many_instances) has the figures and the build that gets them).
///
/// ```no_run
/// use mcp_mrtr::lambda::Lambda;
/// use mcp_mrtr::prelude::*;
///
/// /// Says hello.
/// #[tool]
/// async fn hello() -> Result<String, ToolError> {
///     Ok("hello".into())
/// }
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> Result<(), ServeError> {
///     Server::new("hello", "1.0.0").tool(hello).serve(Lambda::new()).await
/// }
/// ```
#[derive(Clone, Debug)]
pub struct Lambda {
    config: Option<HttpConfig>,
    max_response_bytes: usize,
}

impl Default for Lambda {
    fn default() -> Self {
        Self { config: None, max_response_bytes: payload::LAMBDA_RESPONSE_BYTES }
    }
}

impl Lambda {
    /// A function with the default [`HttpConfig`] (the path `/mcp`, any host).
    pub fn new() -> Self {
        Self::default()
    }

    /// How the endpoint is mounted and guarded (its path, hosts and origins, limits,
    /// auth), as for [`Http::config`](crate::http::Http::config). Hosts not named answer
    /// any `Host`.
    pub fn config(mut self, config: HttpConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The most one response may hold (default 6 MB, AWS Lambda's limit on a synchronous
    /// invocation's response; behind an Application Load Balancer, its 1 MB). A response
    /// over it would never reach the client (AWS answers a bare 502), so the function
    /// answers a JSON-RPC error in its place (`-32603`, naming both sizes), logged at WARN.
    pub fn max_response_bytes(mut self, max: usize) -> Self {
        self.max_response_bytes = max;
        self
    }
}

impl Lambda {
    /// The function's [`Handler`], without running it: what [`Server::serve`] runs for each
    /// invocation. For tests that drive it with `lambda_http`'s own types, or for
    /// running it with `lambda_http::run` yourself (with layers of your own). Refused as
    /// serving would be: a misconfigured server.
    pub fn handler(self, server: Server) -> Result<Handler, ServeError> {
        let config = self.config.unwrap_or_default().living(Lifetime::Request);
        let trusts_forwarded_for = config.trusts_forwarded_for();
        let max_response_bytes = self.max_response_bytes;
        Ok(Handler {
            router: server.into_router(config)?,
            trusts_forwarded_for,
            told_alb: Arc::default(),
            max_response_bytes,
        })
    }
}

/// The function's handler: a service from each invocation's request to its response
/// (buffered, as the runtime sends one payload). Made by [`Lambda::handler`]; cloning it
/// is cheap, and every clone serves the same server.
#[derive(Clone, Debug)]
pub struct Handler {
    router: axum::Router,
    /// Whether clients are told apart by `X-Forwarded-For` (behind an ALB, the only way).
    trusts_forwarded_for: bool,
    /// Whether it said, once, that behind an ALB it cannot.
    told_alb: Arc<AtomicBool>,
    /// The most a response may hold ([`Lambda::max_response_bytes`]).
    max_response_bytes: usize,
}

impl Service<lambda_http::Request> for Handler {
    type Response = lambda_http::Response<lambda_http::Body>;
    type Error = io::Error;
    type Future = BoxFuture<'static, io::Result<Self::Response>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: lambda_http::Request) -> Self::Future {
        let mut router = self.router.clone();
        let request = with_client_address(request, self.trusts_forwarded_for, &self.told_alb);
        let limit = payload::limit_for(&request, self.max_response_bytes);
        Box::pin(async move {
            let Ok(response) = router.call(mounted::as_mounted(request)).await;
            let (mut parts, body) = response.into_parts();
            let bytes = body.collect().await.map_err(io::Error::other)?.to_bytes();
            let bytes = payload::bounded(&mut parts, bytes, limit);
            // JSON and SSE are text, and go as text; anything else as bytes.
            let body = match String::from_utf8(bytes.to_vec()) {
                Ok(text) if text.is_empty() => lambda_http::Body::Empty,
                Ok(text) => lambda_http::Body::Text(text),
                Err(binary) => lambda_http::Body::Binary(binary.into_bytes()),
            };
            Ok(lambda_http::Response::from_parts(parts, body))
        })
    }
}

impl Sealed for Lambda {
    type Serving = LocalBoxFuture<'static, Result<(), ServeError>>;

    fn serve(self, server: Server, shutdown: Option<Signal>) -> Self::Serving {
        Box::pin(async move {
            if let Some(missing) = RUNTIME_ENV.iter().find(|name| std::env::var_os(name).is_none()) {
                return Err(ServeError::misconfigured(format!(
                    "not running as an AWS Lambda function ({missing} is not set): deploy it with cargo lambda, \
                     or try it locally with `cargo lambda watch`; serve it with Http elsewhere"
                )));
            }
            // A clone shares the server's task runs: what a stop hands back.
            let tasks = server.clone();
            let function = self.handler(server)?;
            // AWS's runtime is not `Send` (it holds a response by reference across an
            // await), so it runs right here, on the task that awaits serving (`main`'s):
            // no thread is started for it, and on a current-thread runtime none at all.
            let running = lambda_http::run(function);
            let outcome = match shutdown {
                Some(signal) => tokio::select! {
                    outcome = running => outcome,
                    () = signal.received() => {
                        // A function whose tasks run in it (not the way to deploy one, and
                        // it says so at start-up) lets them finish their step first.
                        tasks.hand_back_tasks().await;
                        Ok(())
                    }
                },
                None => running.await,
            };
            outcome.map_err(ServeError::Runtime)
        })
    }
}

/// The request with the client's address where the endpoint reads a peer's: from the
/// event's request context (Function URLs and API Gateway say it; behind an ALB, set
/// [`HttpConfig::trust_forwarded_for`]). It is who a client is for the per-client shares
/// of [`HttpLimits`](crate::http::HttpLimits) within one container.
fn with_client_address(
    mut request: lambda_http::Request,
    trusts_forwarded_for: bool,
    told_alb: &AtomicBool,
) -> lambda_http::Request {
    let source = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.http.source_ip.as_deref(),
        Some(RequestContext::ApiGatewayV1(context)) => context.identity.source_ip.as_deref(),
        Some(RequestContext::Alb(_)) if !trusts_forwarded_for => {
            if !told_alb.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "behind an Application Load Balancer the function is given no client address: every client \
                     shares one per-client share of the limits; the ALB sends X-Forwarded-For, which \
                     HttpConfig::trust_forwarded_for(true) reads"
                );
            }
            None
        }
        _ => None,
    };
    if let Some(address) = source.and_then(|ip| ip.parse::<IpAddr>().ok()) {
        request.extensions_mut().insert(ConnectInfo(SocketAddr::new(address, 0)));
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn outside_lambda_serving_says_so_instead_of_panicking() {
        if RUNTIME_ENV.iter().any(|name| std::env::var_os(name).is_some()) {
            return;
        }
        let error = Server::new("s", "1").serve(Lambda::new()).await.unwrap_err();
        assert!(error.to_string().contains("not running as an AWS Lambda function"), "{error}");
    }
}
