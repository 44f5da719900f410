//! The catalog changes one client hears, whichever stream carries them: a
//! `subscriptions/listen` stream (`listen`), or a 2025-11-25 session's own (its `GET`
//! stream over HTTP, its pipe on stdio: `transport/legacy/updates.rs`).
//!
//! Every such stream takes a place in one pool ([`Subscriptions::max_streams`](crate::catalog::Subscriptions::max_streams),
//! a share per client), hears the same fanout, and ends the same ways: the server shuts
//! down, the stream reaches its lifetime, its client holds the most and another needs the
//! place, or it does not keep up. What a change becomes on the stream (tagged with a
//! listen request's id, or not; filtered by what the client asked for) is the caller's.
//! A session holds one place: its older stream's place is released
//! ([`Hearing::release_early`]) before its newer stream is admitted, so a client
//! reconnecting at its share takes over its own place instead of being refused.

use std::future::Future;
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::sync::mpsc::error::TrySendError;

use super::Engine;
use crate::base::error::Error;
use crate::bounds::fair::{ClientId, Held, Refused, Release};
use crate::protocol::{Notification, Notifier, Outgoing};
use crate::routes::catalog::{Change, ListenerGuard, RequestView};

/// A place among the streams of changes, and the changes from the moment it was taken.
pub(crate) struct Hearing {
    changes: broadcast::Receiver<Change>,
    place: Held,
    _open: ListenerGuard,
}

/// Why a stream of changes ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The server shuts down, the stream reached its lifetime, gave its place to another
    /// client, or was told to stop: a clean end.
    Stopped,
    /// Changes came faster than the client took them (the stream's channel was full), or
    /// the stream fell behind the fanout: some were not delivered.
    Behind,
    /// The client went away.
    Gone,
}

impl Engine {
    /// A place for one stream of `client`'s, hearing every change from now on; `None`
    /// when this server serves no changes (no [`Subscriptions`](crate::catalog::Subscriptions)).
    pub(crate) fn hear(&self, client: &ClientId) -> Result<Option<Hearing>, Error> {
        let (Some(listen), Some(_)) = (&self.catalog_config.listen, self.catalog.fanout()) else { return Ok(None) };
        let place = listen.streams.admit(client).map_err(|refused| {
            Error::internal(match refused {
                Refused::Share => format!(
                    "too many listen streams from this client (at most {}, sessions' GET streams included); \
                     end one before listening again",
                    listen.max_streams_per_client
                ),
                Refused::Full => format!(
                    "the server holds its most listen streams ({}, sessions' GET streams included); retry later",
                    listen.max_streams
                ),
            })
        })?;
        // Subscribed before the caller acknowledges anything, so no later change is missed;
        // to this instance's relay of the fanout, which applies remote edits first.
        Ok(Some(Hearing { changes: self.catalog.subscribe(), place, _open: self.catalog.open_listener() }))
    }

    /// Whether the request `view` describes may read `uri`: the decision `resources/read`
    /// takes, taken again for each change a stream would tell of.
    pub(crate) fn may_read(&self, view: &RequestView<'_>, uri: &str) -> bool {
        self.reach_resource(&self.catalog(), view, uri).is_ok()
    }

    /// How long one stream of changes lasts (`Subscriptions::max_lifetime`).
    pub(crate) fn stream_lifetime(&self) -> Duration {
        self.catalog_config.listen.as_ref().map_or(Duration::ZERO, |listen| listen.max_lifetime)
    }
}

impl Hearing {
    /// What frees this stream's place before the stream ends: a 2025-11-25 session's
    /// newer stream takes over the place of its older one, which is still ending.
    pub(crate) fn release_early(&self) -> Release {
        self.place.release_early()
    }

    /// Sends `notifier` what `note` makes of each change, until `stop` resolves, the server
    /// shuts down (`draining`), `lifetime` passes (`None`: never), the place must give way,
    /// or the stream cannot keep up. Never waits on the client: a full channel ends it.
    pub(crate) async fn relay(
        &mut self,
        notifier: &Notifier,
        stop: impl Future<Output = ()>,
        lifetime: Option<Duration>,
        mut note: impl FnMut(&Change) -> Option<Notification>,
    ) -> Ended {
        let lifetime = async move {
            match lifetime {
                Some(lifetime) => tokio::time::sleep(lifetime).await,
                None => std::future::pending().await,
            }
        };
        let give_way = self.place.give_way();
        tokio::pin!(stop, lifetime, give_way);
        loop {
            let change = tokio::select! {
                change = self.changes.recv() => change,
                () = &mut stop => return Ended::Stopped,
                () = &mut lifetime => {
                    tracing::debug!("ending a stream of changes at its maximum lifetime");
                    return Ended::Stopped;
                }
                // Client-triggerable, like the ends below: DEBUG, so no client can flood the log.
                () = &mut give_way => {
                    tracing::debug!("ending a stream of changes: its client holds the most and another needs the place");
                    return Ended::Stopped;
                }
            };
            match change {
                Ok(change) => {
                    let Some(note) = note(&change) else { continue };
                    match notifier.try_send(Box::new(Outgoing::Notification(note))) {
                        Ok(()) => {}
                        Err(TrySendError::Full(_)) => {
                            tracing::debug!("a stream of changes whose client does not read it");
                            return Ended::Behind;
                        }
                        Err(TrySendError::Closed(_)) => return Ended::Gone,
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "a stream of changes fell behind the fanout");
                    return Ended::Behind;
                }
                Err(broadcast::error::RecvError::Closed) => return Ended::Stopped,
            }
        }
    }
}
