//! [`Link`]: the one connection the stores share, to a standalone Redis, to the primary
//! that Sentinel names, or to a Redis Cluster.
//!
//! A standalone Redis is one address, and redis-rs's `ConnectionManager` reconnects to it
//! by itself. Behind Sentinel the primary moves. When a command fails the way commands
//! fail while the primary is down or has become a replica (an I/O error, a refused or
//! dropped connection, a timeout, `READONLY`), the link asks the sentinels which node is
//! the primary now (redis-rs confirms it with `ROLE`) and sends every store's next command
//! there. The failed command is not retried: a script may have run before the reply was
//! lost, so its request fails cleanly ("try again later") and the client decides. Reads
//! do not fail on a replica, so failing commands are not the only signal: each link also
//! listens for the sentinels' failover announcements (`+switch-master`) and asks them
//! every second, or an old primary back as a replica would serve it stale reads.
//!
//! A cluster is redis-rs's `ClusterConnection`: it routes each command by its keys' slot,
//! follows `MOVED`, and learns the new layout when a shard's replica is promoted.
//! Subscriptions (the fanout's) are plain ones on one node: a cluster delivers every
//! `PUBLISH` to subscribers on every node, and a lost node is replaced by the next seed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig, PubSub};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::SentinelClient;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, TlsCertificates, Value};

/// How long one command may take before it counts as a failure: the request it serves
/// then fails cleanly instead of hanging.
pub(super) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// While the sentinels still name a primary that is down, failing commands ask them again
/// at most this often.
const ASK_SENTINELS_EVERY: Duration = Duration::from_millis(200);

/// Behind Sentinel, how often a link asks which node is the primary even when no
/// failover was announced.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The connection to Redis the stores share (cheap to clone: every clone is the same link).
#[derive(Clone)]
pub(crate) enum Link {
    /// A standalone Redis, or the primary behind Sentinel.
    Node(Arc<Node>),
    /// A Redis Cluster, and its seeds for subscriptions.
    Cluster(ClusterConnection, Arc<Seeds>),
}

pub(crate) struct Node {
    /// Behind an `Arc`, so a command takes it with a count bump, not a copy of the
    /// client's connection info.
    current: Mutex<Arc<Current>>,
    /// Set behind Sentinel: who to ask where the primary went, and when we last asked.
    sentinel: Option<tokio::sync::Mutex<(SentinelClient, Option<Instant>)>>,
    /// Behind Sentinel, set when a command failed as on a lost primary, until the
    /// sentinels name a primary the link talks to: meanwhile no command is sent, since
    /// the connection would reconnect to the old address, where the old primary may be
    /// back as a replica still syncing, and read from it.
    suspect: AtomicBool,
}

struct Current {
    /// Counts moves, so that of many commands failing at once only the first moves the link.
    generation: u64,
    client: redis::Client,
    connection: ConnectionManager,
}

/// A cluster's seed nodes, and which one a subscription tries next.
pub(crate) struct Seeds {
    clients: Vec<redis::Client>,
    next: AtomicUsize,
}

impl Link {
    /// A link to the one Redis `client` names.
    pub(super) async fn standalone(client: redis::Client) -> RedisResult<Self> {
        let connection = manager(&client).await?;
        Ok(Self::node(Current { generation: 0, client, connection }, None))
    }

    /// A link to the primary the sentinels of `sentinel` name, following it when it moves.
    pub(super) async fn sentinel(mut sentinel: SentinelClient) -> RedisResult<Self> {
        let client = sentinel.async_get_client().await?;
        let connection = manager(&client).await?;
        let link = Self::node(Current { generation: 0, client, connection }, Some(sentinel));
        if let Self::Node(node) = &link {
            tokio::spawn(watch(Arc::downgrade(node)));
        }
        Ok(link)
    }

    /// A link to the one Redis `client` names that connects at its first command, and
    /// again at each command while Redis is away: nothing is sent now.
    pub(super) fn standalone_lazily(client: redis::Client) -> RedisResult<Self> {
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), manager_config())?;
        Ok(Self::node(Current { generation: 0, client, connection }, None))
    }

    fn node(current: Current, sentinel: Option<SentinelClient>) -> Self {
        let sentinel = sentinel.map(|sentinel| tokio::sync::Mutex::new((sentinel, None)));
        Self::Node(Arc::new(Node { current: Mutex::new(Arc::new(current)), sentinel, suspect: AtomicBool::new(false) }))
    }

    /// A link to the cluster the `seeds` (URLs of some of its nodes) belong to.
    /// `certificates`, when given, replace the system's roots (and present a client
    /// certificate) for every node, the seeds' subscriptions included.
    pub(super) async fn cluster(seeds: &[String], certificates: Option<TlsCertificates>) -> RedisResult<Self> {
        let mut builder = ClusterClient::builder(seeds.iter().map(String::as_str))
            .connection_timeout(RESPONSE_TIMEOUT)
            .response_timeout(RESPONSE_TIMEOUT)
            .retries(3)
            .min_retry_wait(100)
            .max_retry_wait(1_000);
        if let Some(certificates) = &certificates {
            builder = builder.certs(certificates.clone());
        }
        let connection = builder.build()?.get_async_connection().await?;
        let client = |seed: &String| match &certificates {
            Some(certificates) => redis::Client::build_with_tls(seed.as_str(), certificates.clone()),
            None => redis::Client::open(seed.as_str()),
        };
        let clients = seeds.iter().map(client).collect::<RedisResult<_>>()?;
        Ok(Self::Cluster(connection, Arc::new(Seeds { clients, next: AtomicUsize::new(0) })))
    }

    /// Whether the link is to a Redis Cluster, whose keys must carry hash tags.
    pub(super) fn is_cluster(&self) -> bool {
        matches!(self, Self::Cluster(..))
    }

    /// The client of the node the link talks to now, for connections of their own
    /// (pub/sub subscriptions); on a cluster, the next seed node each time.
    pub(super) fn client(&self) -> redis::Client {
        match self {
            Self::Node(node) => node.current().client.clone(),
            Self::Cluster(_, seeds) => {
                let at = seeds.next.fetch_add(1, Ordering::Relaxed) % seeds.clients.len().max(1);
                seeds.clients[at].clone()
            }
        }
    }
}

