//! `subscriptions/listen` (spec digest §1.9): a long-lived stream that first acknowledges
//! the subset of the client's filter the server honours, then carries the changes that
//! filter asked for, each tagged with the listen request's id, until the client goes.
//!
//! Changes travel from [`CatalogHandle`](crate::catalog::CatalogHandle) to listen streams through a
//! [`ChangeFanout`]: in memory by default; a store shared by several instances (Redis
//! pub/sub, say) plugs in behind the same trait.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use super::FanoutKeys;
use crate::bounds::fair::FairPool;

/// How often an idle SSE stream gets a comment line, unless [`Subscriptions::keep_alive`] says otherwise.
pub(crate) const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A change listeners may hear of.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The list of tools changed (`notifications/tools/list_changed`).
    ToolsListChanged,
    /// The list of prompts changed.
    PromptsListChanged,
    /// The list of resources (or templates) changed.
    ResourcesListChanged,
    /// The content of this resource changed (`notifications/resources/updated`).
    ResourceUpdated(String),
    /// A tool, prompt or resource was enabled, disabled or removed on one instance; every
    /// instance on the fanout applies it, and its listeners hear the list change of its
    /// kind ([`Subscriptions::share_catalog_changes`]).
    CatalogEdited(crate::routes::catalog::CatalogEdit),
}

/// Carries changes from the handles that make them to every open listen stream.
///
/// The in-memory [`MemoryFanout`] serves one instance. Several instances behind a load
/// balancer need one backed by a bus they share: `publish` sends to the bus, and
/// `subscribe` hands out receivers of a local broadcast channel that a task fills from
/// the bus, so a change made on one instance reaches listeners on all of them.
pub trait ChangeFanout: Send + Sync + 'static {
    /// Sends `change` to every current subscriber. Never blocks on a slow one.
    fn publish(&self, change: Change);

    /// A receiver of every change published from now on. A receiver that falls more
    /// than the channel's capacity behind sees `Lagged`, and its stream is ended.
    fn subscribe(&self) -> broadcast::Receiver<Change>;

    /// Called once when serving starts, before the first [`subscribe`](Self::subscribe),
    /// with the keys every instance of this server shares. A fanout whose bus others can
    /// reach seals each message it sends with [`FanoutKeys::seal`] and drops each it
    /// receives that [`FanoutKeys::open`] refuses: instances apply the catalog edits they
    /// hear, so an unauthenticated bus lets whoever can publish on it change every
    /// instance's catalog. The default ignores them, as an in-process fanout may.
    fn authenticate_with(&self, keys: FanoutKeys) {
        let _ = keys;
    }
}

/// [`ChangeFanout`] within one process: a bounded broadcast channel.
#[derive(Debug)]
pub struct MemoryFanout {
    sender: broadcast::Sender<Change>,
}

impl MemoryFanout {
    /// A fanout that holds at most `capacity` changes a listener has not taken yet; one
    /// further behind is dropped with a clean end of its stream.
    pub fn new(capacity: usize) -> Self {
        Self { sender: broadcast::channel(capacity.max(1)).0 }
    }
}

impl ChangeFanout for MemoryFanout {
    fn publish(&self, change: Change) {
        // An error only means nobody listens right now.
        let _ = self.sender.send(change);
    }

    fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.sender.subscribe()
    }
}

/// Serving `subscriptions/listen`: how changes travel and how streams are kept.
///
/// With it, `server/discover` advertises `listChanged` for tools, prompts and resources
/// and `resources.subscribe` (for the kinds the server has); without it, `subscriptions/listen`
/// is an unknown method and nothing is advertised.
///
/// Streams are a pool of their own, so they never crowd out requests that do work: at
/// most [`max_streams`](Self::max_streams) (default 1,024: about 8 MB at 8 KiB a stream
/// on `Http`, 28 MB in a router served otherwise) and [`max_streams_per_client`](Self::max_streams_per_client) per client
/// (default 32). When the pool is full, the oldest stream of the client holding the most
/// ends (with its result, as at shutdown) to make room; a newcomer is refused only when
/// nobody holds much more than it would. Every stream also ends after
/// [`max_lifetime`](Self::max_lifetime) (default 30 min): clients reconnect, and long-held
/// places are handed out afresh.
///
/// ```
/// use std::time::Duration;
///
/// use mcp_mrtr::prelude::*;
/// use mcp_mrtr::{catalog::Subscriptions, catalog::MemoryFanout};
///
/// /// Lists the open tickets.
/// #[tool]
/// async fn tickets() -> Result<String, ToolError> {
///     Ok("none open".into())
/// }
///
/// let listen = Subscriptions::default()
///     // Under the 10 s idle timeout of the proxy in front.
///     .keep_alive(Duration::from_secs(5))
///     .max_streams(256)
///     .max_streams_per_client(4)
///     .fanout(MemoryFanout::new(4096));
/// let server = Server::new("helpdesk", "1.0.0").tool(tickets).subscriptions(listen);
/// // `server/discover` now tells clients the tool list may change.
/// assert_eq!(server.capabilities().tools.unwrap().list_changed, Some(true));
/// ```
///
/// Changes come from a [`CatalogHandle`](crate::catalog::CatalogHandle); see
/// [`TestClient::listen`](crate::testing::TestClient::listen) for a stream hearing one.
#[derive(Clone)]
pub struct Subscriptions {
    pub(crate) fanout: Arc<dyn ChangeFanout>,
    pub(crate) keep_alive: Duration,
    pub(crate) max_subscribed_resources: usize,
    pub(crate) max_streams: usize,
    pub(crate) max_streams_per_client: usize,
    pub(crate) max_lifetime: Duration,
    pub(crate) share_catalog: bool,
    /// The open streams, by client.
    pub(crate) streams: FairPool,
}

