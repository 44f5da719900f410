//! Write MCP tools that ask the user, or the client's model, for input halfway through a
//! call — as plain `async fn`s, on the stateless 2026-07-28 protocol.
//!
//! ```no_run
//! use mcp_mrtr::prelude::*;
//!
//! /// The city to report on.
//! #[derive(Deserialize, JsonSchema)]
//! struct City { city: String }
//!
//! /// Current weather for a city the user picks.
//! #[tool]
//! async fn weather() -> Result<String, ToolError> {
//!     let place: City = ask!(elicit "Which city do you want the weather for?")?;
//!     Ok(format!("It is sunny in {}.", place.city))
//! }
//!
//! #[tokio::main(flavor = "current_thread")] // one client on stdio: one thread serves it best
//! async fn main() -> Result<(), ServeError> {
//!     Server::new("weather", "1.0.0").tool(weather).serve(Stdio::new()).await
//! }
//! ```
//!
//! The first call answers `resultType: "input_required"` with the question; the client
//! retries with the answer and the sealed `requestState`, and the handler runs again from
//! the top, this time getting its answer. The server keeps nothing between rounds.
//!
//! # Details
//!
//! - **Asking.** [`ask!`] elicits a form (`T: Deserialize + JsonSchema`, a flat object),
//!   a URL visit, a sample from the client's model or the client's roots. Asks inside
//!   [`join!`](prelude::join) go out in one round. Decline and cancel are values ([`Declined`]).
//! - **Replay.** Each round re-runs the handler; answers are pinned to their question
//!   and carried in the sealed state. [`once!`] keeps a side effect from repeating.
//! - **Capabilities.** Before a round is sent, each question is checked against what the
//!   client declared on *this* request: `-32021` names everything missing. Branch first
//!   with [`Ctx::client_supports`].
//! - **Request state.** Authenticated encryption, bound to the method, target,
//!   arguments and (optionally) the caller, with expiry and a size cap ([`StateConfig`](request_state::StateConfig)).
//!   Share a key ring (`MCP_MRTR_STATE_KEYS`) to run several instances.
//! - **Serving.** [`Server::serve`] on [`Stdio`](stdio::Stdio) or [`Http`](http::Http), or
//!   mount [`Server::into_router`] in an axum app. Results are stamped centrally (`resultType`,
//!   `serverInfo`, [`CacheHints`](protocol::CacheHints)); errors carry their JSON-RPC code and HTTP status.
//!   On SIGTERM or Ctrl-C both shut down gracefully: no new requests, those in flight
//!   get a bound to finish (over HTTP [`ListenerLimits::shutdown_timeout`](http::ListenerLimits::shutdown_timeout),
//!   10 s over stdio), tasks are handed back.
//! - **Both eras.** 2025-11-25 clients get the same handlers through a bridge: after
//!   `initialize`, each round's questions go to the client as real requests on the
//!   request's stream, and the handler is replayed with the answers.
//! - **Tasks.** `#[tool(task = "optional")]` lets a client that declares the tasks
//!   extension get a task id at once and poll it; the handler, its asks and its `once!`
//!   steps are the same, journaled in a [`TaskStore`](tasks::TaskStore) instead of the request state.
//! - **Authorization.** [`HttpConfig::auth`](http::HttpConfig::auth) makes the HTTP endpoint an OAuth 2.1
//!   resource server ([`auth`]): bearer tokens checked before the MCP pipeline, the
//!   protected resource metadata, and per-handler scopes (`#[tool(scopes = [...])]`).
//! - **Testing.** [`testing::TestClient`] drives a handler through its rounds in-process.
//!
//! # Feature flags
//!
//! No feature is on by default, and the default build needs Rust 1.85 (the crate's
//! `rust-version`). Each feature adds one optional dependency family; three of them need a
//! newer compiler, because their dependencies do.
//!
//! | feature | what it adds | MSRV |
//! |---|---|---|
//! | `jwt` | [`auth::JwtVerifier`] and [`auth::JwtKeys`]: a ready [`auth::TokenVerifier`] for JWT access tokens (HS256, RSA and EC keys, JWKS), built on jsonwebtoken 12 | 1.88 |
//! | `redis` | [`redis`]: the single-use guard, task store and change fan-out in Redis, for running several instances, over plain text or TLS (redis 1.8, rustls with *ring*) | 1.88 |
//! | `lambda` | [`lambda::Lambda`]: serving as an AWS Lambda function behind a Function URL, API Gateway or an ALB (lambda_http 1.3, AWS's Rust runtime) | 1.88 |
//! | `client` | [`client`]: an MCP client of other servers, over HTTP or stdio, that answers their questions mid-call (hyper's client, rustls with *ring*); [`mount`]: their tools served as this server's own | 1.85 |
//! | `opentelemetry` | request and task-run spans placed in the client's OpenTelemetry trace, parented on `_meta.traceparent` (tracing-opentelemetry 0.34 with opentelemetry 0.33; the application installs the exporter) | 1.85 |
//!
//! The [`guide`] has one chapter per task, in reading order: [your first
//! server](guide::first_server), [how a handler runs across rounds](guide::replay),
//! [testing](guide::testing), [client capabilities](guide::capabilities), [the request
//! state](guide::request_state), [serving over HTTP](guide::serving),
//! [authorization](guide::auth), [tasks](guide::tasks), [many instances](guide::many_instances),
//! [extensions](guide::extensions) (skills, methods of your own), [interfaces](guide::interfaces)
//! (MCP Apps, and asks an app renders), [clients](guide::clients) (calling servers, and
//! answering them), [coming from another
//! SDK](guide::other_sdks) (rounds built by hand) and [the wire](guide::wire), driven by
//! hand with curl.

