//! Redis-backed stores for running one server on several instances (the `redis`
//! feature; the [many instances](crate::guide::many_instances) guide shows the set-up): a
//! single-use guard for request states, a task store with leases, and a change fan-out
//! for `subscriptions/listen`.
//!
//! One door in: [`Redis::connect`], then hand its stores to the server.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_mrtr::{catalog::Subscriptions, redis::Redis, request_state::StateConfig, tasks::TaskConfig, Server};
//!
//! let redis = Redis::connect("redis://127.0.0.1:6379/").await?;
//! let server = Server::new("app", "1.0.0")
//!     .request_state(StateConfig::default().single_use(redis.state_guard()))
//!     .tasks(TaskConfig::default().store(redis.task_store()))
//!     .subscriptions(Subscriptions::default().fanout(redis.change_fanout().await?));
//! # let _ = server;
//! # Ok(())
//! # }
//! ```
//!
//! Atomicity comes from Redis, never from a lock in one process: a state is recorded
//! with one `SET NX PX`, a task is written by a script that compares its version. Each
//! script's keys share one hash slot on a Redis Cluster (`keys.rs`), so the same scripts
//! run on a standalone Redis, the primary Sentinel names, or a cluster. [`RedisConfig`]
//! says how to reach it: a URL, a set of sentinels or a cluster's seeds, and TLS
//! certificates where they are not the system's.

mod config;
mod fanout;
mod guard;
mod keys;
mod link;
mod tasks;

pub use self::config::RedisConfig;
pub use self::fanout::RedisFanout;
pub use self::guard::RedisGuard;
use self::link::Link;
pub use self::tasks::RedisTaskStore;
use crate::ext::tasks::StoreError;

/// A connection to Redis, shared by the stores made from it (commands are pipelined on
/// one multiplexed connection that reconnects by itself, and follows the primary when
/// Sentinel names another).
#[derive(Clone)]
pub struct Redis {
    connection: Link,
    /// What every key starts with: the prefix as [`namespace`] delimits it.
    prefix: String,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: it is never printed.
        f.debug_struct("Redis").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

impl Redis {
    /// Connects to the Redis that `config` names: a URL (`redis://[user:password@]host:port/db`,
    /// or `rediss://` for TLS), or a [`RedisConfig`] (certificates, Sentinel). Fails at once
    /// when Redis cannot be reached, or refuses the connection or the login, so a
    /// misconfigured instance does not start.
    ///
    /// Keys start with `mcp-mrtr:`; see [`prefix`](Self::prefix) to share one Redis
    /// between several servers.
    pub async fn connect(config: impl Into<RedisConfig>) -> Result<Self, StoreError> {
        let config = config.into();
        // The error names where it tried (without a login): "connection refused" alone
        // does not say which of an application's addresses was wrong.
        let at = |error: StoreError| error.at(&config.whereabouts());
        let mut connection = config.link().await.map_err(at)?;
        // A connection is not yet a login: a wrong password or an ACL user without the
        // stores' commands shows here, at start-up, rather than at the first request.
        redis::cmd("PING").query_async::<()>(&mut connection).await.map_err(|e| at(unreachable(e)))?;
        Ok(Self { connection, prefix: "mcp-mrtr:".to_owned() })
    }

    /// [`connect`](Self::connect) without waiting for Redis: the configuration is checked
    /// now, and the connection is made at the first command that needs it, and again at
    /// each while Redis is away. For a function (AWS Lambda), whose start-up failing would
    /// fail every invocation and start the container again: here it starts, requests that
    /// need Redis fail (`-32603`, try again) while it is away, and the others are served.
    /// Whether Redis answers is said once in the log (WARN while it does not). One Redis
    /// URL only: a cluster or Sentinel connects with [`connect`](Self::connect). Call it
    /// on a Tokio runtime (it fails, saying so, elsewhere).
    pub fn connect_lazily(config: impl Into<RedisConfig>) -> Result<Self, StoreError> {
        let config = config.into();
        let whereabouts = config.whereabouts();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(StoreError::new("Redis::connect_lazily needs a Tokio runtime").at(&whereabouts));
        };
        let connection = config.lazy_link().map_err(|error| error.at(&whereabouts))?;
        let mut probe = connection.clone();
        runtime.spawn(async move {
            match redis::cmd("PING").query_async::<()>(&mut probe).await {
                Ok(()) => tracing::debug!(redis = %whereabouts, "Redis answers"),
                Err(error) => tracing::warn!(
                    redis = %whereabouts,
                    %error,
                    "Redis cannot be reached yet: requests that need it fail (try again) until it can; \
                     each tries to connect again"
                ),
            }
        });
        Ok(Self { connection, prefix: "mcp-mrtr:".to_owned() })
    }

