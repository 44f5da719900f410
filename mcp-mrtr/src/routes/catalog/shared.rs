//! Catalog edits shared by every instance on one fanout, and the relay that brings the
//! fanout's changes to this instance's listen streams.
//!
//! Behind a load balancer a client lists on one instance and calls on another, so a tool
//! disabled on one must be disabled on all. Enable, disable and remove name their target,
//! so they can travel: [`CatalogHandle`](crate::catalog::CatalogHandle) publishes them as
//! [`CatalogEdit`]s, and each instance applies the ones it did not make. Adding cannot
//! travel (a handler is code, not data): every instance adds its own routes.
//!
//! Listen streams read the fanout through this instance's relay, never directly: the
//! relay applies a remote edit first and only then tells the streams the list changed, so
//! a client that lists on hearing of it sees the change. Each instance hears each edit
//! in the fanout's order, so they all end where the last edit left them. An instance
//! that was not listening when an edit was made (not started yet, or cut off from the
//! bus) misses it: apply lasting changes from configuration at start-up too. An edit made
//! here before serving starts (when the fanout has no keys to seal it with yet) waits, and
//! travels when the relay starts.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::broadcast;

use super::{CatalogState, Change, FanoutKeys, Kind};
use crate::intake::request_state::KeyRing;
use crate::routes::handler::{PromptRoute, ResourceRoute, ToolRoute};

/// Changes this instance's listen streams may fall behind by before they end.
const LOCAL_CAPACITY: usize = 1024;

/// Whether a catalog edit made here travels to the other instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// To every instance on the fanout, when the server shares catalog changes
    /// ([`Subscriptions::share_catalog_changes`](crate::catalog::Subscriptions::share_catalog_changes)).
    Everywhere,
    /// This instance only: what it derives from its own state (its skills folder).
    Here,
}

/// Which list an edit changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EditKind {
    Tool,
    Prompt,
    Resource,
}

/// What an edit does to its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Enable,
    Disable,
    Remove,
}

/// An enable, disable or remove made through a [`CatalogHandle`](crate::catalog::CatalogHandle)
/// on one instance, as it travels to the others ([`Change::CatalogEdited`]). A
/// [`ChangeFanout`](crate::catalog::ChangeFanout) of your own carries it as the text of [`encode`](Self::encode).
#[derive(Clone, PartialEq, Eq)]
pub struct CatalogEdit {
    /// The instance that made it: random per server, so it does not apply its own again.
    origin: u64,
    kind: EditKind,
    action: Action,
    key: String,
}

impl CatalogEdit {
    /// The edit as one line of text: `edit <origin> <kind> <action> <name or URI>`.
    pub fn encode(&self) -> String {
        let kind = match self.kind {
            EditKind::Tool => "tool",
            EditKind::Prompt => "prompt",
            EditKind::Resource => "resource",
        };
        let action = match self.action {
            Action::Enable => "enable",
            Action::Disable => "disable",
            Action::Remove => "remove",
        };
        format!("edit {:016x} {kind} {action} {}", self.origin, self.key)
    }

    /// Reads what [`encode`](Self::encode) wrote; `None` for anything else.
    pub fn decode(text: &str) -> Option<Self> {
        let mut parts = text.strip_prefix("edit ")?.splitn(4, ' ');
        let origin = u64::from_str_radix(parts.next()?, 16).ok()?;
        let kind = match parts.next()? {
            "tool" => EditKind::Tool,
            "prompt" => EditKind::Prompt,
            "resource" => EditKind::Resource,
            _ => return None,
        };
        let action = match parts.next()? {
            "enable" => Action::Enable,
            "disable" => Action::Disable,
            "remove" => Action::Remove,
            _ => return None,
        };
        let key = parts.next()?.to_owned();
        Some(Self { origin, kind, action, key })
    }

    /// What the listen streams hear of it.
    fn list_changed(&self) -> Change {
        match self.kind {
            EditKind::Tool => Change::ToolsListChanged,
            EditKind::Prompt => Change::PromptsListChanged,
            EditKind::Resource => Change::ResourcesListChanged,
        }
    }
}