// The docs link what each feature adds; built without one of them those links have no
// target. docs.rs builds with every feature, and CI checks that build with every link
// resolved, so only a build without a feature lets them go.
#![cfg_attr(not(all(feature = "jwt", feature = "redis", feature = "lambda")), allow(rustdoc::broken_intra_doc_links))]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

// One folder per layer, lowest first (ARCHITECTURE.md): a folder names only the ones
// above it here. The public modules are re-exported below, where a user reads them.
mod base;
mod bounds;
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
mod dispatch;
mod ext;
mod intake;
mod macros;
mod mrtr;
pub mod protocol;
mod routes;
mod server;
mod transport;

#[cfg(feature = "client")]
pub use ext::mount;
#[cfg(feature = "redis")]
pub use ext::redis;
pub use ext::{auth, skills, tasks};
pub use intake::request_state;
pub use mrtr::{context, extract, question};
pub use routes::{apps, catalog, handler};
pub use transport::testing;
// Entry points for `mcp-mrtr/fuzz` (cargo-fuzz sets `--cfg fuzzing`); absent from every other build.
#[cfg(fuzzing)]
#[doc(hidden)]
pub use transport::fuzzing;

pub use base::caller::Caller;
pub use base::error::{Declined, Error, ErrorCode, ToolError};
pub use intake::capability::Capability;
pub use mrtr::context::Ctx;
pub use mrtr::extract::{Extension, State};
pub use routes::handler::{Json, MethodRoute, PromptRoute, ResourceRoute, ToolRoute};
pub use server::Server;

/// Serving: [`Server::serve`] takes a transport ([`stdio::Stdio`], [`http::Http`]) and
/// returns a [`Serve`](serve::Serve), which graceful shutdown modifies.
pub mod serve {
    pub use crate::bounds::shutdown::shutdown_signal;
    pub use crate::transport::serve::{Serve, Transport};
    pub use crate::transport::serve_error::ServeError;
}

