//! [`Ask`]: the future of one question, what [`Ctx::ask`](crate::Ctx::ask) and `ask!` return.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::Question;
use crate::mrtr::replay::Replay;

/// The future of one question: see [`Ctx::ask`](crate::Ctx::ask).
#[must_use = "an ask does nothing unless awaited"]
pub struct Ask<Q> {
    replay: Arc<Replay>,
    key: String,
    question: Q,
    fresh: bool,
}

impl<Q> Ask<Q> {
    pub(crate) fn new(replay: Arc<Replay>, key: String, question: Q) -> Self {
        Self { replay, key, question, fresh: false }
    }

    /// Accepts only an answer to this question as the server asked it: never one the
    /// client sent with its first request, before anything was asked. `ask!(fresh, …)`
    /// calls this.
    ///
    /// Use it for consent (a sign-off, a confirmation of a payment): a client may answer
    /// a call's first questions before they are asked, which suits a form it fills in
    /// anyway, but a person must see a consent question first. (Inside a task every ask
    /// is fresh: only answers to the task's open questions count.)
    pub fn fresh(mut self) -> Self {
        self.fresh = true;
        self
    }
}

impl<Q: Question + Unpin> Future for Ask<Q> {
    type Output = Q::Output;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Q::Output> {
        // No waker on purpose: a pending ask is never woken in this round; the replay
        // driver sees the recorded question and ends the round.
        self.replay.lookup(&self.key, &self.question, self.fresh)
    }
}
