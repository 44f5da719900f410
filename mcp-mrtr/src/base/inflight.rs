//! Requests in flight, by id, so a `notifications/cancelled` can stop one.
//!
//! One mechanism for every transport that has client-sent cancellation: a stdio
//! connection keeps one [`InFlight`], and so does each legacy (2025-11-25) HTTP session.
//! (A 2026-07-28 client on HTTP cancels by closing the response stream instead.)
//!
//! A cancelled request's future is dropped where it stands, which drops its handler and
//! everything the handler was waiting for (the bridge's pending questions included), and
//! its transport sends nothing more for it: no response, no further request.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::future::{AbortHandle, Abortable};

use crate::protocol::RequestId;

/// The requests of one client connection or session that can still be cancelled.
#[derive(Clone, Debug, Default)]
pub(crate) struct InFlight {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// By request id: which registration holds the id, and how to stop it.
    running: Mutex<HashMap<RequestId, (u64, AbortHandle)>>,
    next_ticket: AtomicU64,
}

impl InFlight {
    /// Runs `work` as request `id` until it finishes (`Some`) or is cancelled (`None`).
    ///
    /// The request counts as in flight from this call until the returned future
    /// finishes or is dropped.
    pub(crate) fn track<F: Future>(&self, id: RequestId, work: F) -> impl Future<Output = Option<F::Output>> {
        let (handle, registration) = AbortHandle::new_pair();
        let ticket = self.inner.next_ticket.fetch_add(1, Ordering::Relaxed);
        // A client that reuses the id of a running request (JSON-RPC forbids it) can then
        // cancel only the newer one; the older one still ends normally.
        self.running().insert(id.clone(), (ticket, handle));
        let registered = Registered { inflight: self.clone(), id, ticket };
        async move {
            let _registered = registered;
            Abortable::new(work, registration).await.ok()
        }
    }

    /// Cancels request `id`; `false` when no such request is running (unknown, or
    /// already finished), which the spec says to ignore.
    pub(crate) fn cancel(&self, id: &RequestId) -> bool {
        match self.running().remove(id) {
            Some((_, handle)) => {
                handle.abort();
                true
            }
            None => false,
        }
    }

    /// How many requests are running.
    pub(crate) fn len(&self) -> usize {
        self.running().len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cancels every running request (the session they belong to ended).
    pub(crate) fn cancel_all(&self) {
        for (_, (_, handle)) in self.running().drain() {
            handle.abort();
        }
    }

    fn running(&self) -> MutexGuard<'_, HashMap<RequestId, (u64, AbortHandle)>> {
        self.inner.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Removes its request from the table when the request ends, however it ends.
struct Registered {
    inflight: InFlight,
    id: RequestId,
    ticket: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut running = self.inflight.running();
        if running.get(&self.id).is_some_and(|(ticket, _)| *ticket == self.ticket) {
            running.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_cancelled_request_ends_without_output_and_leaves_the_table() {
        let inflight = InFlight::default();
        let id = RequestId::from(7);
        let pending = inflight.track(id.clone(), std::future::pending::<()>());
        assert_eq!(inflight.running().len(), 1);
        let canceller = inflight.clone();
        let cancel = async move {
            tokio::task::yield_now().await;
            assert!(canceller.cancel(&RequestId::from(7)));
        };
        let (out, ()) = tokio::time::timeout(Duration::from_secs(5), async { tokio::join!(pending, cancel) })
            .await
            .expect("cancellation ends the request");
        assert_eq!(out, None);
        assert_eq!(inflight.running().len(), 0);
        assert!(!inflight.cancel(&id), "a finished request is not running");
    }

    #[tokio::test]
    async fn a_finished_request_leaves_the_table_and_cannot_be_cancelled() {
        let inflight = InFlight::default();
        assert_eq!(inflight.track(RequestId::from(1), async { 5 }).await, Some(5));
        assert_eq!(inflight.running().len(), 0);
        assert!(!inflight.cancel(&RequestId::from(1)));
    }

    #[tokio::test]
    async fn a_reused_id_keeps_the_newer_registration() {
        let inflight = InFlight::default();
        let older = inflight.track(RequestId::from(1), async { "older" });
        let newer = inflight.track(RequestId::from(1), std::future::pending::<&str>());
        assert_eq!(older.await, Some("older"));
        assert_eq!(inflight.running().len(), 1, "the older request's end does not unregister the newer one");
        assert!(inflight.cancel(&RequestId::from(1)));
        assert_eq!(newer.await, None);
    }
}
