//! What a 2025-11-25 call holds while the bridge waits for its client: no handler slot,
//! and one place among the endpoint's bridge waits.
//!
//! A person may take minutes to fill in a form. Were the call to keep its handler slot
//! meanwhile, a few hundred unanswered questions would turn every request of every client
//! away. So the call gives its slot back while it waits ([`Parked`]) and takes one again
//! to run the next round. The waits have a pool of their own, with a total and a share
//! per client ([`HttpLimits::max_bridge_waits`](crate::http::HttpLimits::max_bridge_waits)); when it is
//! full, the client holding the most gives way: its oldest wait ends with an error that
//! says so, and its questions are withdrawn.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::base::error::Error;
use crate::bounds::fair::{ClientId, FairPool, Held, Refused};

/// How long an answered call waits for a handler slot to run its next round. The answers
/// are in hand (a person may have filled in a form), so a short queue beats a "busy"
/// error that throws them away; a server still full after this is overloaded, and says so.
const SLOT_WAIT: Duration = Duration::from_secs(10);

/// The handler slot a legacy call runs in, shared by the transport (whose [`SlotLease`]
/// frees it when the call ends) and the bridge (which gives it back while it waits).
#[derive(Debug)]
pub(crate) struct HandlerSlot {
    slots: Arc<Semaphore>,
    held: Mutex<Option<OwnedSemaphorePermit>>,
}

impl HandlerSlot {
    /// `permit`, one of `slots`, as a slot the bridge can give back and take again.
    pub(crate) fn new(slots: Arc<Semaphore>, permit: OwnedSemaphorePermit) -> Arc<Self> {
        Arc::new(Self { slots, held: Mutex::new(Some(permit)) })
    }

    /// Gives the slot back: the call waits, or has ended.
    fn release(&self) {
        self.held().take();
    }

    /// Takes a slot again, waiting for one up to [`SLOT_WAIT`].
    async fn retake(&self) -> Result<(), Error> {
        let permit = tokio::time::timeout(SLOT_WAIT, self.slots.clone().acquire_owned()).await;
        match permit {
            Ok(Ok(permit)) => {
                *self.held() = Some(permit);
                Ok(())
            }
            // The semaphore is never closed; were it, no round could run either.
            Ok(Err(_)) | Err(_) => Err(Error::internal(format!(
                "server busy: the client answered, but no handler was free to run the call's next round within {} s; \
                 call again",
                SLOT_WAIT.as_secs()
            ))),
        }
    }

    fn held(&self) -> MutexGuard<'_, Option<OwnedSemaphorePermit>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Frees a call's handler slot when dropped. The transport holds it for as long as the
/// call runs, so the slot frees when the call ends, even if a handler kept its `Ctx` (and
/// with it the bridge) alive.
#[derive(Debug)]
pub(crate) struct SlotLease(Arc<HandlerSlot>);

impl SlotLease {
    pub(crate) fn new(slot: Arc<HandlerSlot>) -> Self {
        Self(slot)
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// How one call's waits for its client are bounded (on HTTP; stdio serves one client and
/// has no handler slots, so its bridge has no bounds).
#[derive(Debug)]
pub(crate) struct WaitBounds {
    /// The endpoint's pool of bridge waits.
    pub(crate) pool: FairPool,
    /// Whose share of the pool a wait of this call counts against.
    pub(crate) client: ClientId,
    /// The call's handler slot, given back while it waits; `None` if it runs without one.
    pub(crate) slot: Option<Arc<HandlerSlot>>,
}

/// A call waiting for its client: it holds a place among the bridge waits and no handler
/// slot, until [`Parked::resume`].
pub(super) struct Parked<'b> {
    slot: Option<&'b HandlerSlot>,
    place: Option<Held>,
}

/// Parks a call before its bridge waits: takes a place in the pool, then gives the
/// handler slot back. Refused (with the slot still held, so the call just ends) when the
/// client holds its whole share, or the pool is full of clients holding no more than it.
pub(super) fn park(bounds: Option<&WaitBounds>) -> Result<Parked<'_>, Error> {
    let Some(bounds) = bounds else { return Ok(Parked { slot: None, place: None }) };
    let place = bounds.pool.admit(&bounds.client).map_err(refused)?;
    let slot = bounds.slot.as_deref();
    if let Some(slot) = slot {
        slot.release();
    }
    Ok(Parked { slot, place: Some(place) })
}

impl Parked<'_> {
    /// Resolves when the pool needs this place for another client (never when unbounded).
    pub(super) async fn give_way(&self) {
        match &self.place {
            Some(place) => place.give_way().await,
            None => std::future::pending().await,
        }
    }

