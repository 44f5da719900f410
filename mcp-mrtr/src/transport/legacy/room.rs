//! Which session makes room in a full table (the fairness rule of `fair`): the client
//! holding the most gives one up, and a client holding few never does.
//!
//! The newcomer would hold `after` sessions (what it holds, plus the one it opens). Only a
//! client holding at least `after` may give one up: the newcomer itself (counted at
//! `after`) or anyone holding as many or more. Heaviest first; among clients holding
//! equally many, the session whose loss costs least goes: a fresh one (never used since
//! `initialize`) before a used one, the oldest fresh, else the least recently used idle
//! one. A session with a request in flight never goes.
//!
//! So a flood, however it uses its sessions, makes room from its own; clients holding one
//! session each lose it only to a newcomer holding none when nobody holds more, which is
//! to say when the table is full of clients as light as they are.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use super::Session;
use crate::bounds::fair::ClientId;

/// The session to close so that `newcomer` can open one; `None` when every session a
/// heavy enough client holds has a request in flight.
pub(super) fn victim(
    open: &HashMap<String, Arc<Session>>,
    by_client: &HashMap<ClientId, HashSet<String>>,
    newcomer: &ClientId,
) -> Option<String> {
    let after = by_client.get(newcomer).map_or(0, HashSet::len) + 1;
    let mut heavy: Vec<(usize, &HashSet<String>)> = by_client
        .iter()
        .map(|(client, ids)| (if client == newcomer { after } else { ids.len() }, ids))
        .filter(|(weight, _)| *weight >= after)
        .collect();
    heavy.sort_unstable_by_key(|(weight, _)| std::cmp::Reverse(*weight));
    // Clients holding equally many form a tier; the first tier with a session to give gives it.
    heavy
        .chunk_by(|(a, _), (b, _)| a == b)
        .find_map(|tier| {
            let sessions = tier.iter().flat_map(|(_, ids)| ids.iter()).filter_map(|id| open.get(id));
            sessions.filter_map(|session| Some((cost(session)?, session))).min_by_key(|(cost, _)| *cost)
        })
        .map(|(_, session)| session.id.clone())
}

/// What closing `session` costs, lowest first; `None` for a session running a request,
/// which is never closed to make room.
fn cost(session: &Session) -> Option<Cost> {
    if session.is_fresh() {
        Some(Cost::Fresh(session.opened()))
    } else if session.is_idle() {
        Some(Cost::Idle(session.last_used()))
    } else {
        None
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Cost {
    /// Never used: its client may well be a flood. The oldest goes first.
    Fresh(Instant),
    /// Used, nothing running: the least recently used goes first.
    Idle(Instant),
}
