//! Handler slots: [`HttpLimits::max_handlers`](super::HttpLimits::max_handlers) requests at work
//! at once, and a share of them per client.
//!
//! The total is a semaphore, whose permits a 2025-11-25 call gives back while it waits for
//! its client's answers (see `legacy::wait`). A 2026-07-28 request also takes a place in
//! a [`FairPool`] of the same size with the client's share: one client can take at most
//! its share, and when every slot is taken the client running the most gives way: its
//! oldest request ends with a "busy" error, so a lighter client's request runs. A
//! 2025-11-25 call never gives way (it may be between a person's answers); the sessions'
//! own bounds keep one client from taking every slot through them.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::base::error::Error;
use crate::bounds::fair::{ClientId, FairPool, Held, Refused};

/// How long a request that made room waits for the slot its displaced request frees.
const MAKE_ROOM_WAIT: Duration = Duration::from_secs(1);

/// The slots of one endpoint.
pub(super) struct Slots {
    total: Arc<Semaphore>,
    shares: FairPool,
}

/// A request's slot: the permit, and for a modern request its place in the shares.
pub(super) struct Slot {
    pub(super) permit: OwnedSemaphorePermit,
    pub(super) place: Option<Held>,
}

impl Slots {
    pub(super) fn new(total: usize, per_client: usize) -> Self {
        Self { total: Arc::new(Semaphore::new(total)), shares: FairPool::new(total, per_client) }
    }

    /// The semaphore of the total, for the legacy bridge's slot.
    pub(super) fn total(&self) -> &Arc<Semaphore> {
        &self.total
    }

    /// A slot for a request of `client`, or why there is none (the busy error).
    pub(super) async fn take(&self, client: &ClientId, legacy: bool) -> Result<Slot, Error> {
        if legacy {
            let permit = self.total.clone().try_acquire_owned().map_err(|_| busy(Refused::Full))?;
            return Ok(Slot { permit, place: None });
        }
        let place = self.shares.admit(client).map_err(busy)?;
        let permit = match self.total.clone().try_acquire_owned() {
            Ok(permit) => permit,
            // Another client's request was just asked to give way (or a legacy call holds
            // the slot): its permit frees as soon as its handler is dropped.
            Err(_) => tokio::time::timeout(MAKE_ROOM_WAIT, self.total.clone().acquire_owned())
                .await
                .ok()
                .and_then(Result::ok)
                .ok_or_else(|| busy(Refused::Full))?,
        };
        Ok(Slot { permit, place: Some(place) })
    }
}

/// The answer of a request past the slots.
fn busy(why: Refused) -> Error {
    Error::internal(match why {
        Refused::Share => {
            "server busy: this client has as many requests running as it may (max_handlers_per_client); \
             retry when one has finished"
        }
        Refused::Full => "server busy: too many requests running; retry shortly",
    })
}

/// The error of a request that gave way to another client's.
pub(super) fn gave_way() -> Error {
    Error::internal(
        "server busy: this request was ended to make room for another client's (this client had the most \
         running); retry shortly",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_client_runs_at_most_its_share_and_the_heaviest_gives_way() {
        let slots = Slots::new(4, 3);
        let mut heavy = Vec::new();
        for _ in 0..3 {
            heavy.push(slots.take(&ClientId::loopback(2), false).await.unwrap());
        }
        let error = slots.take(&ClientId::loopback(2), false).await.err().unwrap();
        assert!(error.message().contains("max_handlers_per_client"), "{}", error.message());
        let _light = slots.take(&ClientId::loopback(3), false).await.unwrap();
        // Full: the heaviest client's oldest request is told to give way; once it has, the
        // newcomer runs.
        let fourth = ClientId::loopback(4);
        let newcomer = slots.take(&fourth, false);
        let oldest = heavy.remove(0);
        let gives_way = async move {
            oldest.place.as_ref().unwrap().give_way().await;
            drop(oldest);
        };
        let (newcomer, ()) = tokio::join!(newcomer, gives_way);
        assert!(newcomer.is_ok());
    }

    #[tokio::test]
    async fn legacy_calls_take_only_the_total() {
        let slots = Slots::new(1, 1);
        let legacy = slots.take(&ClientId::loopback(2), true).await.unwrap();
        assert!(legacy.place.is_none());
        assert!(slots.take(&ClientId::loopback(2), true).await.is_err());
    }
}