    /// Takes a handler slot again to run the next round. The place is kept until then
    /// (waiting for a slot is waiting too), so it may still have to give way; but a slot
    /// at hand wins over giving way: the call no longer waits, so it no longer needs the
    /// place, and the answers it holds are not thrown away.
    pub(super) async fn resume(self) -> Result<(), Error> {
        let Some(slot) = self.slot else { return Ok(()) };
        tokio::select! {
            biased;
            retaken = slot.retake() => retaken,
            () = self.give_way() => Err(gave_way()),
        }
    }
}

/// The error of a call whose wait gave way to another client's.
pub(super) fn gave_way() -> Error {
    Error::internal(
        "the server needed this call's place among the calls waiting for answers for another client \
         (this client held the most); call again",
    )
}

fn refused(why: Refused) -> Error {
    Error::internal(match why {
        Refused::Share => {
            "this client has as many calls waiting for its answers as it may (max_bridge_waits_per_client); \
             answer or cancel one first"
        }
        Refused::Full => {
            "server busy: too many calls are waiting for their clients' answers (max_bridge_waits); retry shortly"
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bounds of a call of `client` that took one of `slots`.
    fn call(slots: &Arc<Semaphore>, pool: &FairPool, client: u8) -> WaitBounds {
        let permit = slots.clone().try_acquire_owned().expect("a free slot");
        let client = ClientId::loopback(client);
        WaitBounds { pool: pool.clone(), client, slot: Some(HandlerSlot::new(slots.clone(), permit)) }
    }

    #[tokio::test]
    async fn a_parked_call_holds_a_place_and_no_slot_until_it_resumes() {
        let (slots, pool) = (Arc::new(Semaphore::new(1)), FairPool::new(4, 4));
        let bounds = call(&slots, &pool, 2);
        let lease = SlotLease::new(bounds.slot.clone().unwrap());
        let parked = park(Some(&bounds)).unwrap();
        assert_eq!((slots.available_permits(), pool.len()), (1, 1), "the wait holds its place and no slot");
        parked.resume().await.unwrap();
        assert_eq!((slots.available_permits(), pool.len()), (0, 0), "the next round runs in a slot");
        drop(lease);
        assert_eq!(slots.available_permits(), 1, "the end of the call frees its slot");
    }

    #[tokio::test(start_paused = true)]
    async fn an_answered_call_waits_a_while_for_a_slot_then_says_the_server_is_busy() {
        let (slots, pool) = (Arc::new(Semaphore::new(1)), FairPool::new(4, 4));
        let bounds = call(&slots, &pool, 2);
        let parked = park(Some(&bounds)).unwrap();
        let _other = slots.clone().try_acquire_owned().expect("the slot given back");
        let error = parked.resume().await.unwrap_err();
        assert!(error.message().starts_with("server busy"), "{}", error.message());
        assert_eq!(pool.len(), 0);
    }

    #[tokio::test]
    async fn a_refused_call_keeps_its_slot_and_the_heaviest_client_gives_way() {
        let (slots, pool) = (Arc::new(Semaphore::new(4)), FairPool::new(2, 2));
        let (heavy_1, heavy_2, third) = (call(&slots, &pool, 2), call(&slots, &pool, 2), call(&slots, &pool, 2));
        let oldest = park(Some(&heavy_1)).unwrap();
        let _newer = park(Some(&heavy_2)).unwrap();
        let refused = park(Some(&third)).map(|_| ()).unwrap_err();
        assert!(refused.message().contains("max_bridge_waits_per_client"), "{}", refused.message());
        assert_eq!(slots.available_permits(), 3, "only the two parked calls gave their slots back");

        let light = call(&slots, &pool, 3);
        let _light = park(Some(&light)).expect("a client holding nothing takes the heaviest's place");
        tokio::time::timeout(Duration::from_secs(1), oldest.give_way()).await.expect("the oldest wait is told");
        assert_eq!((pool.len(), pool.held_by(&light.client)), (2, 1));
    }

    #[tokio::test]
    async fn an_answered_call_told_to_give_way_still_resumes_when_a_slot_is_free() {
        // Both ready at once: a coin toss would drop the answers about half the time.
        for _ in 0..32 {
            let (slots, pool) = (Arc::new(Semaphore::new(4)), FairPool::new(2, 2));
            let (heavy_1, heavy_2, light) = (call(&slots, &pool, 2), call(&slots, &pool, 2), call(&slots, &pool, 3));
            let (oldest, _newer) = (park(Some(&heavy_1)).unwrap(), park(Some(&heavy_2)).unwrap());
            let _light = park(Some(&light)).expect("the heaviest gives way");
            assert_eq!(pool.held_by(&heavy_1.client), 1, "the oldest wait's place was taken");
            oldest.resume().await.expect("a free slot wins over giving way");
        }
    }
}
