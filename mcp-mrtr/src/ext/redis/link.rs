//! [`Link`]: the one connection the stores share, to a standalone Redis or to the primary
//! that Sentinel names.
//!
//! A standalone Redis is one address, and redis-rs's `ConnectionManager` reconnects to it
//! by itself. Behind Sentinel the primary moves. When a command fails the way commands
//! fail while the primary is down or has become a replica (an I/O error, a refused or
//! dropped connection, a timeout, `READONLY`), the link asks the sentinels which node is
//! the primary now (redis-rs confirms it with `ROLE`) and sends every store's next command
//! there. The failed command is not retried: a script may have run before the reply was
//! lost, so its request fails cleanly ("try again later") and the client decides.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::SentinelClient;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

/// How long one command may take before it counts as a failure: the request it serves
/// then fails cleanly instead of hanging.
pub(super) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// While the sentinels still name a primary that is down, failing commands ask them again
/// at most this often.
const ASK_SENTINELS_EVERY: Duration = Duration::from_millis(200);

/// The connection to Redis the stores share (cheap to clone: every clone is the same link).
#[derive(Clone)]
pub(crate) struct Link {
    shared: Arc<Shared>,
}

struct Shared {
    current: Mutex<Current>,
    /// Set behind Sentinel: who to ask where the primary went, and when we last asked.
    sentinel: Option<tokio::sync::Mutex<(SentinelClient, Option<Instant>)>>,
}

#[derive(Clone)]
struct Current {
    /// Counts moves, so that of many commands failing at once only the first moves the link.
    generation: u64,
    client: redis::Client,
    connection: ConnectionManager,
}

impl Link {
    /// A link to the one Redis `client` names.
    pub(super) async fn standalone(client: redis::Client) -> RedisResult<Self> {
        let connection = manager(&client).await?;
        Ok(Self::new(Current { generation: 0, client, connection }, None))
    }

    /// A link to the primary the sentinels of `sentinel` name, following it when it moves.
    pub(super) async fn sentinel(mut sentinel: SentinelClient) -> RedisResult<Self> {
        let client = sentinel.async_get_client().await?;
        let connection = manager(&client).await?;
        Ok(Self::new(Current { generation: 0, client, connection }, Some(sentinel)))
    }

    fn new(current: Current, sentinel: Option<SentinelClient>) -> Self {
        let sentinel = sentinel.map(|sentinel| tokio::sync::Mutex::new((sentinel, None)));
        Self { shared: Arc::new(Shared { current: Mutex::new(current), sentinel }) }
    }

    fn current(&self) -> Current {
        self.shared.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The client of the node the link talks to now, for connections of their own
    /// (pub/sub subscriptions).
    pub(super) fn client(&self) -> redis::Client {
        self.current().client
    }

    /// After a command on generation `seen` failed with `error`: behind Sentinel, moves
    /// the link to the primary the sentinels name now, if it moved and no other command
    /// has moved the link since.
    async fn follow(&self, seen: u64, error: &RedisError) {
        let Some(sentinel) = &self.shared.sentinel else { return };
        if !lost_the_primary(error) {
            return;
        }
        let mut sentinel = sentinel.lock().await;
        let (sentinel, asked) = &mut *sentinel;
        if self.current().generation != seen || asked.is_some_and(|at| at.elapsed() < ASK_SENTINELS_EVERY) {
            return;
        }
        *asked = Some(Instant::now());
        let named = tokio::time::timeout(RESPONSE_TIMEOUT, sentinel.async_get_client()).await;
        let client = match named {
            Ok(Ok(client)) => client,
            Ok(Err(error)) => return tracing::warn!(%error, "the sentinels name no reachable primary yet"),
            Err(_) => return tracing::warn!("the sentinels did not name a primary in time"),
        };
        if client.get_connection_info().addr() == self.current().client.get_connection_info().addr() {
            return;
        }
        match manager(&client).await {
            Ok(connection) => {
                let mut current = self.shared.current.lock().unwrap_or_else(PoisonError::into_inner);
                tracing::warn!(primary = %client.get_connection_info().addr(), "Redis failed over: following the new primary");
                *current = Current { generation: current.generation + 1, client, connection };
            }
            Err(error) => tracing::warn!(%error, "could not connect to the primary the sentinels name"),
        }
    }
}

/// Whether `error` is how a command fails when the node it was sent to is down, or no
/// longer the primary.
fn lost_the_primary(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_refusal()
        || error.is_connection_dropped()
        || error.is_timeout()
        || error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
}

/// A multiplexed connection to `client`'s node that reconnects by itself. While Redis is
/// away, a request gets its error within a second rather than after the client's default
/// six reconnection attempts (~6 s); the next command tries to reconnect again.
async fn manager(client: &redis::Client) -> RedisResult<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(RESPONSE_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_millis(500));
    ConnectionManager::new_with_config(client.clone(), config).await
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let Current { generation, mut connection, .. } = self.current();
            let reply = connection.req_packed_command(cmd).await;
            if let Err(error) = &reply {
                self.follow(generation, error).await;
            }
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let Current { generation, mut connection, .. } = self.current();
            let replies = connection.req_packed_commands(pipeline, offset, count).await;
            if let Err(error) = &replies {
                self.follow(generation, error).await;
            }
            replies
        })
    }

    fn get_db(&self) -> i64 {
        self.current().connection.get_db()
    }
}
