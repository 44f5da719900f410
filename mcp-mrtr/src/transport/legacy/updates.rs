//! What a 2025-11-25 session hears outside its requests: `notifications/tools/list_changed`
//! (and prompts', resources') when the catalog changes, and `notifications/resources/updated`
//! for the resources it subscribed to. Hosts of that era (Codex CLI, Gemini CLI) re-list on
//! them; without them a tool added while the host runs never reaches its model.
//!
//! Served where the server serves changes at all ([`Subscriptions`](crate::catalog::Subscriptions)):
//! `initialize` then declares `listChanged` and resources' `subscribe`. The changes are
//! those a `subscriptions/listen` stream hears, through the same place among the streams
//! (`dispatch::Hearing`: same pool, same share per client, same fanout across instances),
//! and a resource update reaches only a session that may read the resource now (a session
//! subscribes only to what it may read then, within bounds: `subscribed`). Over stdio
//! they go on the pipe from `initialize` on; over HTTP on the session's `GET` stream, one
//! per session, holding one place: a newer `GET` ends the older and takes over its place
//! before it is admitted, so a client reconnecting after a network failure is not refused
//! while its old stream is still thought alive, even at its share of streams.

use std::future::Future;
use std::sync::Arc;

use serde_json::{json, Value};

use super::subscribed::MAX_URI_BYTES;
use super::{Session, Sessions};
use crate::base::error::Error;
use crate::dispatch::{Ended, Engine, Hearing};
use crate::intake::envelope::Request;
use crate::mrtr::context::Delivery;
use crate::protocol::{Notification, Notifier, Outgoing};
use crate::routes::catalog::{Change, RequestView};

/// Answers `resources/subscribe` and `resources/unsubscribe`. A URI is kept only when a
/// resource or template serves it to this session, as `resources/read` decides (one
/// hidden from it, or out of its caller's scopes, is refused as `resources/read` refuses
/// it), only up to `subscribed::MAX_URI_BYTES`, and within the session's
/// `Subscriptions::max_resource_subscriptions` and the bounds on subscription bytes
/// (`table/subscriptions.rs`). Whether the session may still read it is decided again when
/// an update comes, as for a listen stream: a resource hidden since reads as one that
/// never changes.
pub(crate) fn subscribe(
    server: &Engine,
    sessions: &Sessions,
    session: &Arc<Session>,
    request: &Request,
    delivery: &Delivery,
) -> Result<Value, Error> {
    let method = request.method.as_str();
    let uri = request
        .params
        .as_ref()
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_params(format!("{method} needs a uri")))?;
    if method == "resources/unsubscribe" {
        sessions.unsubscribe(session, uri);
        return Ok(json!({}));
    }
    if uri.len() > MAX_URI_BYTES {
        return Err(Error::invalid_params(format!(
            "resources/subscribe: the uri takes {} bytes; a session subscribes to URIs of at most {MAX_URI_BYTES}",
            uri.len()
        )));
    }
    let meta = super::meta(session, request);
    let view = RequestView::new(&meta, delivery);
    server
        .reach_resource(&server.catalog(), &view, uri)
        .map_err(|refused| refused.or_unknown(|| Error::resource_not_found(uri)))?;
    let most = server.catalog_config.listen.as_ref().map_or(0, |listen| listen.max_subscribed_resources);
    sessions.subscribe(session, uri, most)?;
    Ok(json!({}))
}

/// Which lists this server tells a session of: those `initialize` declared `listChanged` for.
#[derive(Clone, Copy, Debug)]
struct Lists {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Lists {
    fn of(server: &Engine) -> Self {
        let capabilities = server.legacy_capabilities();
        let on = |flag: Option<bool>| flag == Some(true);
        Self {
            tools: on(capabilities.tools.and_then(|c| c.list_changed)),
            prompts: on(capabilities.prompts.and_then(|c| c.list_changed)),
            resources: on(capabilities.resources.as_ref().and_then(|c| c.list_changed)),
        }
    }
}

/// What the session hears of `change`, if anything.
fn note(
    lists: Lists,
    session: &Session,
    server: &Engine,
    view: &RequestView<'_>,
    change: &Change,
) -> Option<Notification> {
    let (method, params) = match change {
        Change::ToolsListChanged if lists.tools => ("tools/list_changed", json!({})),
        Change::PromptsListChanged if lists.prompts => ("prompts/list_changed", json!({})),
        Change::ResourcesListChanged if lists.resources => ("resources/list_changed", json!({})),
        Change::ResourceUpdated(uri) if session.subscriptions().contains(uri) && server.may_read(view, uri) => {
            ("resources/updated", json!({ "uri": uri }))
        }
        _ => return None,
    };
    Some(Notification { method: format!("notifications/{method}"), params })
}

/// What carries a session's changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Carrier {
    /// An HTTP `GET`: it lasts `Subscriptions::max_lifetime`, and ends when its client falls
    /// behind; the client opens another.
    Get,
    /// The session's own pipe (stdio), for as long as the session lasts: a client that
    /// falls behind is told that everything may have changed (each list, and each resource
    /// it subscribed to), and the relay goes on.
    Pipe,
}

/// Relays the changes to a session until `stop`, or as `carrier` says.
pub(crate) async fn relay(
    server: &Engine,
    session: &Session,
    view: &RequestView<'_>,
    mut hearing: Hearing,
    notifier: &Notifier,
    stop: impl Future<Output = ()>,
    carrier: Carrier,
) {
    let lists = Lists::of(server);
    let lifetime = (carrier == Carrier::Get).then(|| server.stream_lifetime());
    tokio::pin!(stop);
    loop {
        let deliver = |change: &Change| note(lists, session, server, view, change);
        if hearing.relay(notifier, &mut stop, lifetime, deliver).await != Ended::Behind || carrier == Carrier::Get {
            return;
        }
        let mut everything = vec![Change::ToolsListChanged, Change::PromptsListChanged, Change::ResourcesListChanged];
        everything.extend(session.subscriptions().uris().cloned().map(Change::ResourceUpdated));
        for change in everything {
            let Some(note) = note(lists, session, server, view, &change) else { continue };
            // Waits for the client: what it missed is told in full, however slowly it reads.
            if notifier.send(Box::new(Outgoing::Notification(note))).await.is_err() {
                return;
            }
        }
    }
}
