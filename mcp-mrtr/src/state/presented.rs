//! A `requestState` as a client presented it, and everything it must be bound to.
//!
//! Opening checks the seal and binding, then records the state with the single-use
//! guard, then decodes the payload. Every failure becomes the one client-facing error;
//! the reason goes to the debug log only, since strangers can send rejected states and
//! must not be able to flood the log.

use std::fmt;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::{BindingDigest, Consumed, OpenError, Reason, StateConfig, StateGuard};
use crate::Error;

/// A presented state and what it must be bound to.
pub(crate) struct Presented<'a> {
    /// The `requestState` value as sent: a string, unless the client is broken.
    pub(crate) token: &'a serde_json::Value,
    pub(crate) config: &'a StateConfig,
    /// Records used states; `None` when states are reusable.
    pub(crate) guard: Option<&'a dyn StateGuard>,
    /// What the state must have been sealed for.
    pub(crate) binding: &'a BindingDigest,
    /// The tool name, prompt name or resource URI, for the log.
    pub(crate) target: &'a str,
}

impl Presented<'_> {
    /// The state's payload, decoded by `decode` (`None` when it does not decode), or the
    /// error for the client.
    pub(crate) async fn open<T>(self, decode: impl FnOnce(&[u8]) -> Option<T>) -> Result<T, Error> {
        let opened =
            self.verify().await.and_then(|payload| decode(&payload).ok_or(OpenError::from(Reason::Malformed).into()));
        opened.map_err(|rejected| {
            tracing::debug!(target = %self.target, %rejected, "rejected a requestState");
            rejected.to_error()
        })
    }

    /// Checks the seal, the binding and the expiry, then marks the state used.
    async fn verify(&self) -> Result<Vec<u8>, Rejected> {
        let token = self.token.as_str().ok_or(OpenError::from(Reason::Malformed))?;
        let now = SystemTime::now();
        let (payload, expires) = self.config.open(token, self.binding, now)?;
        if let Some(guard) = self.guard {
            // Keyed by a digest, so the guard never holds the sealed answers themselves;
            // kept as long as the state could still open.
            let id = crate::hex::encode(&Sha256::digest(token.as_bytes()));
            match guard.consume(&id, expires.duration_since(now).unwrap_or(Duration::ZERO)).await {
                Consumed::First => {}
                Consumed::Again => return Err(OpenError::from(Reason::Replayed).into()),
                Consumed::Unavailable => return Err(Rejected::GuardUnavailable),
            }
        }
        Ok(payload)
    }
}

/// Why a presented state was not used: it was rejected, or the server could not record
/// it as used.
enum Rejected {
    State(OpenError),
    GuardUnavailable,
}

impl From<OpenError> for Rejected {
    fn from(error: OpenError) -> Self {
        Self::State(error)
    }
}

impl Rejected {
    fn to_error(&self) -> Error {
        match self {
            Self::State(rejected) => rejected.to_error(),
            // The state is fine; the server is at its limit. Say so, without details.
            Self::GuardUnavailable => {
                Error::internal("the server cannot take more multi-round calls right now; try again later")
            }
        }
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::State(rejected) => rejected.fmt(f),
            Self::GuardUnavailable => f.write_str("the single-use guard cannot record another state"),
        }
    }
}