/// Newline-delimited JSON-RPC on the process's stdio, or any byte stream pair.
pub mod stdio {
    pub use crate::intake::envelope::size::MAX_JSON_VALUES;
    pub use crate::transport::stdio::{Pipe, Stdio, MAX_REQUESTS, STDIO_HANDLER_TIMEOUT};
}

/// AWS Lambda (the `lambda` feature): [`Lambda`](lambda::Lambda) serves a server as a
/// function behind a Function URL, API Gateway or an ALB.
#[cfg(feature = "lambda")]
#[cfg_attr(docsrs, doc(cfg(feature = "lambda")))]
pub mod lambda {
    pub use crate::transport::lambda::{Handler, Lambda};
}

/// Streamable HTTP: the [`Http`](http::Http) transport, the endpoint's settings
/// ([`HttpConfig`](http::HttpConfig), with the bounds on requests, [`HttpLimits`](http::HttpLimits)),
/// the listener's bounds on connections ([`ListenerLimits`](http::ListenerLimits)), and an
/// accept loop with those bounds for an axum app that mounts [`Server::into_router`].
pub mod http {
    pub use crate::transport::http::{serve_router, Http, HttpConfig, HttpLimits, ListenerLimits, ServeRouter};
}

/// Turns an `async fn` into a tool: `server.tool(my_fn)`.
///
/// The function's parameters become the tool's arguments (their types implement
/// `Deserialize + JsonSchema`; `///` comments on them become descriptions), its doc
/// comment the description, and a `Json<T>` return the output schema. A parameter of
/// type `&Ctx` (or `Ctx`) receives the request context instead, and parameters of type
/// [`State<T>`], [`Extension<T>`] or [`Caller`] are resolved from the server and the
/// request (see [`extract`]). Inside, [`ask!`] and [`once!`] work as documented there.
/// On a `&self` method, put [`toolbox`] on the `impl` block.
///
/// | key | meaning |
/// |---|---|
/// | `name = "…"` | the tool's name (default: the function's) |
/// | `title = "…"` | display title |
/// | `description = "…"` | description (default: the doc comment; one is required) |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | behaviour hints |
/// | `task = "optional"` / `"required"` | may run as a task ([`handler::TaskSupport`], [`Ctx::continue_as_task`]) |
/// | `scopes = ["…", …]` | OAuth scopes a caller needs; others get 403 before the handler runs ([`auth`]) |
/// | `forms = [Type, …]` | forms helper functions ask for, checked at registration |
/// | `crate = "path"` | where `mcp_mrtr` is, when re-exported under another name |
///
/// A parameter marked `#[mcp(header = "Region")]` is mirrored into the HTTP header
/// `Mcp-Param-Region` (SEP-2243: `x-mcp-header` in the input schema), which the server
/// checks against the argument. Only `String`, integer and `bool` parameters (or an
/// `Option` of one) can be mirrored.
///
/// A parameter is read by the shape of its type: `Ctx` or `&Ctx` receives the context;
/// `State<T>` or `Extension<T>` (one type argument), `Caller`, or an `Option` of the last
/// two is resolved from the request; anything else is an argument, so your own
/// `enum State { … }` stays one. Two parameter keys override the reading:
///
/// | parameter key | meaning |
/// |---|---|
/// | `#[mcp(arg)]` | an argument of the call, whatever its type is called (a type of your own named `State`, `Caller` or `Ctx`) |
/// | `#[mcp(extract)]` | resolved from the request through [`extract::FromCtx`]: an alias such as `type Db = State<Pool>`, or an extractor of your own |
///
/// A type read as an extractor by its name that is not mcp_mrtr's fails the build,
/// pointing at `#[mcp(arg)]`. `extract` with `arg`, or with `header`, is an error.
///
/// The function becomes a plain `fn` of the same name returning its [`ToolRoute`] (so
/// the name never clashes with a binding in the module, as a unit struct's would);
/// register it with `server.tool(name)`, several with `server.tools(tools![a, b])`.
/// `forms = [Type, …]` names the forms the handler asks for through helper functions,
/// so they are checked at registration like the ones its own `ask!`s name.
pub use mcp_mrtr_macros::tool;