impl fmt::Debug for CatalogEdit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

/// This instance's side of the fanout: its id, whether it shares edits, and the local
/// channel its listen streams read.
pub(crate) struct Relay {
    instance: u64,
    share: AtomicBool,
    local: broadcast::Sender<Change>,
    started: AtomicBool,
    /// Set once the fanout can seal what this instance publishes (the relay started).
    ready: AtomicBool,
    /// Edits made before then, published when it is, in order (at most [`MAX_WAITING`];
    /// more are said in the log and dropped).
    waiting: Mutex<Vec<Change>>,
}

/// Edits made before serving starts that wait to travel.
const MAX_WAITING: usize = 1024;

impl Default for Relay {
    fn default() -> Self {
        let mut bytes = [0u8; 8];
        // Only needs to differ between instances; the clock stands in if randomness fails.
        if getrandom::fill(&mut bytes).is_err() {
            bytes =
                u64::try_from(std::time::UNIX_EPOCH.elapsed().unwrap_or_default().as_nanos() & u128::from(u64::MAX))
                    .unwrap_or_default()
                    .to_le_bytes();
        }
        Self {
            instance: u64::from_le_bytes(bytes),
            share: AtomicBool::new(true),
            local: broadcast::channel(LOCAL_CAPACITY).0,
            started: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            waiting: Mutex::default(),
        }
    }
}

impl Relay {
    pub(crate) fn share(&self, share: bool) {
        self.share.store(share, Ordering::Relaxed);
    }

    /// Keeps `change` for the relay's start, if it is an edit made before it: the fanout
    /// cannot seal it yet. `None` when it was kept; else the change, to publish now.
    pub(super) fn hold_until_started(&self, change: Change) -> Option<Change> {
        if self.ready.load(Ordering::Acquire) || !matches!(change, Change::CatalogEdited(_)) {
            return Some(change);
        }
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        // Checked again under the lock: the start publishes the queue under it, then sets it.
        if self.ready.load(Ordering::Acquire) {
            return Some(change);
        }
        if waiting.len() < MAX_WAITING {
            waiting.push(change);
        } else {
            tracing::warn!("a catalog edit made before serving started was not shared: {MAX_WAITING} wait already");
        }
        None
    }
}

impl CatalogState {
    /// What an edit of the route `key` announces: an edit for every instance when it
    /// travels, else this instance's list change.
    pub(super) fn announcement<K: Kind>(&self, reach: Reach, action: Action, key: &str) -> Change {
        if reach == Reach::Everywhere && self.relay.share.load(Ordering::Relaxed) {
            Change::CatalogEdited(CatalogEdit {
                origin: self.relay.instance,
                kind: K::EDITED,
                action,
                key: key.to_owned(),
            })
        } else {
            K::CHANGED
        }
    }

