//! [`RedisFanout`]: list and resource changes carried between instances by Redis
//! pub/sub.
//!
//! Each instance publishes its changes on one channel and relays what the channel
//! carries (its own changes included) into a local broadcast channel, which its listen
//! streams subscribe to. Pub/sub delivers to whoever is connected: while an instance is
//! cut off from Redis it misses changes, so when it reconnects it tells its listeners
//! that every list may have changed (a `resources/updated` it missed is lost).
//!
//! The channel is a trust boundary: each message is sealed with the server's
//! [`FanoutKeys`], and one that does not open (unsealed, forged, replayed, or sealed for
//! another server's channel) is dropped. Until serving starts and hands the fanout its
//! keys, nothing is published or relayed.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::PubSub;
use tokio::sync::{broadcast, mpsc};

use crate::ext::tasks::StoreError;
use crate::routes::catalog::{Change, ChangeFanout, FanoutKeys};

/// Changes an instance holds for its listeners, and changes waiting to be published.
const CAPACITY: usize = 1024;

/// How long a relay waits before connecting again after losing Redis.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// A [`ChangeFanout`] over Redis pub/sub. Made by
/// [`Redis::change_fanout`](super::Redis::change_fanout), which subscribes before it
/// returns and starts two tasks (one publishes in order, one relays); they end when the
/// fanout is dropped.
#[derive(Debug)]
pub struct RedisFanout {
    outgoing: mpsc::Sender<Change>,
    local: broadcast::Sender<Change>,
    /// Set once, by the server that serves with this fanout.
    keys: Arc<OnceLock<FanoutKeys>>,
}

impl RedisFanout {
    pub(super) async fn start(connection: super::Link, channel: String) -> Result<Self, StoreError> {
        let subscribed = subscribe(&connection.client(), &channel).await.map_err(super::unreachable)?;
        let (outgoing, queued) = mpsc::channel(CAPACITY);
        let local = broadcast::channel(CAPACITY).0;
        let keys = Arc::new(OnceLock::new());
        let bus = Bus { channel, keys: keys.clone() };
        tokio::spawn(publish(connection.clone(), bus.clone(), queued));
        tokio::spawn(relay(connection, bus, subscribed, local.downgrade()));
        Ok(Self { outgoing, local, keys })
    }
}

impl ChangeFanout for RedisFanout {
    fn publish(&self, change: Change) {
        if self.outgoing.try_send(change).is_err() {
            tracing::warn!("the Redis change fanout is backed up; a change was dropped");
        }
    }

    fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.local.subscribe()
    }

    /// The first server to serve with this fanout keys it; a second one's keys are ignored.
    fn authenticate_with(&self, keys: FanoutKeys) {
        if self.keys.set(keys).is_err() {
            tracing::warn!("a Redis change fanout serves one server: a second one's keys are ignored");
        }
    }
}

/// The channel and the keys its messages are sealed with.
#[derive(Clone)]
struct Bus {
    channel: String,
    keys: Arc<OnceLock<FanoutKeys>>,
}

impl Bus {
    fn seal(&self, change: &Change) -> Option<String> {
        Some(self.keys.get()?.seal(&self.channel, &encode(change)))
    }

    fn open(&self, payload: &str) -> Option<Change> {
        // Not keyed yet: nothing serves, so nothing can be trusted or needed.
        decode(&self.keys.get()?.open(&self.channel, payload)?)
    }
}

/// Publishes queued changes one at a time, so they arrive in the order they were made.
async fn publish(mut connection: super::Link, bus: Bus, mut queued: mpsc::Receiver<Change>) {
    while let Some(change) = queued.recv().await {
        let Some(sealed) = bus.seal(&change) else {
            tracing::warn!("a change made before the server served was not published: the fanout has no keys yet");
            continue;
        };
        let sent: redis::RedisResult<i64> =
            redis::cmd("PUBLISH").arg(&bus.channel).arg(sealed).query_async(&mut connection).await;
        if let Err(error) = sent {
            tracing::warn!(%error, "could not publish a change to Redis");
        }
    }
}

async fn subscribe(client: &redis::Client, channel: &str) -> redis::RedisResult<PubSub> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(channel).await?;
    Ok(pubsub)
}

/// Relays the channel into the local broadcast while the fanout lives, subscribing
/// again after a lost connection (to the node the link talks to then: after a failover,
/// the new primary).
async fn relay(link: super::Link, bus: Bus, subscribed: PubSub, local: broadcast::WeakSender<Change>) {
    let mut pubsub = Some(subscribed);
    loop {
        let Some(mut current) = pubsub.take() else { return };
        let mut messages = current.on_message();
        while let Some(message) = messages.next().await {
            let Some(local) = local.upgrade() else { return };
            let payload = message.get_payload::<String>().ok();
            // What does not open was counted and logged (without quoting it) by the keys.
            if let Some(change) = payload.as_deref().and_then(|payload| bus.open(payload)) {
                // An error only means no listener is open right now.
                let _ = local.send(change);
            }
        }
        drop(messages);
        tracing::warn!("lost the Redis change channel; subscribing again");
        while pubsub.is_none() {
            tokio::time::sleep(RECONNECT_AFTER).await;
            let Some(local) = local.upgrade() else { return };
            match subscribe(&link.client(), &bus.channel).await {
                Ok(again) => {
                    // Changes made while we were away are lost: say every list may differ.
                    for change in [Change::ToolsListChanged, Change::PromptsListChanged, Change::ResourcesListChanged] {
                        let _ = local.send(change);
                    }
                    pubsub = Some(again);
                }
                Err(error) => tracing::warn!(%error, "could not subscribe to the Redis change channel"),
            }
        }
    }
}

fn encode(change: &Change) -> String {
    match change {
        Change::ToolsListChanged => "tools".to_owned(),
        Change::PromptsListChanged => "prompts".to_owned(),
        Change::ResourcesListChanged => "resources".to_owned(),
        Change::ResourceUpdated(uri) => format!("updated {uri}"),
        Change::CatalogEdited(edit) => edit.encode(),
    }
}

fn decode(message: &str) -> Option<Change> {
    Some(match message {
        "tools" => Change::ToolsListChanged,
        "prompts" => Change::PromptsListChanged,
        "resources" => Change::ResourcesListChanged,
        edit if edit.starts_with("edit ") => Change::CatalogEdited(crate::routes::catalog::CatalogEdit::decode(edit)?),
        other => Change::ResourceUpdated(other.strip_prefix("updated ")?.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_survive_the_channel() {
        for change in [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
            Change::ResourceUpdated("file:///a b?c=d".into()),
        ] {
            assert_eq!(decode(&encode(&change)), Some(change));
        }
        assert_eq!(decode("nonsense"), None);
    }
}