/// Turns an `async fn` into a prompt: `server.prompt(my_fn)`.
///
/// Parameters are the prompt's (string) arguments: `String` ones are required,
/// `Option<String>` ones optional. Extractors count as no argument, as in a tool: `&Ctx`,
/// `State<T>`, `Extension<T>`, `Caller`. Keys: `name`, `title`, `description`, `scopes`,
/// `forms`, `crate`, as for [`tool`]. The function returns `Result<Vec<PromptMessage>, ToolError>` (or a
/// [`GetPromptResult`](protocol::GetPromptResult)) and may [`ask!`].
pub use mcp_mrtr_macros::prompt;

/// Turns an `async fn` into a resource: `server.resource(my_fn)`.
///
/// `uri = "…"` is required. With `{variables}` in it, the resource is a template and
/// each parameter is one variable; without, the function takes no parameters
/// (extractors aside: `&Ctx`, `State<T>`, `Extension<T>`, `Caller` are not variables).
/// Other keys: `name`, `title`, `description`, `mime_type`, `scopes`, `forms`, `crate`
/// (as for [`tool`]). Returns
/// [`ResourceContents`](protocol::ResourceContents) (or a `Vec` of them, or a [`ReadResourceResult`](protocol::ReadResourceResult)) and may [`ask!`].
pub use mcp_mrtr_macros::resource;
/// Makes the `#[tool]`, `#[prompt]` and `#[resource]` methods of an `impl` block, taking
/// `&self`, the handlers of a struct the server owns: `server.toolbox(notes)`.
///
/// ```
/// use std::sync::Mutex;
///
/// use mcp_mrtr::prelude::*;
///
/// struct Counter {
///     count: Mutex<u64>,
/// }
///
/// #[toolbox]
/// impl Counter {
///     /// Adds `by` to the counter.
///     #[tool]
///     async fn add(&self, by: u64) -> Result<String, ToolError> {
///         let mut count = self.count.lock().unwrap();
///         *count += by;
///         Ok(count.to_string())
///     }
///
///     /// The counter, as a resource.
///     #[resource(uri = "counter://value")]
///     async fn value(&self) -> Result<ResourceContents, ToolError> {
///         let count = *self.count.lock().unwrap();
///         Ok(ResourceContents::text("counter://value", "text/plain", count.to_string()))
///     }
/// }
///
/// let server = Server::new("counter", "1.0.0").toolbox(Counter { count: Mutex::new(0) });
/// # let _ = server;
/// ```
///
/// The struct is shared by every call at once behind an `Arc` (so methods take `&self`,
/// and state that changes sits behind a lock), and a method that asks runs again from the
/// top each round, like any handler. The annotated methods become handlers only: call
/// them through the server (or [`testing`]), not directly.
pub use mcp_mrtr_macros::toolbox;

#[doc(hidden)]
pub mod __private {
    //! Not public API: for generated code (and the benches) only, may change in any release.
    pub use crate::routes::private::*;
}

/// Everything a first server needs: the macros, the types handlers take and return, the
/// server and its two transports.
pub mod prelude {
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};

    pub use crate::ask;
    /// Joins asks (and other futures) so they are polled together: joined asks go out in
    /// one round. A re-export of `tokio::join!`.
    pub use tokio::join;

    pub use crate::http::Http;
    pub use crate::protocol::{CallToolResult, ContentBlock, PromptMessage, ResourceContents};
    pub use crate::serve::ServeError;
    pub use crate::stdio::Stdio;
    pub use crate::{
        once, prompt, prompts, require_client_capability, resource, resources, tool, toolbox, tools, Caller,
        Capability, Ctx, Declined, Extension, Json, Server, State, ToolError,
    };
}

