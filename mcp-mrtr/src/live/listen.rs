//! `subscriptions/listen` (spec digest §1.9): a long-lived stream that first acknowledges
//! the subset of the client's filter the server honours, then carries the changes that
//! filter asked for, each tagged with the listen request's id, until the client goes.
//!
//! Changes travel from [`ServerHandle`](crate::ServerHandle) to listen streams through a
//! [`ChangeFanout`]: in memory by default; a store shared by several instances (Redis
//! pub/sub, say) plugs in behind the same trait.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::broadcast;
use tokio::sync::mpsc::error::TrySendError;

use super::RequestView;
use crate::context::Transport;
use crate::fair::{ClientId, FairPool, Refused};
use crate::handler::{PromptRoute, ResourceRoute, ToolRoute};
use crate::protocol::{JsonObject, Notification, Outgoing, RequestId};
use crate::shutdown::Draining;
use crate::{Error, Server};

/// The key that ties a listen stream's messages to the listen request.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How often an idle SSE stream gets a comment line, unless [`Listen::keep_alive`] says otherwise.
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
/// most [`max_streams`](Self::max_streams) (default 1,024, about 36 MB at 36 KiB a
/// stream) and [`max_streams_per_client`](Self::max_streams_per_client) per client
/// (default 32). When the pool is full, the oldest stream of the client holding the most
/// ends (with its result, as at shutdown) to make room; a newcomer is refused only when
/// nobody holds much more than it would. Every stream also ends after
/// [`max_lifetime`](Self::max_lifetime) (default 30 min): clients reconnect, and long-held
/// places are handed out afresh.
#[derive(Clone)]
pub struct Listen {
    pub(crate) fanout: Arc<dyn ChangeFanout>,
    pub(crate) keep_alive: Duration,
    pub(crate) max_resource_subscriptions: usize,
    max_streams: usize,
    max_streams_per_client: usize,
    max_lifetime: Duration,
    /// The open streams, by client.
    streams: FairPool,
}

impl Default for Listen {
    /// An in-memory fanout of 1,024 changes, a keep-alive comment every 15 s, at most
    /// 1,024 resource subscriptions per stream, and the stream bounds above.
    fn default() -> Self {
        let (max_streams, max_streams_per_client) = (1024, 32);
        Self {
            fanout: Arc::new(MemoryFanout::new(1024)),
            keep_alive: DEFAULT_KEEP_ALIVE,
            max_resource_subscriptions: 1024,
            max_streams,
            max_streams_per_client,
            max_lifetime: Duration::from_secs(30 * 60),
            streams: FairPool::new(max_streams, max_streams_per_client),
        }
    }
}

impl Listen {
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
    /// honoured (default 1,024).
    pub fn max_resource_subscriptions(mut self, max: usize) -> Self {
        self.max_resource_subscriptions = max;
        self
    }

    /// The most listen streams open at once, over all clients (default 1,024). Each
    /// holds a connection: about 36 KiB in all (measured).
    pub fn max_streams(mut self, max: usize) -> Self {
        self.max_streams = max;
        self.streams = FairPool::new(self.max_streams, self.max_streams_per_client);
        self
    }

    /// The most listen streams one client holds at once (default 32); past it that
    /// client's new stream is refused with `-32603`. A client is the authenticated
    /// caller, else its address: behind a proxy, see
    /// [`HttpConfig::trust_forwarded_for`](crate::HttpConfig::trust_forwarded_for).
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
}

impl std::fmt::Debug for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listen")
            .field("keep_alive", &self.keep_alive)
            .field("max_resource_subscriptions", &self.max_resource_subscriptions)
            .field("max_streams", &self.max_streams)
            .field("max_streams_per_client", &self.max_streams_per_client)
            .field("max_lifetime", &self.max_lifetime)
            .finish_non_exhaustive()
    }
}

/// `params.notifications` of a listen request.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Filter {
    #[serde(default)]
    tools_list_changed: bool,
    #[serde(default)]
    prompts_list_changed: bool,
    #[serde(default)]
    resources_list_changed: bool,
    #[serde(default)]
    resource_subscriptions: Vec<String>,
}

