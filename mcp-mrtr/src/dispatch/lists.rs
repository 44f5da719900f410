//! The `*/list` pages and the `server/discover` body, as one request sees them through
//! the visibility filter, prepared once per catalog generation (`catalog::Prepared`).
//!
//! A cursor names the position (registration sequence) of the last entry sent, never an
//! index: entries keep their positions while others come and go, so paging through a
//! list that changes meanwhile sends no entry twice and skips none that existed
//! throughout.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::ser::SerializeMap as _;
use serde::{Deserialize as _, Serialize};
use serde_json::Value;

use super::Engine;
use crate::base::error::Error;
use crate::intake::capability::Capability;
use crate::intake::envelope::SUPPORTED_VERSIONS;
use crate::protocol::{DiscoverResult, Era, ListParams};
use crate::routes::apps;
use crate::routes::catalog::{
    is_set, mask, BodyKey, Catalog, Item, Kind, List, PreparedBody, RequestView, ToolsFor, DEFAULT_KEEP_ALIVE,
};
use crate::routes::handler::{PromptRoute, ResourceRoute, TaskSupport, ToolRoute};

impl Engine {
    /// The catalog as it stands: read it once per request.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        self.catalog.snapshot()
    }

    /// Whether the request may see (list, call, get, read) `item`.
    pub(crate) fn sees(&self, view: &RequestView<'_>, item: Item<'_>) -> bool {
        self.catalog_config.visible.as_ref().is_none_or(|visible| visible(view, item))
    }

    /// How often an idle SSE stream gets a keep-alive comment.
    pub(crate) fn keep_alive(&self) -> std::time::Duration {
        self.catalog_config.listen.as_ref().map_or(DEFAULT_KEEP_ALIVE, |listen| listen.keep_alive)
    }

    /// Lists may differ between callers when a visibility filter is set.
    pub(crate) fn lists_vary_by_caller(&self) -> bool {
        self.catalog_config.visible.is_some()
    }

    /// The `tools/list` page the request asked for, as prepared bytes. A model is never
    /// offered a tool that cannot work for it: a 2025-11-25 session cannot run a task, so
    /// where tasks are served its list leaves out the tools that run only as one (a call
    /// of one by name is answered `-32601`, as that revision says); a client that renders
    /// no apps is shown no tool only an app may call, and the others without `_meta.ui`.
    pub(crate) fn list_tools(&self, params: &Value, view: &RequestView<'_>, era: Era) -> Result<PreparedBody, Error> {
        let shown = ToolsFor {
            session: era == Era::Legacy && self.tasks.is_some(),
            apps: Capability::Apps.is_declared_in(view.client_capabilities()),
        };
        if shown.session {
            self.tell_task_only_left_out();
        }
        self.page::<ToolRoute, _>(
            List::Tools(shown),
            params,
            view,
            |r| {
                let runs = !shown.session || r.task != TaskSupport::Required;
                let callable = shown.apps || !apps::app_only(r);
                (runs && callable).then_some((Item::Tool(&r.tool), &r.tool))
            },
            |tool| if shown.apps { Cow::Borrowed(tool) } else { apps::without_app(tool) },
        )
    }

    /// Says in the log which tools a 2025-11-25 client's list leaves out because they run
    /// only as tasks: every released host speaks that revision, and a tool it cannot see
    /// would otherwise be missing without a word.
    fn tell_task_only_left_out(&self) {
        // Told at WARN once; after that only a DEBUG log wants the names.
        let told = self.told_task_only.load(Ordering::Relaxed);
        if told && !tracing::enabled!(tracing::Level::DEBUG) {
            return;
        }
        let catalog = self.catalog();
        let task_only: Vec<&str> = catalog
            .tools
            .iter()
            .filter(|entry| entry.enabled && entry.route.task == TaskSupport::Required)
            .map(|entry| entry.route.tool.name.as_str())
            .collect();
        if task_only.is_empty() {
            return;
        }
        let tools = task_only.join(", ");
        let why = "they run only as tasks (#[tool(task = \"required\")]), which that revision has not; \
                   #[tool(task = \"optional\")] serves them to every client";
        if self.told_task_only.swap(true, Ordering::Relaxed) {
            tracing::debug!(%tools, "a 2025-11-25 client's tools/list leaves out {tools}: {why}");
        } else {
            tracing::warn!(%tools, "a 2025-11-25 client's tools/list leaves out {tools}: {why}");
        }
    }

    pub(crate) fn list_prompts(&self, params: &Value, view: &RequestView<'_>) -> Result<PreparedBody, Error> {
        self.page::<PromptRoute, _>(
            List::Prompts,
            params,
            view,
            |r| Some((Item::Prompt(&r.prompt), &r.prompt)),
            |entry| Cow::Borrowed(entry),
        )
    }

    /// The `resources/list` page. Apps are listed only to clients that render them: to any
    /// other they are pages a model could only read as text (reading one still works).
    pub(crate) fn list_resources(&self, params: &Value, view: &RequestView<'_>) -> Result<PreparedBody, Error> {
        let apps = Capability::Apps.is_declared_in(view.client_capabilities());
        self.page::<ResourceRoute, _>(
            List::Resources { apps },
            params,
            view,
            |r| {
                let resource = r.kind.as_static()?;
                (apps || !apps::is_app(resource)).then_some((r.kind.item(), resource))
            },
            |entry| Cow::Borrowed(entry),
        )
    }

    pub(crate) fn list_templates(&self, params: &Value, view: &RequestView<'_>) -> Result<PreparedBody, Error> {
        self.page::<ResourceRoute, _>(
            List::Templates,
            params,
            view,
            |r| r.kind.as_template().map(|template| (r.kind.item(), template)),
            |entry| Cow::Borrowed(entry),
        )
    }

    /// The `server/discover` body, as prepared bytes: it changes with the catalog only
    /// (which kinds are registered decides the capabilities).
    pub(crate) fn discover(&self) -> Result<PreparedBody, Error> {
        let generation = self.catalog().generation;
        let key = BodyKey { list: List::Discover, after: 0, visible: None };
        self.prepared.get_or_build(generation, key, || {
            to_json(&DiscoverResult {
                supported_versions: SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
                capabilities: self.capabilities(),
                instructions: self.instructions.clone(),
            })
        })
    }

    /// One page of a list: the visible entries after the cursor's position (each as `show`
    /// writes it for this kind of client), and the cursor of the next page when there is
    /// more. Built once per catalog generation, cursor and visible set; a request with a
    /// filter pays one filter call per entry.
    fn page<K: Kind, T: Serialize + Clone>(
        &self,
        list: List,
        params: &Value,
        view: &RequestView<'_>,
        pick: impl for<'e> Fn(&'e K) -> Option<(Item<'e>, &'e T)>,
        show: impl for<'e> Fn(&'e T) -> Cow<'e, T>,
    ) -> Result<PreparedBody, Error> {
        let ListParams { cursor } =
            ListParams::deserialize(params).map_err(|e| Error::invalid_params(format!("Invalid params: {e}")))?;
        let after = match cursor {
            None => 0,
            Some(cursor) => decode_cursor(&cursor, list.cursor_name())
                .filter(|seq| *seq <= self.catalog.last_seq())
                .ok_or_else(|| Error::invalid_params("Invalid cursor: not one this server issued for this list"))?,
        };
        let catalog = self.catalog();
        let entries = K::entries(&catalog);
        let visible = self.catalog_config.visible.as_ref().map(|visible| {
            let seen = entries.iter().map(|e| e.enabled && pick(&e.route).is_some_and(|(item, _)| visible(view, item)));
            mask(seen)
        });
        let key = BodyKey { list, after, visible };
        let visible_at = |index: usize| key.visible.as_ref().is_none_or(|visible| is_set(visible, index));
        self.prepared.get_or_build(catalog.generation, key.clone(), || {
            let mut shown = entries
                .iter()
                .enumerate()
                .filter(|(index, entry)| entry.enabled && entry.seq > after && visible_at(*index))
                .filter_map(|(_, entry)| pick(&entry.route).map(|(_, value)| (entry.seq, show(value))));
            let page: Vec<(u64, Cow<'_, T>)> = shown.by_ref().take(self.catalog_config.page_size.max(1)).collect();
            let more = shown.next().is_some();
            let next_cursor = page.last().filter(|_| more).map(|(seq, _)| encode_cursor(list.cursor_name(), *seq));
            let entries = page.into_iter().map(|(_, value)| value).collect();
            to_json(&Page { member: list.member(), entries, next_cursor })
        })
    }
}

