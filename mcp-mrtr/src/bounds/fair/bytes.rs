//! [`ByteShares`]: bytes held per client against a total and a share, for pools whose
//! holders differ in size (a 2025-11-25 session's resource subscriptions), where
//! [`FairPool`](super::FairPool) counts places.
//!
//! It only keeps the accounts and says who should give way; what giving way means (a
//! session closed, say) is the owner's, who also holds the lock it lives under: the
//! accounts change with what they count, in one critical section.

use std::collections::HashMap;

use super::{ClientId, Refused};

/// Bytes held per client: at most `share` each, at most `total` together.
///
/// Admission of `bytes` more for a client holding `c`:
///
/// 1. `c + bytes` past the share: refused ([`Refused::Share`]); only this client is affected.
/// 2. Room in the total: admitted.
/// 3. Otherwise the clients holding more than `c + bytes` should give some up, heaviest
///    first ([`ByteShares::heavier_than`]); when none does, refused ([`Refused::Full`]).
#[derive(Debug)]
pub(crate) struct ByteShares {
    total: usize,
    share: usize,
    held: usize,
    by_client: HashMap<ClientId, usize>,
}

impl ByteShares {
    /// Accounts of `total` bytes, `share` per client (at most `total`).
    pub(crate) fn new(total: usize, share: usize) -> Self {
        Self { total, share: share.min(total), held: 0, by_client: HashMap::new() }
    }

    /// The bytes `client` holds.
    pub(crate) fn held_by(&self, client: &ClientId) -> usize {
        self.by_client.get(client).copied().unwrap_or(0)
    }

    /// Whether `client` may take `bytes` more now: `Err(Share)` past its share,
    /// `Err(Full)` when the total has no room (see [`heavier_than`](Self::heavier_than)
    /// for who could make some).
    pub(crate) fn room_for(&self, client: &ClientId, bytes: usize) -> Result<(), Refused> {
        if self.held_by(client).saturating_add(bytes) > self.share {
            return Err(Refused::Share);
        }
        if self.held.saturating_add(bytes) > self.total {
            return Err(Refused::Full);
        }
        Ok(())
    }

    /// The clients holding more than `client` would after taking `bytes`, heaviest
    /// first: those that give way for it when the total is full. One holding less never
    /// does, so a flood only ever displaces the flood.
    pub(crate) fn heavier_than(&self, client: &ClientId, bytes: usize) -> Vec<ClientId> {
        let after = self.held_by(client).saturating_add(bytes);
        let mut heavier: Vec<(&ClientId, usize)> = self
            .by_client
            .iter()
            .filter(|(other, held)| *other != client && **held > after)
            .map(|(c, h)| (c, *h))
            .collect();
        heavier.sort_unstable_by_key(|(_, held)| std::cmp::Reverse(*held));
        heavier.into_iter().map(|(other, _)| other.clone()).collect()
    }

    /// Counts `bytes` more against `client` (admitted by [`room_for`](Self::room_for)).
    pub(crate) fn take(&mut self, client: &ClientId, bytes: usize) {
        if bytes == 0 {
            return;
        }
        *self.by_client.entry(client.clone()).or_default() += bytes;
        self.held += bytes;
    }

    /// Gives back `bytes` of `client`'s.
    pub(crate) fn give_back(&mut self, client: &ClientId, bytes: usize) {
        let Some(held) = self.by_client.get_mut(client) else { return };
        let bytes = bytes.min(*held);
        *held -= bytes;
        self.held -= bytes;
        if *held == 0 {
            self.by_client.remove(client);
        }
    }

    /// The bytes held by every client together.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_holds_at_most_its_share_and_a_full_total_names_the_heavier_ones() {
        let mut shares = ByteShares::new(100, 40);
        let (a, b, c) = (ClientId::loopback(1), ClientId::loopback(2), ClientId::loopback(3));
        shares.take(&a, 40);
        assert_eq!(shares.room_for(&a, 1), Err(Refused::Share));
        shares.take(&b, 30);
        shares.take(&c, 25);
        assert_eq!(shares.room_for(&c, 5), Ok(()));
        assert_eq!(shares.room_for(&c, 6), Err(Refused::Full));
        assert_eq!(shares.heavier_than(&c, 4), [a.clone(), b.clone()], "heaviest first, never c itself");
        assert_eq!(shares.heavier_than(&c, 6), std::slice::from_ref(&a), "b holds 30, less than the 31 c would");
        shares.give_back(&a, 40);
        assert_eq!((shares.held_by(&a), shares.held()), (0, 55));
        assert_eq!(shares.room_for(&c, 6), Ok(()));
    }
}
