//! A 2025-11-25 session's resource subscriptions, and what keeping them costs.
//!
//! `resources/subscribe` keeps a URI for the session's life (an hour idle, longer in use).
//! The sixth audit's E2 found any URI kept, of any length and naming nothing the server
//! serves, up to 1,024 per session: two sessions held 512 MiB after 6 s of 1 MB
//! subscribes, and a client may hold 64 sessions. So a URI is kept only when a resource or
//! template serves it to the session (decided as `resources/read` decides: one unknown
//! and one hidden read alike), only up to [`MAX_URI_BYTES`], and each is counted in bytes
//! ([`cost`]) against its session, its client's share of every session's, and the total
//! (`table/subscriptions.rs`, with the bounds of [`SessionLimits`](super::SessionLimits)).

use std::collections::BTreeSet;

/// The longest URI a session subscribes to: a resource's URI is a name, not a payload.
/// Real ones are tens of bytes, and browsers and proxies refuse URLs past 2 to 8 KiB.
pub(crate) const MAX_URI_BYTES: usize = 2 * 1024;

/// What keeping a URI costs beyond its bytes: its `String` and its place in the set's
/// B-tree (about 40 bytes), and the allocator's rounding.
const ENTRY_BYTES: usize = 64;

/// The bytes a subscription to `uri` counts for.
pub(crate) fn cost(uri: &str) -> usize {
    uri.len() + ENTRY_BYTES
}

/// The URIs one session subscribed to, and the bytes they count for. Changed only under
/// the session table's lock, which keeps the counts of every client's sessions with them.
#[derive(Debug, Default)]
pub(crate) struct Subscribed {
    uris: BTreeSet<String>,
    bytes: usize,
}

impl Subscribed {
    pub(crate) fn contains(&self, uri: &str) -> bool {
        self.uris.contains(uri)
    }

    pub(crate) fn uris(&self) -> impl Iterator<Item = &String> {
        self.uris.iter()
    }

    pub(crate) fn len(&self) -> usize {
        self.uris.len()
    }

    /// The bytes these subscriptions count for.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Keeps `uri`: the bytes it added (none if it was kept already).
    pub(super) fn insert(&mut self, uri: &str) -> usize {
        if !self.uris.insert(uri.to_owned()) {
            return 0;
        }
        self.bytes += cost(uri);
        cost(uri)
    }

    /// Forgets `uri`: the bytes that freed.
    pub(super) fn remove(&mut self, uri: &str) -> usize {
        if !self.uris.remove(uri) {
            return 0;
        }
        self.bytes -= cost(uri);
        cost(uri)
    }

    /// Forgets every URI (the session ended): the bytes that freed.
    pub(super) fn clear(&mut self) -> usize {
        self.uris = BTreeSet::new();
        std::mem::take(&mut self.bytes)
    }
}
