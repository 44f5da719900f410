//! The upstream a mount forwards to, and how it is spoken to whatever the request: the
//! `_meta` it hears, the token a caller's request carries, its refusals as the caller
//! reads them.

use std::sync::{Arc, OnceLock};

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::UpstreamErrors;
use crate::base::caller::Caller;
use crate::base::error::{Error, ErrorCode};
use crate::client::{BoxError, Client, ClientError};
use crate::protocol::{meta_keys, ClientCapabilities, LoggingLevel, TASKS_EXTENSION};

/// The upstream a mount forwards to.
pub(crate) struct Upstream {
    pub(super) client: Client,
    pub(super) errors: UpstreamErrors,
    /// Its number among the server's mounts whose upstreams serve tasks, once registered
    /// there: only then is it offered the tasks extension (see `tasks`).
    pub(super) door: OnceLock<usize>,
    /// Its calls held between the caller's rounds (a 2025-11-25 upstream's: see `held`).
    pub(super) held: Arc<super::held::Held>,
    /// The token a caller's requests carry to it, instead of the client's own.
    pub(super) token: Option<TokenFn>,
    /// Room for the requests of callers' rounds in flight to it at once.
    pub(super) in_flight: tokio::sync::Semaphore,
}

/// [`Mount::upstream_token`](super::Mount::upstream_token)'s function.
pub(super) type TokenFn =
    Arc<dyn Fn(Option<Caller>) -> BoxFuture<'static, Result<Option<String>, BoxError>> + Send + Sync>;

/// The `_meta` the upstream hears: the caller's capabilities, as it declared them, but
/// the tasks extension unless `tasks` (the request may become, or is about, a task the
/// upstream keeps); and the caller's log level, if it set one.
pub(super) fn upstream_meta(caps: &ClientCapabilities, log_level: Option<LoggingLevel>, tasks: bool) -> Value {
    let mut capabilities = serde_json::to_value(caps).unwrap_or_else(|_| Value::Object(Map::new()));
    if let (false, Some(Value::Object(extensions))) = (tasks, capabilities.get_mut("extensions")) {
        extensions.remove(TASKS_EXTENSION);
    }
    let mut meta = Map::new();
    meta.insert(meta_keys::CLIENT_CAPABILITIES.into(), capabilities);
    if let Some(level) = log_level {
        meta.insert(meta_keys::LOG_LEVEL.into(), serde_json::to_value(level).unwrap_or(Value::Null));
    }
    Value::Object(meta)
}

impl Upstream {
    /// Its number among the server's mounts whose upstreams serve tasks, if it has one
    /// (its upstream serves tasks and its mount is registered: see `tasks`).
    pub(super) fn door(&self) -> Option<usize> {
        self.door.get().copied()
    }

    /// The token `caller`'s request carries to the upstream, where the operator maps
    /// callers to tokens (`None`: the client's own headers). The function's failure is
    /// the call's, without its text, which may name the operator's identity provider.
    pub(super) async fn token_for(&self, caller: Option<&Caller>, ours: &str) -> Result<Option<String>, Error> {
        let Some(token) = &self.token else { return Ok(None) };
        token(caller.cloned()).await.map_err(|error| {
            tracing::warn!(%error, target = ours, "no token for the server behind a mount");
            Error::internal(format!("the server behind {ours} could not be authorized for this caller"))
        })
    }

    /// How a failed forward reaches the caller: the upstream's JSON-RPC error by its code
    /// (whole when configured), anything else as an internal error naming what was asked.
    pub(super) fn refusal(&self, ours: &str, error: &ClientError) -> Error {
        let Some(rpc) = error.rpc() else {
            tracing::warn!(%error, target = ours, "a mounted server could not be reached");
            return Error::internal(format!("the server behind {ours} could not be reached"));
        };
        // A capability the caller lacks is the caller's to know, named as the upstream
        // named it.
        if self.errors == UpstreamErrors::Whole || rpc.code() == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
            return rpc.clone();
        }
        tracing::debug!(%error, target = ours, "a mounted server refused the request");
        Error::new(rpc.code(), format!("the server behind {ours} refused the request"))
    }
}