    /// The changes this instance's listen streams hear, from now on. The relay that fills
    /// it was started by the request that listens (`Engine::start`).
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.relay.local.subscribe()
    }

    /// Starts relaying the fanout, once, when there is one and a runtime to relay on.
    /// Serving calls it (every request does), so remote edits are applied even where no
    /// listen stream is open. `keys` are the server's request-state keys: the fanout
    /// authenticates what travels between instances with keys derived from them.
    pub(crate) fn start_relay(self: &Arc<Self>, keys: &KeyRing) {
        if self.relay.started.load(Ordering::Relaxed) {
            return;
        }
        let Some(fanout) = self.fanout() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        if self.relay.started.swap(true, Ordering::AcqRel) {
            return;
        }
        fanout.authenticate_with(FanoutKeys::new(keys, self.relay.instance));
        // Subscribed here, not in the task: nothing published from now on is missed.
        runtime.spawn(relay(Arc::downgrade(self), fanout.subscribe()));
        // Edits made before serving started travel now, sealed, in the order they were made,
        // and before any made from now on (those wait for the lock, then see `ready`).
        let mut waiting = self.relay.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        for change in waiting.drain(..) {
            fanout.publish(change);
        }
        self.relay.ready.store(true, Ordering::Release);
    }

    /// Applies an edit another instance made, without announcing it again.
    fn apply(&self, edit: &CatalogEdit) {
        match edit.kind {
            EditKind::Tool => self.apply_to::<ToolRoute>(edit),
            EditKind::Prompt => self.apply_to::<PromptRoute>(edit),
            EditKind::Resource => self.apply_to::<ResourceRoute>(edit),
        }
    }

    /// Only a route registered to be shared is edited from afar (audit C3): what an
    /// instance derived from its own state (its skills folder) is its own, whatever the
    /// fanout says.
    fn apply_to<K: Kind>(&self, edit: &CatalogEdit) {
        let key = edit.key.as_str();
        let _ = self.swap(|catalog| {
            if !K::entries(catalog).iter().any(|e| e.route.key() == key && e.reach == Reach::Everywhere) {
                tracing::debug!(kind = K::NOUN, "a remote edit names no route this instance shares; ignored");
                return Err(());
            }
            match edit.action {
                Action::Remove => self.removed::<K>(catalog, key, Reach::Here),
                Action::Enable | Action::Disable => {
                    self.enabled_set::<K>(catalog, key, edit.action == Action::Enable, Reach::Here, &mut false)
                }
            }
        });
    }
}

/// Brings every change on the fanout to this instance's streams, applying remote edits
/// first, until the server or the fanout is gone.
async fn relay(live: Weak<CatalogState>, mut changes: broadcast::Receiver<Change>) {
    loop {
        let change = changes.recv().await;
        let Some(live) = live.upgrade() else { return };
        let heard = match change {
            Ok(Change::CatalogEdited(edit)) => {
                if edit.origin != live.relay.instance {
                    live.apply(&edit);
                }
                vec![edit.list_changed()]
            }
            Ok(change) => vec![change],
            // Fell behind: some edits were lost, so every list may differ.
            Err(broadcast::error::RecvError::Lagged(_)) => {
                tracing::warn!("the catalog relay fell behind its fanout; telling listeners every list may differ");
                vec![Change::ToolsListChanged, Change::PromptsListChanged, Change::ResourcesListChanged]
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        for change in heard {
            // An error only means no listen stream is open right now.
            let _ = live.relay.local.send(change);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::ToolError;
    use crate::protocol::Tool;

    fn tool(name: &str) -> ToolRoute {
        Tool::new(name).handler(|_ctx, _: crate::protocol::JsonObject| async { Ok::<_, ToolError>("") })
    }

    /// Audit C3: a remote edit reached routes an instance derived from its own state
    /// (registered `Reach::Here`, as skills are). Only shared routes take one now.
    #[test]
    fn a_remote_edit_reaches_shared_routes_only() {
        let live = CatalogState::default();
        live.add(tool("shared"), Reach::Everywhere).unwrap();
        live.add(tool("local"), Reach::Here).unwrap();
        for (action, key) in [(Action::Disable, "shared"), (Action::Disable, "local"), (Action::Remove, "local")] {
            live.apply(&CatalogEdit { origin: 7, kind: EditKind::Tool, action, key: key.into() });
        }
        let served: Vec<String> = live.snapshot().enabled::<ToolRoute>().map(|t| t.tool.name.clone()).collect();
        assert_eq!(served, ["local"]);
        // This instance's own edits reach both.
        assert!(live.set_enabled::<ToolRoute>("local", false, Reach::Here));
    }

    #[test]
    fn edits_survive_their_text() {
        for (kind, action, key) in [
            (EditKind::Tool, Action::Disable, "deploy"),
            (EditKind::Prompt, Action::Enable, "summary"),
            (EditKind::Resource, Action::Remove, "file:///a b/{name}"),
        ] {
            let edit = CatalogEdit { origin: 0xfeed, kind, action, key: key.into() };
            assert_eq!(CatalogEdit::decode(&edit.encode()), Some(edit));
        }
        assert_eq!(CatalogEdit::decode("edit zz tool disable x"), None);
        assert_eq!(CatalogEdit::decode("tools"), None);
    }
}