impl Filter {
    /// The part of the filter this server honours: kinds it has, and, up to the cap,
    /// the URIs this request may read (a URI that is hidden from it, needs a scope it
    /// lacks, or names no resource is left out alike).
    fn honoured(mut self, server: &Server, view: &RequestView<'_>) -> Self {
        let catalog = server.catalog();
        self.tools_list_changed &= catalog.has::<ToolRoute>();
        self.prompts_list_changed &= catalog.has::<PromptRoute>();
        let resources = catalog.has::<ResourceRoute>();
        self.resources_list_changed &= resources;
        if !resources {
            self.resource_subscriptions.clear();
        }
        self.resource_subscriptions.retain(|uri| may_read(server, view, uri));
        self.resource_subscriptions.sort_unstable();
        self.resource_subscriptions.dedup();
        self.resource_subscriptions
            .truncate(server.live_config.listen.as_ref().map_or(0, |l| l.max_resource_subscriptions));
        self
    }

    fn to_json(&self) -> Value {
        let mut honoured = JsonObject::new();
        for (key, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                honoured.insert(key.into(), json!(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(self.resource_subscriptions));
        }
        Value::Object(honoured)
    }

    /// The notification for `change`, tagged with `id`, if this filter asked for it and
    /// the request may still read the resource it names (the catalog may have changed).
    fn delivered(
        &self,
        change: &Change,
        id: &RequestId,
        server: &Server,
        view: &RequestView<'_>,
    ) -> Option<Notification> {
        let note = self.notification(change, id)?;
        match change {
            Change::ResourceUpdated(uri) if !may_read(server, view, uri) => None,
            _ => Some(note),
        }
    }

    /// The notification for `change`, tagged with `id`, if this filter asked for it.
    fn notification(&self, change: &Change, id: &RequestId) -> Option<Notification> {
        let tag = json!({ SUBSCRIPTION_ID: id });
        let (method, params) = match change {
            Change::ToolsListChanged if self.tools_list_changed => ("tools/list_changed", json!({ "_meta": tag })),
            Change::PromptsListChanged if self.prompts_list_changed => {
                ("prompts/list_changed", json!({ "_meta": tag }))
            }
            Change::ResourcesListChanged if self.resources_list_changed => {
                ("resources/list_changed", json!({ "_meta": tag }))
            }
            Change::ResourceUpdated(uri) if self.resource_subscriptions.binary_search(uri).is_ok() => {
                ("resources/updated", json!({ "uri": uri, "_meta": tag }))
            }
            _ => return None,
        };
        Some(Notification { method: format!("notifications/{method}"), params })
    }
}

/// Whether the request may read `uri`: the decision `resources/read` takes.
fn may_read(server: &Server, view: &RequestView<'_>, uri: &str) -> bool {
    server.reach_resource(&server.catalog(), view, uri).is_ok()
}

/// Serves one listen request until the client goes (the transport drops this future,
/// or cancels it on stdio) or the stream must end (the client does not keep up, or the
/// server shuts down): then the listen result is the last message,
/// `{resultType: "complete", _meta: {subscriptionId}}`.
///
/// Memory per stream is bounded: the transport's channel holds a few notifications, and
/// a listener that does not take them (or falls behind the fanout) is ended.
pub(crate) async fn serve_listen(
    server: &Server,
    id: &RequestId,
    params: &Value,
    transport: &Transport,
    view: &RequestView<'_>,
) -> Result<JsonObject, Error> {
    let (Some(listen), Some(fanout)) = (&server.live_config.listen, server.live.fanout()) else {
        return Err(Error::method_not_found("subscriptions/listen"));
    };
    let notifier = transport
        .notifier
        .as_ref()
        .ok_or_else(|| Error::invalid_request("subscriptions/listen needs a client that accepts text/event-stream"))?;
    let filter = match params.get("notifications") {
        Some(filter @ Value::Object(_)) => Filter::deserialize(filter)
            .map_err(|e| Error::invalid_params(format!("Invalid params: notifications: {e}")))?,
        _ => return Err(Error::invalid_params("subscriptions/listen needs params.notifications (an object)")),
    };
    let filter = filter.honoured(server, view);
    let place = listen.streams.admit(&ClientId::of(&transport.extensions)).map_err(|refused| {
        Error::internal(match refused {
            Refused::Share => format!(
                "too many listen streams from this client (at most {}); end one before listening again",
                listen.max_streams_per_client
            ),
            Refused::Full => format!("the server holds its most listen streams ({}); retry later", listen.max_streams),
        })
    })?;
    // Subscribe before acknowledging, so no change after the ack is missed.
    let mut changes = fanout.subscribe();
    let _open = server.live.open_listener();
    let ack = Notification {
        method: "notifications/subscriptions/acknowledged".into(),
        params: json!({ "_meta": { SUBSCRIPTION_ID: id }, "notifications": filter.to_json() }),
    };
    notifier.send(Outgoing::Notification(ack)).await.map_err(|_| gone())?;
    tracing::debug!(
        listeners = server.live.listeners(),
        keep_alive_s = listen.keep_alive.as_secs(),
        "listen stream open"
    );
    // A shutdown ends the stream cleanly, with its result, rather than holding the drain open.
    let shutdown = Draining::of(&transport.extensions);
    let lifetime = tokio::time::sleep(listen.max_lifetime);
    let give_way = place.give_way();
    tokio::pin!(shutdown, lifetime, give_way);
    loop {
        let change = tokio::select! {
            change = changes.recv() => change,
            () = &mut shutdown => {
                tracing::debug!("ending a listen stream: the server is shutting down");
                break;
            }
            () = &mut lifetime => {
                tracing::debug!("ending a listen stream at its maximum lifetime");
                break;
            }
            // Client-triggerable, like the two below: DEBUG, so no client can flood the log.
            () = &mut give_way => {
                tracing::debug!("ending a listen stream: its client holds the most and another needs the place");
                break;
            }
        };
        match change {
            Ok(change) => {
                let Some(note) = filter.delivered(&change, id, server, view) else { continue };
                match notifier.try_send(Outgoing::Notification(note)) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        tracing::debug!("ending a listen stream whose client does not read it");
                        break;
                    }
                    Err(TrySendError::Closed(_)) => return Err(gone()),
                }
            }
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::debug!(missed, "ending a listen stream that fell behind the changes");
                break;
            }
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
    let mut result = JsonObject::new();
    result.insert("_meta".into(), json!({ SUBSCRIPTION_ID: id }));
    Ok(result)
}

