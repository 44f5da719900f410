//! A `requestState` as a client presented it, and everything it must be bound to.
//!
//! Opening checks the seal, the binding and the expiry, then decodes the payload. Every
//! failure becomes the one client-facing error; the reason goes to the debug log only,
//! since strangers can send rejected states and must not be able to flood the log.
//! The steps of an opened state's call are claimed in the single-use guard later, each
//! just before it is taken ([`SingleUse`]).

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use super::{BindingDigest, Claim, Consumed, OpenError, Reason, Sealer, StateGuard, USED};
use crate::base::error::Error;

/// A presented state and what it must be bound to.
pub(crate) struct Presented<'a> {
    /// The `requestState` value as sent: a string, unless the client is broken.
    pub(crate) token: &'a serde_json::Value,
    pub(crate) sealer: &'a Sealer,
    /// What the state must have been sealed for.
    pub(crate) binding: &'a BindingDigest,
    /// The tool name, prompt name or resource URI, for the log.
    pub(crate) target: &'a str,
}

impl Presented<'_> {
    /// The state's payload, decoded by `decode` (`None` when it does not decode), and when
    /// the state expires; or the error for the client.
    pub(crate) fn open<T>(self, decode: impl FnOnce(&[u8]) -> Option<T>) -> Result<(T, SystemTime), Error> {
        let opened = self.verify().and_then(|(payload, expires)| {
            decode(&payload).map(|decoded| (decoded, expires)).ok_or(OpenError::from(Reason::Malformed))
        });
        opened.map_err(|rejected| {
            tracing::debug!(target = %self.target, %rejected, "rejected a requestState");
            rejected.to_error()
        })
    }

    /// The client's error for a state whose call has outlived its lifetime: the one every
    /// rejected state gets.
    pub(crate) fn expired() -> Error {
        OpenError::from(Reason::Expired).to_error()
    }

    /// Checks the seal, the binding and the expiry.
    fn verify(&self) -> Result<(Vec<u8>, SystemTime), OpenError> {
        let token = self.token.as_str().ok_or(OpenError::from(Reason::Malformed))?;
        self.sealer.open(token, self.binding, SystemTime::now())
    }
}

/// What the states of one call may still do once: each `once!` step of the call, and the
/// reading of each single-use state a handler built by hand, is claimed in the guard
/// before it happens, and a second claim, from any state of the same call, is refused.
///
/// Claims are per call, not per token: a client can have a state of the call sealed
/// again (a round that takes no step answers with a fresh sibling state), but every
/// sibling carries the same call id, so none of them takes a step another took.
pub(crate) struct SingleUse {
    guard: Arc<dyn StateGuard>,
    call: [u8; 16],
    owner: u32,
    expires: SystemTime,
    issued: SystemTime,
}

impl std::fmt::Debug for SingleUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SingleUse").field("owner", &self.owner).finish_non_exhaustive()
    }
}

/// What a claim is for: the domain of its digest, so a step's key can never name a
/// state's round.
enum Claimed<'a> {
    Step(&'a str),
    State(u32),
}

impl SingleUse {
    /// The claims of the call `call` (its id, sealed in its states), counted against
    /// `owner`, each kept until `expires` (when the call's last state can expire), made
    /// with a state sealed at `issued`.
    pub(crate) fn new(
        guard: Arc<dyn StateGuard>,
        call: [u8; 16],
        owner: u32,
        expires: SystemTime,
        issued: SystemTime,
    ) -> Self {
        Self { guard, call, owner, expires, issued }
    }

    /// Claims the `once!` step `key` of this call: `Err` with the client's error when a
    /// state of the call took it before (or may have), or it cannot be recorded.
    pub(crate) async fn claim_step(&self, key: &str) -> Result<(), Error> {
        self.claim(Claimed::Step(key)).await
    }

    /// Claims the reading of the call's single-use state sealed when round `round`
    /// closed: one read per call and round, however many states of that round exist.
    pub(crate) async fn spend_state(&self, round: u32) -> Result<(), Error> {
        self.claim(Claimed::State(round)).await
    }

    async fn claim(&self, what: Claimed<'_>) -> Result<(), Error> {
        // A call begun before this release (its id all zeros, `CallId::EARLIER_RELEASE`):
        // its steps were claimed per token, which these claims cannot see.
        if self.call == [0; 16] {
            tracing::debug!("refused a requestState of an earlier release at a step; its call starts over");
            return Err(Error::invalid_params(USED));
        }
        // The guard keeps a digest of the claim, never the call id or the key in clear.
        let mut hash = Sha256::new();
        hash.update(b"mcp-mrtr claim\0");
        hash.update(self.call);
        match what {
            Claimed::Step(key) => {
                hash.update(b"s");
                hash.update(key.as_bytes());
            }
            Claimed::State(round) => {
                hash.update(b"r");
                hash.update(round.to_be_bytes());
            }
        }
        let claim = Claim::new(hash.finalize().into(), self.owner, self.expires).issued_at(self.issued);
        match self.guard.consume(&claim).await {
            Consumed::First => Ok(()),
            Consumed::Again => {
                tracing::debug!("refused a requestState: its step was taken by a state of the same call");
                Err(Error::invalid_params(USED))
            }
            // The state is fine; the server's store is not. Whether the claim landed is
            // not known (a stalled store may still record it), so a retry of this state
            // may be refused: the call starts over, which is always safe.
            Consumed::Unavailable => Err(Error::internal(
                "the server could not record this step, so it did not take it; start the call over",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::intake::request_state::MemoryGuard;

    fn single_use(call: [u8; 16]) -> SingleUse {
        let expires = SystemTime::now() + Duration::from_secs(60);
        SingleUse::new(Arc::new(MemoryGuard::new()), call, 1, expires, SystemTime::now())
    }

    #[tokio::test]
    async fn each_step_and_each_rounds_state_of_a_call_is_claimed_once() {
        let claims = single_use([1; 16]);
        assert_eq!(claims.claim_step("pay").await, Ok(()));
        assert_eq!(claims.claim_step("pay").await.unwrap_err().message(), USED);
        assert_eq!(claims.claim_step("ship").await, Ok(()), "another step of the call");
        assert_eq!(claims.spend_state(2).await, Ok(()), "a round's state is not a step");
        assert_eq!(claims.spend_state(2).await.unwrap_err().message(), USED);
        assert_eq!(claims.spend_state(3).await, Ok(()));
    }

    #[tokio::test]
    async fn a_call_of_an_earlier_release_takes_no_step() {
        let claims = single_use([0; 16]);
        assert_eq!(claims.claim_step("pay").await.unwrap_err().message(), USED);
        assert_eq!(claims.spend_state(1).await.unwrap_err().message(), USED);
    }
}
