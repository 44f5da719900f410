//! The catalog a server serves: tools, prompts and resources that change while it runs,
//! and the `subscriptions/listen` streams that hear of the changes.
//!
//! [`CatalogHandle`] changes the catalog (from [`Server::catalog`](crate::Server::catalog)
//! or, in a handler, [`Ctx::catalog`](crate::Ctx::catalog)); [`Subscriptions`] turns
//! the streams on; a [`ChangeFanout`] carries changes between instances (the `redis`
//! feature's `RedisFanout`); [`RequestView`] and [`Item`] are what a visibility filter
//! decides on. See the [catalog chapter](crate::guide::serving).

// For maintainers:
//
// The live catalog: tools, prompts and resources that change while the server runs,
// `subscriptions/listen` streams that hear about the changes, a per-request view of the
// lists, and their pagination.
//
// One door in: the engine (`dispatch::Engine`) holds an `Arc<CatalogState>`; everything else
// reaches the catalog through a [`CatalogHandle`] (changes) or the engine's snapshot
// accessors (`Engine::catalog`, `find_tool`, …), which dispatch defines on top of this. A request reads one immutable [`Catalog`] snapshot;
// a change clones the (small: `Arc`s only) catalog, edits the copy, swaps it in and then
// tells listeners through the [`ChangeFanout`].

mod fanout_keys;
mod handle;
mod listen;
mod prepared;
mod shared;
mod view;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

pub use self::fanout_keys::FanoutKeys;
pub(crate) use self::handle::WeakHandle;
pub use self::handle::{CatalogError, CatalogHandle, Entries};
pub(crate) use self::listen::DEFAULT_KEEP_ALIVE;
pub use self::listen::{Change, ChangeFanout, MemoryFanout, Subscriptions};
pub(crate) use self::prepared::{is_set, mask, BodyKey, List, Prepared, PreparedBody, ToolsFor};
pub use self::shared::CatalogEdit;
pub(crate) use self::shared::Reach;
use self::shared::{Action, Relay};
pub(crate) use self::view::CatalogConfig;
pub use self::view::{Item, RequestView};
use crate::routes::handler::{PromptRoute, ResourceRoute, ToolRoute};

/// The changeable part of a server, shared by the server, its clones and its handles.
pub(crate) struct CatalogState {
    catalog: RwLock<Arc<Catalog>>,
    /// The position the next added entry gets: cursors name positions, so positions are
    /// never reused.
    next_seq: AtomicU64,
    /// Where changes go once the server serves `subscriptions/listen`.
    fanout: RwLock<Option<Arc<dyn ChangeFanout>>>,
    /// Listen streams open on this instance right now.
    listeners: AtomicUsize,
    /// What the fanout carries, relayed to this instance's listen streams (`shared`).
    relay: Relay,
}

impl Default for CatalogState {
    fn default() -> Self {
        Self {
            catalog: RwLock::default(),
            next_seq: AtomicU64::new(1),
            fanout: RwLock::default(),
            listeners: AtomicUsize::new(0),
            relay: Relay::default(),
        }
    }
}

/// One consistent view of everything registered.
#[derive(Clone, Default)]
pub(crate) struct Catalog {
    /// Counts the edits that led here: what prepared list bodies are filed under.
    pub(crate) generation: u64,
    pub(crate) tools: Vec<Entry<ToolRoute>>,
    pub(crate) prompts: Vec<Entry<PromptRoute>>,
    pub(crate) resources: Vec<Entry<ResourceRoute>>,
}

/// A registered route, its position in listing order, whether it is served, and whether
/// other instances' edits reach it.
pub(crate) struct Entry<T> {
    pub(crate) route: Arc<T>,
    /// Strictly increasing in registration order; stable while the entry lives.
    pub(crate) seq: u64,
    pub(crate) enabled: bool,
    pub(crate) reach: Reach,
}

impl<T> Clone for Entry<T> {
    fn clone(&self) -> Self {
        Self { route: self.route.clone(), seq: self.seq, enabled: self.enabled, reach: self.reach }
    }
}

impl Catalog {
    /// The enabled routes of one kind, in listing order.
    pub(crate) fn enabled<K: Kind>(&self) -> impl Iterator<Item = &Arc<K>> {
        K::entries(self).iter().filter(|e| e.enabled).map(|e| &e.route)
    }