impl Node {
    fn current(&self) -> Arc<Current> {
        Arc::clone(&self.current.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// After a command on generation `seen` failed with `error`: behind Sentinel, moves
    /// the link to the primary the sentinels name now, if it moved and no other command
    /// has moved the link since.
    async fn follow(&self, seen: u64, error: &RedisError) {
        if self.sentinel.is_some() && lost_the_primary(error) {
            self.suspect.store(true, Ordering::Release);
            self.check(Some(seen)).await;
        }
    }

    /// Behind Sentinel, after a lost primary: asks the sentinels first, and refuses the
    /// command while they name no primary the link talks to.
    async fn confirmed(&self) -> RedisResult<()> {
        if !self.suspect.load(Ordering::Acquire) {
            return Ok(());
        }
        let seen = self.current().generation;
        self.check(Some(seen)).await;
        if self.suspect.load(Ordering::Acquire) {
            return Err(RedisError::from((redis::ErrorKind::Io, "looking for the primary the sentinels name")));
        }
        Ok(())
    }

    /// A subscription to a sentinel's failover announcements, if one can be had.
    async fn announcements(&self) -> Option<PubSub> {
        let sentinel = self.sentinel.as_ref()?;
        let announcer = sentinel.lock().await.0.async_get_sentinel_client().await.ok()?;
        let mut pubsub = announcer.get_async_pubsub().await.ok()?;
        pubsub.subscribe("+switch-master").await.ok()?;
        Some(pubsub)
    }

    /// Asks the sentinels which node is the primary and moves the link there if it is
    /// another, unless the link moved since generation `seen` or they were asked a moment
    /// ago (a `None` asks in any case).
    async fn check(&self, seen: Option<u64>) {
        let Some(sentinel) = &self.sentinel else { return };
        let mut sentinel = sentinel.lock().await;
        let (sentinel, asked) = &mut *sentinel;
        let moved = seen.is_some_and(|seen| self.current().generation != seen);
        if moved || (seen.is_some() && asked.is_some_and(|at| at.elapsed() < ASK_SENTINELS_EVERY)) {
            return;
        }
        *asked = Some(Instant::now());
        let named = tokio::time::timeout(RESPONSE_TIMEOUT, sentinel.async_get_client()).await;
        let client = match named {
            Ok(Ok(client)) => client,
            Ok(Err(error)) => return tracing::warn!(%error, "the sentinels name no reachable primary yet"),
            Err(_) => return tracing::warn!("the sentinels did not name a primary in time"),
        };
        // redis-rs confirmed the named node's role: the link may use it.
        if client.get_connection_info().addr() == self.current().client.get_connection_info().addr() {
            self.suspect.store(false, Ordering::Release);
            return;
        }
        match manager(&client).await {
            Ok(connection) => {
                let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
                tracing::warn!(primary = %client.get_connection_info().addr(), "Redis failed over: following the new primary");
                *current = Arc::new(Current { generation: current.generation + 1, client, connection });
                self.suspect.store(false, Ordering::Release);
            }
            Err(error) => tracing::warn!(%error, "could not connect to the primary the sentinels name"),
        }
    }
}

/// Keeps a link behind Sentinel on the primary while it lives: at once when a sentinel
/// announces a failover (`+switch-master`), and every [`CHECK_EVERY`] besides, in case
/// an announcement was missed. Waiting for a command to fail is not enough: a link whose
/// old primary came back as a replica would read from it, stale or still empty, and see
/// no error.
async fn watch(node: Weak<Node>) {
    let mut announcements: Option<PubSub> = None;
    loop {
        if announcements.is_none() {
            let Some(node) = node.upgrade() else { return };
            announcements = node.announcements().await;
        }
        // An announcement, a second's silence or a lost subscription: check either way.
        let lost = if let Some(pubsub) = announcements.as_mut() {
            matches!(tokio::time::timeout(CHECK_EVERY, pubsub.on_message().next()).await, Ok(None))
        } else {
            tokio::time::sleep(CHECK_EVERY).await;
            false
        };
        if lost {
            announcements = None;
        }
        let Some(node) = node.upgrade() else { return };
        node.check(None).await;
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
    ConnectionManager::new_with_config(client.clone(), manager_config()).await
}

fn manager_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(RESPONSE_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_millis(500))
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Cluster(cluster, _) => cluster.req_packed_command(cmd),
            Self::Node(node) => Box::pin(async move {
                node.confirmed().await?;
                let current = node.current();
                let (generation, mut connection) = (current.generation, current.connection.clone());
                let reply = connection.req_packed_command(cmd).await;
                if let Err(error) = &reply {
                    node.follow(generation, error).await;
                }
                reply
            }),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Cluster(cluster, _) => cluster.req_packed_commands(pipeline, offset, count),
            Self::Node(node) => Box::pin(async move {
                node.confirmed().await?;
                let current = node.current();
                let (generation, mut connection) = (current.generation, current.connection.clone());
                let replies = connection.req_packed_commands(pipeline, offset, count).await;
                if let Err(error) = &replies {
                    node.follow(generation, error).await;
                }
                replies
            }),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Cluster(cluster, _) => cluster.get_db(),
            Self::Node(node) => node.current().connection.get_db(),
        }
    }
}
