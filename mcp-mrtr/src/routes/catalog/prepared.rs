//! Prepared list bodies: the serialized `*/list` pages and `server/discover` body of one
//! catalog snapshot, built on first use and then served as bytes until the catalog
//! changes.
//!
//! A body depends on the catalog, on the server's configuration (page size, capabilities,
//! instructions: fixed while serving), on the page's cursor and, when a visibility filter
//! is set, on which entries the request may see. So a shelf belongs to one [`Server`]
//! value (clones start empty), is emptied when a newer catalog generation is seen, and
//! files each body under its page and its *visible set*: callers who see the same
//! entries share one body, however many they are, and a filter that changes its mind
//! simply selects another body.
//!
//! [`Server`]: crate::Server

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Bodies kept per catalog generation. Each distinct visible set of each page takes one;
/// past this many, the shelf starts over rather than growing with the number of callers.
const MAX_BODIES: usize = 64;

/// A serialized result body: one JSON object, written once, copied into each reply.
pub(crate) type PreparedBody = Arc<str>;

/// The bodies prepared for the current catalog generation.
#[derive(Default)]
pub(crate) struct Prepared {
    shelf: Mutex<Shelf>,
}

/// A server's clone may be configured differently (page size, filter), so it never
/// shares bodies with the original.
impl Clone for Prepared {
    fn clone(&self) -> Self {
        Self::default()
    }
}

#[derive(Default)]
struct Shelf {
    generation: u64,
    bodies: HashMap<BodyKey, PreparedBody>,
}

/// What one prepared body answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BodyKey {
    pub(crate) list: List,
    /// The position the page starts after (0 for the first page).
    pub(crate) after: u64,
    /// Which entries of the list the request may see, one bit per catalog entry in
    /// order; `None` when the server has no visibility filter (everyone sees all).
    pub(crate) visible: Option<Box<[u64]>>,
}

/// The bodies that are prepared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum List {
    /// The tools, as one kind of client is shown them.
    Tools(ToolsFor),
    Prompts,
    /// The concrete resources; `apps`: with the apps (for a client that renders them).
    Resources {
        apps: bool,
    },
    Templates,
    Discover,
}

/// Which tools a client is shown, and how.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct ToolsFor {
    /// A 2025-11-25 session, of a server that serves tasks: no tool that runs only as one.
    pub(crate) session: bool,
    /// A client that renders apps: every tool with its `_meta.ui`. Any other is shown
    /// tools without it, and none that only an app may call.
    pub(crate) apps: bool,
}

impl List {
    /// The result member holding the entries.
    pub(crate) fn member(self) -> &'static str {
        match self {
            Self::Tools(_) => "tools",
            Self::Prompts => "prompts",
            Self::Resources { .. } => "resources",
            Self::Templates => "resourceTemplates",
            Self::Discover => "",
        }
    }

    /// The name a cursor carries, so a cursor of one list is refused by another.
    pub(crate) fn cursor_name(self) -> &'static str {
        match self {
            // One list's positions: a cursor of either serves the other.
            Self::Tools(_) => "tools",
            Self::Prompts => "prompts",
            Self::Resources { .. } => "resources",
            Self::Templates => "templates",
            Self::Discover => "discover",
        }
    }
}

impl Prepared {
    /// The body filed under `key` for catalog `generation`, built by `build` if there is
    /// none yet. The build runs outside the lock; a body built from a snapshot older than
    /// what the shelf holds is served to its own request but never filed.
    pub(crate) fn get_or_build<E>(
        &self,
        generation: u64,
        key: BodyKey,
        build: impl FnOnce() -> Result<String, E>,
    ) -> Result<PreparedBody, E> {
        if let Some(body) = self.lookup(generation, &key) {
            return Ok(body);
        }
        let body: PreparedBody = build()?.into();
        let mut store = self.shelf.lock().unwrap_or_else(PoisonError::into_inner);
        if generation > store.generation {
            *store = Shelf { generation, bodies: HashMap::new() };
        }
        if generation == store.generation {
            if store.bodies.len() >= MAX_BODIES {
                store.bodies.clear();
            }
            store.bodies.insert(key, body.clone());
        }
        Ok(body)
    }

    fn lookup(&self, generation: u64, key: &BodyKey) -> Option<PreparedBody> {
        let store = self.shelf.lock().unwrap_or_else(PoisonError::into_inner);
        (store.generation == generation).then(|| store.bodies.get(key).cloned()).flatten()
    }
}

/// A bit set over catalog positions: which entries a request may see.
pub(crate) fn mask(seen: impl ExactSizeIterator<Item = bool>) -> Box<[u64]> {
    let mut bits = vec![0u64; seen.len().div_ceil(64)];
    for (index, yes) in seen.enumerate() {
        if yes {
            bits[index / 64] |= 1 << (index % 64);
        }
    }
    bits.into_boxed_slice()
}

/// Whether position `index` is set in `mask`.
pub(crate) fn is_set(mask: &[u64], index: usize) -> bool {
    mask.get(index / 64).is_some_and(|word| word & (1 << (index % 64)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(after: u64) -> BodyKey {
        BodyKey { list: List::Tools(ToolsFor::default()), after, visible: None }
    }

    #[test]
    fn a_body_is_built_once_per_generation_and_key() {
        let prepared = Prepared::default();
        let mut builds = 0;
        let mut get = |generation, after| {
            prepared
                .get_or_build::<()>(generation, key(after), || {
                    builds += 1;
                    Ok(format!("{{\"g\":{generation}}}"))
                })
                .unwrap()
        };
        assert_eq!(&*get(1, 0), "{\"g\":1}");
        assert_eq!(&*get(1, 0), "{\"g\":1}");
        get(1, 5);
        assert_eq!(&*get(2, 0), "{\"g\":2}", "a newer catalog is never served an older body");
        assert_eq!(&*get(1, 0), "{\"g\":1}", "an older snapshot gets its own body");
        assert_eq!(&*get(2, 0), "{\"g\":2}", "and does not displace the newer one");
        assert_eq!(builds, 4);
    }

    #[test]
    fn the_shelf_stays_bounded() {
        let prepared = Prepared::default();
        for after in 0..1000 {
            prepared.get_or_build::<()>(1, key(after), || Ok("{}".into())).unwrap();
        }
        assert!(prepared.shelf.lock().unwrap().bodies.len() <= MAX_BODIES);
    }

    #[test]
    fn masks_hold_one_bit_per_position() {
        let seen: Vec<bool> = [true, false, true].into_iter().chain((0..70).map(|i| i == 66)).collect();
        let bits = mask(seen.into_iter());
        assert_eq!(bits.len(), 2);
        assert!(is_set(&bits, 0) && !is_set(&bits, 1) && is_set(&bits, 2) && is_set(&bits, 69));
        assert!(!is_set(&bits, 68) && !is_set(&bits, 500));
    }
}