    /// Whether anything of this kind is registered (enabled or not): what decides that
    /// the kind's methods and capability are served.
    pub(crate) fn has<K: Kind>(&self) -> bool {
        !K::entries(self).is_empty()
    }

    /// The enabled route of this kind registered under `key`.
    pub(crate) fn find<K: Kind>(&self, key: &str) -> Option<Arc<K>> {
        self.enabled::<K>().find(|route| route.key() == key).cloned()
    }
}

/// What tools, prompts and resources have in common as catalog entries.
pub(crate) trait Kind: Sized + Send + Sync + 'static {
    /// What the kind is called in messages.
    const NOUN: &'static str;
    /// The change listeners hear when the list of this kind changes.
    const CHANGED: Change;
    /// The kind as a shared edit names it.
    const EDITED: shared::EditKind;
    /// The name (tools, prompts) or URI / URI template (resources) that identifies it.
    fn key(&self) -> &str;
    /// Why registration refuses it, if it does (see `private::Checked` and `handler/attach.rs`).
    fn unfit(&self) -> Option<&str>;
    /// Readies a route added at run time, or refuses it: what the builder checks when the
    /// server is built, checked when the route arrives instead.
    fn admit(&mut self) -> Result<(), CatalogError> {
        Ok(())
    }
    fn entries(catalog: &Catalog) -> &Vec<Entry<Self>>;
    fn entries_mut(catalog: &mut Catalog) -> &mut Vec<Entry<Self>>;
}

impl Kind for ToolRoute {
    const NOUN: &'static str = "tool";
    const CHANGED: Change = Change::ToolsListChanged;
    const EDITED: shared::EditKind = shared::EditKind::Tool;
    fn key(&self) -> &str {
        &self.tool.name
    }
    fn unfit(&self) -> Option<&str> {
        self.unfit.as_deref()
    }
    fn admit(&mut self) -> Result<(), CatalogError> {
        if !crate::routes::handler::valid_tool_name(&self.tool.name) {
            return Err(CatalogError::InvalidName(self.tool.name.clone()));
        }
        match crate::base::header_values::declared(&self.tool.input_schema) {
            Ok(headers) => self.headers = headers,
            Err(problem) => return Err(CatalogError::InvalidHeader { tool: self.tool.name.clone(), problem }),
        }
        Ok(())
    }
    fn entries(catalog: &Catalog) -> &Vec<Entry<Self>> {
        &catalog.tools
    }
    fn entries_mut(catalog: &mut Catalog) -> &mut Vec<Entry<Self>> {
        &mut catalog.tools
    }
}

impl Kind for PromptRoute {
    const NOUN: &'static str = "prompt";
    const CHANGED: Change = Change::PromptsListChanged;
    const EDITED: shared::EditKind = shared::EditKind::Prompt;
    fn key(&self) -> &str {
        &self.prompt.name
    }
    fn unfit(&self) -> Option<&str> {
        self.unfit.as_deref()
    }
    fn entries(catalog: &Catalog) -> &Vec<Entry<Self>> {
        &catalog.prompts
    }
    fn entries_mut(catalog: &mut Catalog) -> &mut Vec<Entry<Self>> {
        &mut catalog.prompts
    }
}

impl Kind for ResourceRoute {
    const NOUN: &'static str = "resource";
    const CHANGED: Change = Change::ResourcesListChanged;
    const EDITED: shared::EditKind = shared::EditKind::Resource;
    fn key(&self) -> &str {
        self.kind.key()
    }
    fn unfit(&self) -> Option<&str> {
        self.unfit.as_deref()
    }
    fn entries(catalog: &Catalog) -> &Vec<Entry<Self>> {
        &catalog.resources
    }
    fn entries_mut(catalog: &mut Catalog) -> &mut Vec<Entry<Self>> {
        &mut catalog.resources
    }
}