    /// Starts every key with `prefix` instead of `mcp-mrtr:`. Instances of one server
    /// must use the same prefix; different servers on one Redis, different ones.
    ///
    /// Different prefixes never share a key, even when one starts with the other (`app:`
    /// and `app:task:x`): a `:` ends the prefix, and a `:` (or `%`) inside it is written
    /// `%3A` (`%25`). So `app` and `app:` are the same prefix, and `app:prod:` keys start
    /// with `app%3Aprod:`. Braces are written `%7B` and `%7D`, so a prefix never makes a
    /// hash tag of its own on a cluster.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = namespace(&prefix.into());
        self
    }

    /// A [`StateGuard`](crate::request_state::StateGuard) shared by every instance: a request state
    /// opens once across all of them.
    pub fn state_guard(&self) -> RedisGuard {
        RedisGuard::new(self.connection.clone(), self.keys())
    }

    /// A [`TaskStore`](crate::tasks::TaskStore) shared by every instance, with leases: a task
    /// whose instance died is taken over by another.
    pub fn task_store(&self) -> RedisTaskStore {
        RedisTaskStore::new(self.connection.clone(), self.keys())
    }

    /// A [`ChangeFanout`](crate::catalog::ChangeFanout) over Redis pub/sub: a change made
    /// through any instance's [`CatalogHandle`](crate::catalog::CatalogHandle) reaches the
    /// listeners of every instance. It is subscribed when this returns.
    ///
    /// Only the notifications travel: each instance's catalog is its own, so a change
    /// that every instance must serve (a tool turned off by a feature flag) is applied
    /// by each instance, from the source the application already shares.
    pub async fn change_fanout(&self) -> Result<RedisFanout, StoreError> {
        RedisFanout::start(self.connection.clone(), self.keys().channel()).await
    }
}

impl Redis {
    /// This server's keys, laid out for the deployment.
    fn keys(&self) -> keys::KeySpace {
        keys::KeySpace::new(&self.prefix, self.connection.is_cluster())
    }
}

/// The start of every key for `prefix`: a `:` that ends it, and no `:` before. The
/// first `:` of a key then says which prefix it belongs to, so two prefixes never share
/// a key, whatever follows them (a task id is the client's choice). A single trailing `:`
/// is taken as that end, so the usual `name:` prefixes keep their keys.
fn namespace(prefix: &str) -> String {
    let inside = prefix.strip_suffix(':').unwrap_or(prefix);
    let mut namespace = inside.replace('%', "%25").replace(':', "%3A").replace('{', "%7B").replace('}', "%7D");
    namespace.push(':');
    namespace
}

/// A Redis error as the stores report it (details for the server's log only), the
/// client's own error kept as its cause.
fn unreachable(error: redis::RedisError) -> StoreError {
    StoreError::caused_by(format!("redis: {error}"), error)
}

#[cfg(test)]
mod tests {
    use super::namespace;

    #[test]
    fn prefixes_end_at_their_only_colon() {
        assert_eq!(namespace("mcp-mrtr:"), "mcp-mrtr:", "the default keeps its keys");
        assert_eq!(namespace("app"), "app:");
        assert_eq!(namespace("app:prod:"), "app%3Aprod:");
        assert_eq!(namespace("50%:"), "50%25:");
        assert_eq!(namespace(""), ":");
        // Nested prefixes: a key of one never starts with the other's namespace.
        let (outer, inner) = (namespace("app:"), namespace("app:task:x"));
        assert!(!inner.starts_with(&outer) && !outer.starts_with(&inner), "{outer} {inner}");
        for prefix in ["a:b", "a%3Ab", "a%3Ab:", "a::", ":", "a:b:c:"] {
            let encoded = namespace(prefix);
            assert_eq!(encoded.find(':'), Some(encoded.len() - 1), "{prefix}: {encoded}");
        }
        assert_ne!(namespace("a:b"), namespace("a%3Ab"));
        assert_eq!(namespace("{app}"), "%7Bapp%7D:", "no hash tag of the prefix's own");
    }
}