/// Asks the client for input in the middle of a handler.
///
/// Inside a `#[tool]`, `#[prompt]` or `#[resource]` function:
///
/// | form | asks | evaluates to |
/// |---|---|---|
/// | `ask!(elicit MESSAGE)` | a form for the `T` the result is used as | `Result<T, Declined>` |
/// | `ask!(elicit_url MESSAGE, URL)` | the user to open a URL | `Result<(), Declined>` |
/// | `ask!(sample PROMPT, max_tokens = 50, system = "…")` | the client's model (deprecated, see below) | `Result<`[`protocol::CreateMessageResult`]`, `[`question::Refused`]`>`: `Err` when the client refused it |
/// | `ask!(roots)` | the client's roots (deprecated, see below) | `Vec<protocol::Root>` |
///
/// Options after `sample` call the [`question::Sample`] builder methods of the same name.
/// Sampling and roots are deprecated in 2026-07-28 (SEP-2577) and still served: clients
/// may stop offering them (the ask then fails with `-32021`), so new tools call a model
/// provider themselves and take paths as arguments or through `elicit` (see
/// [`question::Sample`], [`question::Roots`]). No compiler warning marks them.
///
/// `key = "…"` first sets the key the answer travels under; otherwise it is the name the
/// `let` binds (through `?`, `.await`, and a `match` or `if let` on the ask; in
/// `let (a, b) = join!(ask!(…), ask!(…))`, each ask's place in the tuple). An ask with
/// neither (a bare `ask!(elicit_url …)?;`, a `match ask!(…)` that no `let` binds) does
/// not compile: the key is part of the wire contract, so it never comes from the ask's
/// position, and reshaping the code keeps it:
///
/// ```
/// use mcp_mrtr::prelude::*;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Target {
///     name: String,
/// }
///
/// /// Deploys where the user says, or stays put if they decline.
/// #[tool]
/// async fn deploy() -> Result<String, ToolError> {
///     // Answered under `target`, as `let target: Target = ask!(…)?` would be.
///     let target = match ask!(elicit "Where to?") {
///         Ok(Target { name }) => name,
///         Err(_declined) => return Ok("staying".into()),
///     };
///     Ok(format!("deploying to {target}"))
/// }
/// # let _server = Server::new("docs", "0").tool(deploy);
/// ```
///
/// In a loop, give a per-iteration key. Asks inside
/// [`join!`](prelude::join) go out together in one round. In a helper `async fn`, pass the context:
/// `ask!(ctx, key = "name", elicit "…")`.
///
/// On the first request of a call (no request state yet) an answer the client sent in
/// advance counts for an ask under its key, even one it was never shown. For consent, make
/// the ask `fresh` (before or after `key = …,`): `ask!(fresh, elicit "Pay 12 EUR?")` counts
/// only an answer to the question as asked ([`Ask::fresh`](question::Ask::fresh)). Inside a task every ask is
/// fresh ([guide](guide::replay)).
#[doc(inline)]
pub use crate::__ask as ask;

/// The guide: one chapter per task, in reading order, each with runnable examples.
pub mod guide {
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/first-server.md"))]
    pub mod first_server {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/replay.md"))]
    pub mod replay {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/testing.md"))]
    pub mod testing {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/capabilities.md"))]
    pub mod capabilities {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/request-state.md"))]
    pub mod request_state {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/serving.md"))]
    pub mod serving {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/auth.md"))]
    pub mod auth {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/tasks.md"))]
    pub mod tasks {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/many-instances.md"))]
    pub mod many_instances {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/extensions.md"))]
    pub mod extensions {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/interfaces.md"))]
    pub mod interfaces {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/clients.md"))]
    pub mod clients {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/mounting.md"))]
    pub mod mounting {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/other-sdks.md"))]
    pub mod other_sdks {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/guide/wire.md"))]
    pub mod wire {}
}

// The README's examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
