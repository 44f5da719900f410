//! Single-use request states: a state that has opened once is refused the second time.
//!
//! Sealing bounds *where* a state opens (method, target, arguments, caller) and *until
//! when*; within that window a client could present it again. Most handlers do not care
//! (re-running a round is harmless by design), but one that must consume a step at most
//! once (a payment, a redemption) can make every state single-use. The price: a client
//! that retries a round after a network failure is refused and must start over.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

/// Remembers which request states have been used.
///
/// The in-memory [`MemoryGuard`] serves one instance; several instances behind a load
/// balancer need an implementation backed by a store they share.
pub trait StateGuard: Send + Sync + 'static {
    /// Records the state `id` as used until `forget_after`; `false` when it was used already.
    fn consume(&self, id: &str, forget_after: SystemTime) -> bool;
}

/// A [`StateGuard`] in this process's memory: for a single instance.
#[derive(Debug, Default)]
pub struct MemoryGuard {
    used: Mutex<HashMap<String, SystemTime>>,
}

impl MemoryGuard {
    /// An empty guard.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StateGuard for MemoryGuard {
    fn consume(&self, id: &str, forget_after: SystemTime) -> bool {
        let mut used = self.used.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // A state past its expiry cannot open anyway, so its entry can go.
        let now = SystemTime::now();
        used.retain(|_, until| *until > now);
        used.insert(id.to_owned(), forget_after).is_none()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_state_is_consumed_once_and_forgotten_after_it_expires() {
        let guard = MemoryGuard::new();
        let later = SystemTime::now() + Duration::from_secs(60);
        assert!(guard.consume("a", later));
        assert!(!guard.consume("a", later));
        assert!(guard.consume("b", later));
        assert!(guard.consume("gone", SystemTime::now() - Duration::from_secs(1)));
        assert!(guard.consume("c", later), "pruning expired entries keeps the live ones");
        assert!(guard.consume("gone", later), "an expired entry is forgotten");
        assert!(!guard.consume("b", later));
    }
}
