//! [`RedisGuard`]: single-use request states across instances.

use futures_util::future::BoxFuture;
use redis::aio::ConnectionManager;

use crate::{Claim, Consumed, StateGuard};

/// A [`StateGuard`] in Redis: one `SET key 1 NX PX <ms>` per state, so exactly one of
/// any number of instances presented the same state at once sees it first, and the
/// entry expires with the state. Made by [`Redis::state_guard`](super::Redis::state_guard).
///
/// When Redis cannot be reached, states are refused ([`Consumed::Unavailable`]): the
/// client is told to try again later, and no state is ever let through unrecorded.
#[derive(Clone)]
pub struct RedisGuard {
    connection: ConnectionManager,
    prefix: String,
}

impl std::fmt::Debug for RedisGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisGuard").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

impl RedisGuard {
    pub(super) fn new(connection: ConnectionManager, prefix: String) -> Self {
        Self { connection, prefix }
    }
}

impl StateGuard for RedisGuard {
    fn consume<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Consumed> {
        Box::pin(async move {
            // Redis wants a positive expiry; a state about to expire is kept a moment.
            let millis = u64::try_from(claim.keep_for().as_millis()).unwrap_or(u64::MAX).clamp(1, i64::MAX as u64);
            // The hex of the whole digest: the key the previous release wrote, so a
            // rolling upgrade keeps every state it recorded.
            let id = crate::hex::encode(claim.digest());
            let mut connection = self.connection.clone();
            let set: redis::RedisResult<Option<String>> = redis::cmd("SET")
                .arg(format!("{}{id}", self.prefix))
                .arg(1)
                .arg("NX")
                .arg("PX")
                .arg(millis)
                .query_async(&mut connection)
                .await;
            match set {
                Ok(Some(_)) => Consumed::First,
                Ok(None) => Consumed::Again,
                Err(error) => {
                    tracing::warn!(%error, "the Redis state guard is unavailable; refusing the state");
                    Consumed::Unavailable
                }
            }
        })
    }
}