impl Default for Subscriptions {
    /// An in-memory fanout of 1,024 changes, a keep-alive comment every 15 s, at most
    /// 1,024 resource subscriptions per stream, and the stream bounds above.
    fn default() -> Self {
        let (max_streams, max_streams_per_client) = (1024, 32);
        Self {
            fanout: Arc::new(MemoryFanout::new(1024)),
            keep_alive: DEFAULT_KEEP_ALIVE,
            max_subscribed_resources: 1024,
            max_streams,
            max_streams_per_client,
            max_lifetime: Duration::from_secs(30 * 60),
            share_catalog: true,
            streams: FairPool::new(max_streams, max_streams_per_client),
        }
    }
}

impl Subscriptions {
    /// Where changes travel (default: [`MemoryFanout`]).
    pub fn fanout(mut self, fanout: impl ChangeFanout) -> Self {
        self.fanout = Arc::new(fanout);
        self
    }

    /// How often an idle HTTP stream gets an SSE comment line, so proxies keep it open
    /// and a client that went away is noticed (default 15 s).
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.keep_alive = every;
        self
    }

    /// The most URIs one stream may subscribe to; the acknowledgement lists the ones
    /// honoured (default 1,024). A 2025-11-25 session keeps as many at most, within the
    /// bytes [`HttpLimits::max_subscription_bytes_per_session`](crate::http::HttpLimits::max_subscription_bytes_per_session) allows.
    pub fn max_resource_subscriptions(mut self, max: usize) -> Self {
        self.max_subscribed_resources = max;
        self
    }

    /// The most listen streams open at once, over all clients (default 1,024). Each
    /// holds a connection: about 8 KiB in all on `Http`, where an acknowledged
    /// stream leaves the HTTP server, and about 28 KiB in a router served otherwise
    /// (measured).
    pub fn max_streams(mut self, max: usize) -> Self {
        self.max_streams = max;
        self.streams = FairPool::new(self.max_streams, self.max_streams_per_client);
        self
    }

    /// The most listen streams one client holds at once (default 32); past it that
    /// client's new stream is refused with `-32603`. A client is the authenticated
    /// caller, else its address: behind a proxy, see
    /// [`HttpConfig::trust_forwarded_for`](crate::http::HttpConfig::trust_forwarded_for).
    pub fn max_streams_per_client(mut self, max: usize) -> Self {
        self.max_streams_per_client = max;
        self.streams = FairPool::new(self.max_streams, self.max_streams_per_client);
        self
    }

    /// How long one stream lasts before it ends with its result (default 30 min); the
    /// client listens again.
    pub fn max_lifetime(mut self, lifetime: Duration) -> Self {
        self.max_lifetime = lifetime;
        self
    }

    /// Whether enabling, disabling and removing through a
    /// [`CatalogHandle`](crate::catalog::CatalogHandle) travel to every instance on the fanout
    /// (default: yes). Behind a load balancer a client lists on one instance and calls
    /// on another, so they must agree: a tool disabled on one is disabled on all, and
    /// every listener hears of it after its instance applied it. Adding a route stays on
    /// its instance (a handler is code: each instance adds its own), and an instance not
    /// listening when an edit was made (starting, or cut off from the bus) misses it, so
    /// apply lasting changes from configuration at start-up too. Turn it off when an
    /// instance changes its catalog for reasons of its own.
    pub fn share_catalog_changes(mut self, share: bool) -> Self {
        self.share_catalog = share;
        self
    }
}

impl std::fmt::Debug for Subscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriptions")
            .field("keep_alive", &self.keep_alive)
            .field("max_subscribed_resources", &self.max_subscribed_resources)
            .field("max_streams", &self.max_streams)
            .field("max_streams_per_client", &self.max_streams_per_client)
            .field("max_lifetime", &self.max_lifetime)
            .field("share_catalog", &self.share_catalog)
            .finish_non_exhaustive()
    }
}
