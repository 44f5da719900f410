//! What one request sees of the catalog: the application's visibility filter (by caller,
//! capabilities, extensions). Dispatch builds the `*/list` pages from it (`dispatch/lists.rs`).

use std::sync::Arc;

use axum::http::HeaderMap;

use super::Subscriptions;
use crate::base::caller::Caller;
use crate::mrtr::context::Delivery;
use crate::mrtr::context::RequestMeta;
use crate::protocol::{ClientCapabilities, Prompt, Resource, ResourceTemplate, Tool};
use crate::routes::handler::ResourceKind;

pub(crate) type VisibleFn = Arc<dyn Fn(&RequestView<'_>, Item<'_>) -> bool + Send + Sync>;

/// How a server serves its live catalog: listen streams, visibility, page size.
#[derive(Clone)]
pub(crate) struct CatalogConfig {
    pub(crate) listen: Option<Subscriptions>,
    pub(crate) visible: Option<VisibleFn>,
    pub(crate) page_size: usize,
}

impl Default for CatalogConfig {
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
    transport: &'a Delivery,
}

impl<'a> RequestView<'a> {
    pub(crate) fn new(meta: &'a RequestMeta, transport: &'a Delivery) -> Self {
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

    /// The HTTP headers of the request (`None` on stdio). Behind a
    /// [`ResourceServer`](crate::auth::ResourceServer), `Authorization` is not among them
    /// unless it [passes the token to handlers](crate::auth::ResourceServer::pass_token_to_handlers):
    /// decide on [`caller`](Self::caller), which the verified token established.
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
    /// A request method of the server's own ([`MethodRoute`](crate::MethodRoute)), by name.
    Method(&'a str),
}

impl ResourceKind {
    pub(crate) fn item(&self) -> Item<'_> {
        match self {
            Self::Static(resource) => Item::Resource(resource),
            Self::Template(template, _) => Item::ResourceTemplate(template),
        }
    }
}
