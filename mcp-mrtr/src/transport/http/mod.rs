//! Streamable HTTP for 2026-07-28 (and 2025-11-25 sessions): one endpoint, each request
//! answered with JSON or with an SSE stream of its notifications and its reply.
//!
//! Read top-down, each file calling only the ones after it:
//! - `serve`: the accept loop (`Http`), connections bounded (`listener_limits`) and shed
//!   (`connections`, `open_files`), each request handed to the endpoint;
//! - `endpoint`: the door (`into_router`, `Http`), `Host`/`Origin` (`cross_site`),
//!   the client's address, the OAuth gate, then by HTTP method;
//! - `post`: content type → body → envelope → framing → era → MCP headers (`headers`);
//! - `legacy`: 2025-11-25 sessions (initialize, their GET and DELETE, answers to the
//!   bridge's requests);
//! - `call`: a handler slot (`slots`), the request's `Delivery`, dispatch;
//! - `sse`, `status`: the reply as JSON or SSE, and its HTTP status;
//! - `shared`: what every request to the endpoint shares (`Endpoint`);
//! - `handoff`: an acknowledged listen stream, written by its connection's task once
//!   hyper lets go of the socket.

mod call;
mod config;
mod connections;
mod cross_site;
mod endpoint;
mod handoff;
mod headers;
mod legacy;
mod limits;
mod listener_limits;
mod open_files;
mod post;
mod serve;
mod shared;
mod slots;
mod sse;
mod status;

pub use self::config::HttpConfig;
pub use self::endpoint::Http;
pub use self::limits::HttpLimits;
pub use self::listener_limits::ListenerLimits;
pub use self::serve::{serve_router, ServeRouter};