impl CatalogState {
    /// The current snapshot: read it once per request.
    pub(crate) fn snapshot(&self) -> Arc<Catalog> {
        self.catalog.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Adds a route at the end of its list; with `Reach::Here`, other instances' edits
    /// never reach it.
    pub(crate) fn add<K: Kind>(&self, route: K, reach: Reach) -> Result<(), CatalogError> {
        self.edit(|catalog| {
            let entries = K::entries_mut(catalog);
            if let Some(problem) = route.unfit() {
                return Err(CatalogError::Unfit {
                    kind: K::NOUN,
                    key: route.key().to_owned(),
                    problem: problem.to_owned(),
                });
            }
            if entries.iter().any(|e| e.route.key() == route.key()) {
                return Err(CatalogError::Taken { kind: K::NOUN, key: route.key().to_owned() });
            }
            let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
            entries.push(Entry { route: Arc::new(route), seq, enabled: true, reach });
            Ok(K::CHANGED)
        })
    }

    /// Puts `routes` in place of the routes under `keys`, in one edit: no request sees a
    /// list with neither (a mount following its upstream). This instance's only, each
    /// instance following its upstream itself. A route whose key another route holds,
    /// or that cannot be served, is refused and left out. Returns the keys taken, and why
    /// each refused route was.
    #[cfg(feature = "client")]
    pub(crate) fn replace<K: Kind>(&self, keys: &[String], routes: Vec<K>) -> (Vec<String>, Vec<CatalogError>) {
        let (mut taken, mut refused) = (Vec::new(), Vec::new());
        let _ = self.edit(|catalog| {
            let entries = K::entries_mut(catalog);
            entries.retain(|e| !keys.iter().any(|key| key == e.route.key()));
            for mut route in routes {
                let key = route.key().to_owned();
                let problem = route.unfit().map(|problem| CatalogError::Unfit {
                    kind: K::NOUN,
                    key: key.clone(),
                    problem: problem.to_owned(),
                });
                match problem.map_or_else(|| route.admit(), Err) {
                    Err(error) => refused.push(error),
                    Ok(()) if entries.iter().any(|e| e.route.key() == key) => {
                        refused.push(CatalogError::Taken { kind: K::NOUN, key });
                    }
                    Ok(()) => {
                        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
                        entries.push(Entry { route: Arc::new(route), seq, enabled: true, reach: Reach::Here });
                        taken.push(key);
                    }
                }
            }
            Ok::<_, ()>(K::CHANGED)
        });
        (taken, refused)
    }

    /// Removes the route under `key`; `false` if there is none. With `Reach::Everywhere`,
    /// instances sharing the fanout remove theirs too (see `shared`).
    pub(crate) fn remove<K: Kind>(&self, key: &str, reach: Reach) -> bool {
        self.edit(|catalog| self.removed::<K>(catalog, key, reach)).is_ok()
    }

    fn removed<K: Kind>(&self, catalog: &mut Catalog, key: &str, reach: Reach) -> Result<Change, ()> {
        let entries = K::entries_mut(catalog);
        let before = entries.len();
        entries.retain(|e| e.route.key() != key);
        if entries.len() == before {
            return Err(());
        }
        Ok(self.announcement::<K>(reach, Action::Remove, key))
    }

    /// Serves (or stops serving) the route under `key`; `false` if there is none. Only
    /// an actual change is announced.
    pub(crate) fn set_enabled<K: Kind>(&self, key: &str, enabled: bool, reach: Reach) -> bool {
        let mut found = false;
        let _ = self.edit(|catalog| self.enabled_set::<K>(catalog, key, enabled, reach, &mut found));
        found
    }

    fn enabled_set<K: Kind>(
        &self,
        catalog: &mut Catalog,
        key: &str,
        enabled: bool,
        reach: Reach,
        found: &mut bool,
    ) -> Result<Change, ()> {
        let entry = K::entries_mut(catalog).iter_mut().find(|e| e.route.key() == key).ok_or(())?;
        *found = true;
        if entry.enabled == enabled {
            return Err(());
        }
        entry.enabled = enabled;
        let action = if enabled { Action::Enable } else { Action::Disable };
        Ok(self.announcement::<K>(reach, action, key))
    }

    /// Applies `change` to a copy of the catalog, swaps the copy in, and announces what
    /// it returns. The write lock is held for the copy, so concurrent edits never lose
    /// one another; readers keep their snapshot meanwhile.
    fn edit<E>(&self, change: impl FnOnce(&mut Catalog) -> Result<Change, E>) -> Result<(), E> {
        let announced = self.swap(change)?;
        self.publish(announced);
        Ok(())
    }

    /// [`edit`](Self::edit) without the announcement.
    fn swap<E>(&self, change: impl FnOnce(&mut Catalog) -> Result<Change, E>) -> Result<Change, E> {
        let mut current = self.catalog.write().unwrap_or_else(PoisonError::into_inner);
        let mut next = Catalog::clone(&current);
        let announced = change(&mut next)?;
        next.generation = current.generation + 1;
        *current = Arc::new(next);
        Ok(announced)
    }

    pub(crate) fn publish(&self, change: Change) {
        let fanout = self.fanout.read().unwrap_or_else(PoisonError::into_inner).clone();
        let Some(fanout) = fanout else { return };
        if let Some(change) = self.relay.hold_until_started(change) {
            fanout.publish(change);
        }
    }

    /// Where changes go; with `share`, enable, disable and remove travel to the other
    /// instances on it too.
    pub(crate) fn set_fanout(&self, fanout: Arc<dyn ChangeFanout>, share: bool) {
        self.relay.share(share);
        *self.fanout.write().unwrap_or_else(PoisonError::into_inner) = Some(fanout);
    }

    pub(crate) fn fanout(&self) -> Option<Arc<dyn ChangeFanout>> {
        self.fanout.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The last position handed out: cursors past it were never issued.
    pub(crate) fn last_seq(&self) -> u64 {
        self.next_seq.load(Ordering::Relaxed) - 1
    }

    pub(crate) fn listeners(&self) -> usize {
        self.listeners.load(Ordering::Relaxed)
    }

    /// Counts a listen stream as open until the returned guard drops.
    pub(crate) fn open_listener(self: &Arc<Self>) -> ListenerGuard {
        self.listeners.fetch_add(1, Ordering::Relaxed);
        ListenerGuard(self.clone())
    }
}

/// One open listen stream, counted while it lives.
pub(crate) struct ListenerGuard(Arc<CatalogState>);

impl Drop for ListenerGuard {
    fn drop(&mut self) {
        self.0.listeners.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::ToolError;
    use crate::protocol::Tool;

    fn tool(name: &str) -> ToolRoute {
        Tool::new(name)
            .description("t")
            .handler(|_ctx, _: crate::protocol::JsonObject| async { Ok::<_, ToolError>("") })
    }

    fn names(live: &CatalogState) -> Vec<String> {
        live.snapshot().enabled::<ToolRoute>().map(|t| t.tool.name.clone()).collect()
    }

    #[test]
    fn edits_swap_snapshots_and_keep_old_ones_intact() {
        let live = CatalogState::default();
        live.add(tool("a"), Reach::Everywhere).unwrap();
        let before = live.snapshot();
        live.add(tool("b"), Reach::Everywhere).unwrap();
        assert!(matches!(live.add(tool("a"), Reach::Everywhere), Err(CatalogError::Taken { .. })));
        assert_eq!(before.enabled::<ToolRoute>().count(), 1, "a request's snapshot does not move");
        assert_eq!(names(&live), ["a", "b"]);
        assert!(live.set_enabled::<ToolRoute>("a", false, Reach::Here));
        assert_eq!(names(&live), ["b"]);
        assert!(live.snapshot().has::<ToolRoute>());
        assert!(live.set_enabled::<ToolRoute>("a", true, Reach::Here));
        assert_eq!(names(&live), ["a", "b"], "re-enabling keeps the position");
        assert!(live.remove::<ToolRoute>("a", Reach::Here));
        assert!(!live.remove::<ToolRoute>("a", Reach::Here));
        assert!(!live.set_enabled::<ToolRoute>("a", true, Reach::Here));
        live.add(tool("a"), Reach::Everywhere).unwrap();
        assert_eq!(names(&live), ["b", "a"], "a re-added route goes to the end");
    }

    #[tokio::test]
    async fn only_real_changes_are_announced() {
        let live = CatalogState::default();
        let fanout = Arc::new(MemoryFanout::new(8));
        live.set_fanout(fanout.clone(), false);
        let mut changes = fanout.subscribe();
        live.add(tool("a"), Reach::Everywhere).unwrap();
        let _ = live.add(tool("a"), Reach::Everywhere);
        live.set_enabled::<ToolRoute>("a", true, Reach::Here);
        live.remove::<ToolRoute>("missing", Reach::Here);
        live.set_enabled::<ToolRoute>("a", false, Reach::Here);
        assert_eq!(changes.try_recv().unwrap(), Change::ToolsListChanged);
        assert_eq!(changes.try_recv().unwrap(), Change::ToolsListChanged);
        assert!(changes.try_recv().is_err(), "no-ops are silent");
    }
}
