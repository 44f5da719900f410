//! What one request sees of the catalog: the application's visibility filter (by caller,
//! capabilities, extensions), and the `*/list` pages with their cursors.
//!
//! A cursor names the position (registration sequence) of the last entry sent, never an
//! index: entries keep their positions while others come and go, so paging through a
//! list that changes meanwhile sends no entry twice and skips none that existed
//! throughout.

use std::sync::Arc;

use axum::http::HeaderMap;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;

use super::{Catalog, Kind, Listen};
use crate::context::Transport;
use crate::handler::{PromptRoute, ResourceKind, ResourceRoute, ToolRoute};
use crate::protocol::{
    ClientCapabilities, ListParams, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, Prompt, Resource, ResourceTemplate, Tool,
};
use crate::{Caller, Error, RequestMeta, Server};

pub(crate) type VisibleFn = Arc<dyn Fn(&RequestView<'_>, Item<'_>) -> bool + Send + Sync>;

/// How a server serves its live catalog: listen streams, visibility, page size.
#[derive(Clone)]
pub(crate) struct LiveConfig {
    pub(crate) listen: Option<Listen>,
    pub(crate) visible: Option<VisibleFn>,
    pub(crate) page_size: usize,
}

impl Default for LiveConfig {
    fn default() -> Self {
        Self { listen: None, visible: None, page_size: DEFAULT_PAGE_SIZE }
    }
}

/// Entries per `*/list` page unless [`Server::page_size`](crate::Server::page_size) says otherwise.
pub(crate) const DEFAULT_PAGE_SIZE: usize = 100;

/// What a visibility filter knows about the request it decides for.
#[derive(Clone, Copy, Debug)]
pub struct RequestView<'a> {
    meta: &'a RequestMeta,
    transport: &'a Transport,
}

impl<'a> RequestView<'a> {
    pub(crate) fn new(meta: &'a RequestMeta, transport: &'a Transport) -> Self {
        Self { meta, transport }
    }

    /// The authenticated caller, when an authentication layer established one.
    pub fn caller(&self) -> Option<&'a Caller> {
        self.transport.caller()
    }

    /// What the client declared it can do on this request.
    pub fn client_capabilities(&self) -> &'a ClientCapabilities {
        &self.meta.client_capabilities
    }

    /// A value the application's HTTP middleware attached to the request.
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&'a T> {
        self.transport.extensions.get::<T>()
    }

    /// The HTTP headers of the request (`None` on stdio).
    pub fn http_headers(&self) -> Option<&'a HeaderMap> {
        self.transport.headers.as_deref()
    }
}

/// A catalog entry a visibility filter decides on.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Item<'a> {
    /// A tool: listed by `tools/list`, called by `tools/call`.
    Tool(&'a Tool),
    /// A prompt.
    Prompt(&'a Prompt),
    /// A concrete resource.
    Resource(&'a Resource),
    /// A resource template.
    ResourceTemplate(&'a ResourceTemplate),
}

impl ResourceKind {
    pub(crate) fn item(&self) -> Item<'_> {
        match self {
            Self::Static(resource) => Item::Resource(resource),
            Self::Template(template, _) => Item::ResourceTemplate(template),
        }
    }
}

impl Server {
    /// The catalog as it stands: read it once per request.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        self.live.snapshot()
    }

    /// Whether the request may see (list, call, get, read) `item`.
    pub(crate) fn sees(&self, view: &RequestView<'_>, item: Item<'_>) -> bool {
        self.live_config.visible.as_ref().is_none_or(|visible| visible(view, item))
    }

    /// How often an idle SSE stream gets a keep-alive comment.
    pub(crate) fn keep_alive(&self) -> std::time::Duration {
        self.live_config.listen.as_ref().map_or(super::listen::DEFAULT_KEEP_ALIVE, |listen| listen.keep_alive)
    }

    /// Lists may differ between callers when a visibility filter is set.
    pub(crate) fn lists_vary_by_caller(&self) -> bool {
        self.live_config.visible.is_some()
    }

    pub(crate) fn list_tools(&self, params: &Value, view: &RequestView<'_>) -> Result<ListToolsResult, Error> {
        let catalog = self.catalog();
        let (tools, next_cursor) =
            self.page::<ToolRoute, _>(&catalog, params, view, "tools", |r| Some((Item::Tool(&r.tool), &r.tool)))?;
        Ok(ListToolsResult { tools, next_cursor })
    }

    pub(crate) fn list_prompts(&self, params: &Value, view: &RequestView<'_>) -> Result<ListPromptsResult, Error> {
        let catalog = self.catalog();
        let (prompts, next_cursor) = self.page::<PromptRoute, _>(&catalog, params, view, "prompts", |r| {
            Some((Item::Prompt(&r.prompt), &r.prompt))
        })?;
        Ok(ListPromptsResult { prompts, next_cursor })
    }

    pub(crate) fn list_resources(&self, params: &Value, view: &RequestView<'_>) -> Result<ListResourcesResult, Error> {
        let catalog = self.catalog();
        let (resources, next_cursor) = self.page::<ResourceRoute, _>(&catalog, params, view, "resources", |r| {
            r.kind.as_static().map(|resource| (r.kind.item(), resource))
        })?;
        Ok(ListResourcesResult { resources, next_cursor })
    }

    pub(crate) fn list_templates(
        &self,
        params: &Value,
        view: &RequestView<'_>,
    ) -> Result<ListResourceTemplatesResult, Error> {
        let catalog = self.catalog();
        let (resource_templates, next_cursor) =
            self.page::<ResourceRoute, _>(&catalog, params, view, "templates", |r| {
                r.kind.as_template().map(|template| (r.kind.item(), template))
            })?;
        Ok(ListResourceTemplatesResult { resource_templates, next_cursor })
    }

    /// One page of a list: the visible entries after the cursor's position, and the
    /// cursor of the next page when there is more.
    fn page<'c, K: Kind, T: Clone + 'c>(
        &self,
        catalog: &'c Catalog,
        params: &Value,
        view: &RequestView<'_>,
        list: &str,
        pick: impl Fn(&'c K) -> Option<(Item<'c>, &'c T)>,
    ) -> Result<(Vec<T>, Option<String>), Error> {
        let ListParams { cursor } = serde_json::from_value(params.clone())
            .map_err(|e| Error::invalid_params(format!("Invalid params: {e}")))?;
        let after = match cursor {
            None => 0,
            Some(cursor) => decode_cursor(&cursor, list)
                .filter(|seq| *seq <= self.live.last_seq())
                .ok_or_else(|| Error::invalid_params("Invalid cursor: not one this server issued for this list"))?,
        };
        let size = self.live_config.page_size.max(1);
        let mut visible = K::entries(catalog)
            .iter()
            .filter(|entry| entry.enabled && entry.seq > after)
            .filter_map(|entry| pick(&entry.route).map(|(item, value)| (entry.seq, item, value)))
            .filter(|(_, item, _)| self.sees(view, *item));
        let page: Vec<(u64, &T)> = visible.by_ref().take(size).map(|(seq, _, value)| (seq, value)).collect();
        let more = visible.next().is_some();
        let next = page.last().filter(|_| more).map(|(seq, _)| encode_cursor(list, *seq));
        Ok((page.into_iter().map(|(_, value)| value.clone()).collect(), next))
    }
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