/// A list result's body: its entries under the list's member, and the next cursor.
struct Page<'a, T: Clone> {
    member: &'static str,
    entries: Vec<Cow<'a, T>>,
    next_cursor: Option<String>,
}

impl<T: Serialize + Clone> Serialize for Page<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.member, &self.entries)?;
        if let Some(cursor) = &self.next_cursor {
            map.serialize_entry("nextCursor", cursor)?;
        }
        map.end()
    }
}

fn to_json<T: Serialize>(body: &T) -> Result<String, Error> {
    serde_json::to_string(body).map_err(|e| Error::internal(format!("cannot serialize a result: {e}")))
}

fn encode_cursor(list: &str, seq: u64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{list}:{seq}"))
}

fn decode_cursor(cursor: &str, list: &str) -> Option<u64> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let (named, seq) = text.split_once(':')?;
    (named == list).then(|| seq.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_name_their_list_and_position() {
        let cursor = encode_cursor("tools", 42);
        assert_eq!(decode_cursor(&cursor, "tools"), Some(42));
        assert_eq!(decode_cursor(&cursor, "prompts"), None, "a cursor of another list is refused");
        for bad in ["", "not base64!", &URL_SAFE_NO_PAD.encode("tools:x"), &URL_SAFE_NO_PAD.encode("tools")] {
            assert_eq!(decode_cursor(bad, "tools"), None, "{bad:?}");
        }
    }
}
