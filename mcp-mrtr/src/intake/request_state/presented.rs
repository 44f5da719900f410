//! A `requestState` as a client presented it, and everything it must be bound to.
//!
//! Opening checks the seal, the binding and the expiry, then decodes the payload. Every
//! failure becomes the one client-facing error; the reason goes to the debug log only,
//! since strangers can send rejected states and must not be able to flood the log.
//! A state that opened is claimed with the single-use guard later, and only if its round
//! is about to take a `once!` step ([`SingleUse`]).

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use super::{BindingDigest, Claim, Consumed, OpenError, Reason, Sealer, StateGuard};
use crate::Error;

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

    /// Checks the seal, the binding and the expiry.
    fn verify(&self) -> Result<(Vec<u8>, SystemTime), OpenError> {
        let token = self.token.as_str().ok_or(OpenError::from(Reason::Malformed))?;
        self.sealer.open(token, self.binding, SystemTime::now())
    }
}

/// An opened state that a round must claim before it takes a side effect: the second
/// claim of one state, by any request, is refused.
pub(crate) struct SingleUse {
    guard: Arc<dyn StateGuard>,
    claim: Claim,
}

impl std::fmt::Debug for SingleUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SingleUse").field("claim", &self.claim).finish_non_exhaustive()
    }
}

impl SingleUse {
    /// The claim of `token` (keyed by its digest, so the guard never holds the sealed
    /// answers), counted against `owner`, kept until `expires`, sealed at `issued`.
    pub(crate) fn new(
        guard: Arc<dyn StateGuard>,
        token: &str,
        owner: u32,
        expires: SystemTime,
        issued: SystemTime,
    ) -> Self {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        Self { guard, claim: Claim::new(digest, owner, expires).issued_at(issued) }
    }

    /// Marks the state used: `Err` with the client's error when it was used before (or
    /// may have been), or cannot be recorded.
    pub(crate) async fn claim(&self) -> Result<(), Error> {
        match self.guard.consume(&self.claim).await {
            Consumed::First => Ok(()),
            Consumed::Again => {
                tracing::debug!("rejected a requestState: {}", OpenError::from(Reason::Replayed));
                Err(OpenError::from(Reason::Replayed).to_error())
            }
            // The state is fine; the server's store is not. Say so, without details.
            Consumed::Unavailable => {
                tracing::debug!("the single-use guard cannot record another state");
                Err(Error::internal("the server cannot take this step right now; try again later"))
            }
        }
    }
}
