//! Notifications once per call: a replay reaches the progress and log notifications of
//! earlier rounds again, in the same order; the sealed state counts how many were sent, so
//! only the ones after them go out, and keeps the last progress, so it never goes back.

use super::Replay;

impl Replay {
    /// Whether the notification the handler is about to send is new to the client. A
    /// replay reaches the ones earlier rounds sent again, in the same order (the handler
    /// is deterministic up to its asks): those were sent once, and are not sent again.
    pub(crate) fn notification_is_new(&self) -> bool {
        let mut round = self.lock();
        round.notifications += 1;
        if round.notifications <= round.carried.notified {
            return false;
        }
        round.carried.notified = round.notifications;
        true
    }

    /// Whether `progress` moves the call's progress forward (recorded when it does): a
    /// client never sees it go backwards, within a round or across rounds.
    pub(crate) fn progress_advances(&self, progress: f64) -> bool {
        let mut round = self.lock();
        if round.carried.progress.is_some_and(|last| progress <= last) {
            return false;
        }
        round.carried.progress = Some(progress);
        true
    }
}