fn gone() -> Error {
    Error::internal("the listener went away")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_passes_only_what_it_asked_for_tagged_with_the_id() {
        let filter =
            Filter { prompts_list_changed: true, resource_subscriptions: vec!["a://1".into()], ..Filter::default() };
        let id = RequestId::from("listen-1");
        assert!(filter.notification(&Change::ToolsListChanged, &id).is_none());
        assert!(filter.notification(&Change::ResourcesListChanged, &id).is_none());
        assert!(filter.notification(&Change::ResourceUpdated("a://2".into()), &id).is_none());
        let prompts = filter.notification(&Change::PromptsListChanged, &id).unwrap();
        assert_eq!(prompts.method, "notifications/prompts/list_changed");
        assert_eq!(prompts.params["_meta"][SUBSCRIPTION_ID], json!("listen-1"));
        let updated = filter.notification(&Change::ResourceUpdated("a://1".into()), &RequestId::from(7)).unwrap();
        assert_eq!(updated.params, json!({"uri": "a://1", "_meta": {SUBSCRIPTION_ID: 7}}));
    }

    #[test]
    fn the_acknowledgement_lists_only_what_is_honoured() {
        let filter = Filter { tools_list_changed: true, ..Filter::default() };
        assert_eq!(filter.to_json(), json!({"toolsListChanged": true}));
    }
}
