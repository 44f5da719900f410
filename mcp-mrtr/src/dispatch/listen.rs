//! `subscriptions/listen` (spec digest §1.9): a long-lived stream that first acknowledges
//! the subset of the client's filter the server honours, then carries the changes that
//! filter asked for, each tagged with the listen request's id, until the client goes.
//!
//! The changes come from the catalog's [`ChangeFanout`](crate::catalog::ChangeFanout)
//! through a place among the streams of changes (`changes`, which 2025-11-25 sessions
//! share); which of them a stream hears, and whether it may read a resource it names, is
//! decided here with the same access rules as the other methods (`access`).

use std::sync::Arc;

use super::changes::Ended;
use super::stamp::Text;
use super::{Body, Engine};
use crate::base::error::Error;
use crate::bounds::fair::ClientId;
use crate::bounds::shutdown::Draining;
use crate::intake::envelope::{Request, RequestMeta};
use crate::mrtr::context::Delivery;
use crate::protocol::meta_keys::SUBSCRIPTION_ID;
use crate::protocol::{JsonObject, Method, Notification, Outgoing, RequestId, ResultJson};
use crate::routes::catalog::{Change, RequestView};
use crate::routes::handler::{PromptRoute, ResourceRoute, ToolRoute};
use serde::Deserialize;
use serde_json::{json, Value};

/// `params.notifications` of a listen request.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Filter {
    #[serde(default)]
    tools_list_changed: bool,
    #[serde(default)]
    prompts_list_changed: bool,
    #[serde(default)]
    resources_list_changed: bool,
    #[serde(default)]
    resource_subscriptions: Vec<String>,
}

impl Filter {
    /// The part of the filter this server honours: kinds it has, and, up to the cap,
    /// the URIs this request may read (a URI that is hidden from it, needs a scope it
    /// lacks, or names no resource is left out alike).
    fn honoured(mut self, server: &Engine, view: &RequestView<'_>) -> Self {
        let catalog = server.catalog();
        self.tools_list_changed &= catalog.has::<ToolRoute>();
        self.prompts_list_changed &= catalog.has::<PromptRoute>();
        let resources = catalog.has::<ResourceRoute>();
        self.resources_list_changed &= resources;
        if !resources {
            self.resource_subscriptions.clear();
        }
        self.resource_subscriptions.retain(|uri| server.may_read(view, uri));
        self.resource_subscriptions.sort_unstable();
        self.resource_subscriptions.dedup();
        self.resource_subscriptions
            .truncate(server.catalog_config.listen.as_ref().map_or(0, |l| l.max_subscribed_resources));
        self
    }

    /// The filter a listen request's params ask for.
    fn of(params: &Value) -> Result<Self, Error> {
        match params.get("notifications") {
            Some(filter @ Value::Object(_)) => Self::deserialize(filter)
                .map_err(|e| Error::invalid_params(format!("Invalid params: notifications: {e}"))),
            _ => Err(Error::invalid_params("subscriptions/listen needs params.notifications (an object)")),
        }
    }

    /// The first message of the stream: what it will hear, under the subscription's id.
    fn acknowledgement(&self, id: &RequestId) -> Notification {
        Notification {
            method: "notifications/subscriptions/acknowledged".into(),
            params: json!({ "_meta": { SUBSCRIPTION_ID: id }, "notifications": self.to_json() }),
        }
    }

    fn to_json(&self) -> Value {
        let mut honoured = JsonObject::new();
        for (key, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                honoured.insert(key.into(), json!(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(self.resource_subscriptions));
        }
        Value::Object(honoured)
    }

    /// The notification for `change`, tagged with `id`, if this filter asked for it and
    /// the request may still read the resource it names (the catalog may have changed).
    fn delivered(
        &self,
        change: &Change,
        id: &RequestId,
        server: &Engine,
        view: &RequestView<'_>,
    ) -> Option<Notification> {
        let note = self.notification(change, id)?;
        match change {
            Change::ResourceUpdated(uri) if !server.may_read(view, uri) => None,
            _ => Some(note),
        }
    }

    /// The notification for `change`, tagged with `id`, if this filter asked for it.
    fn notification(&self, change: &Change, id: &RequestId) -> Option<Notification> {
        let tag = json!({ SUBSCRIPTION_ID: id });
        let (method, params) = match change {
            Change::ToolsListChanged if self.tools_list_changed => ("tools/list_changed", json!({ "_meta": tag })),
            Change::PromptsListChanged if self.prompts_list_changed => {
                ("prompts/list_changed", json!({ "_meta": tag }))
            }
            Change::ResourcesListChanged if self.resources_list_changed => {
                ("resources/list_changed", json!({ "_meta": tag }))
            }
            Change::ResourceUpdated(uri) if self.resource_subscriptions.binary_search(uri).is_ok() => {
                ("resources/updated", json!({ "uri": uri, "_meta": tag }))
            }
            _ => return None,
        };
        Some(Notification { method: format!("notifications/{method}"), params })
    }
}

impl Engine {
    /// [`Engine::dispatch`] of a modern `subscriptions/listen`: a future sized for
    /// listening alone, since a stream holds it for hours.
    pub(super) async fn dispatch_listen(
        &self,
        request: Request,
        meta: Arc<RequestMeta>,
        delivery: Delivery,
    ) -> Result<ResultJson, Error> {
        if !self.serves(Method::Listen) {
            return Err(Error::method_not_found(&request.method));
        }
        let params = request.params.unwrap_or_else(|| json!({}));
        let view = RequestView::new(&meta, &delivery);
        let result = serve_listen(self, &request.id, params, &delivery, &view).await?;
        let body = Body::Complete(Text::from_object(&result));
        tracing::Span::current().record("outcome", body.result_type());
        Ok(self.stamp(body, None))
    }
}

/// Serves one listen request until the client goes (the transport drops this future,
/// or cancels it on stdio) or the stream must end (the client does not keep up, or the
/// server shuts down): then the listen result is the last message,
/// `{resultType: "complete", _meta: {subscriptionId}}`.
///
/// Memory per stream is bounded: the transport's channel holds a few notifications, and
/// a listener that does not take them (or falls behind the fanout) is ended.
async fn serve_listen(
    server: &Engine,
    id: &RequestId,
    params: Value,
    delivery: &Delivery,
    view: &RequestView<'_>,
) -> Result<JsonObject, Error> {
    let Some(listen) = &server.catalog_config.listen else { return Err(not_served()) };
    let notifier = delivery
        .notifier
        .as_ref()
        .ok_or_else(|| Error::invalid_request("subscriptions/listen needs a client that accepts text/event-stream"))?;
    let filter = Filter::of(&params)?.honoured(server, view);
    // Read once: not kept for the hours the stream may last.
    drop(params);
    let mut hearing = server.hear(&ClientId::of(&delivery.extensions))?.ok_or_else(not_served)?;
    notifier.send(Box::new(Outgoing::Notification(filter.acknowledgement(id)))).await.map_err(|_| gone())?;
    tracing::debug!(
        listeners = server.catalog.listeners(),
        keep_alive_s = listen.keep_alive.as_secs(),
        "listen stream open"
    );
    // A shutdown ends the stream cleanly, with its result, rather than holding the drain open.
    let shutdown = Draining::of(&delivery.extensions);
    let deliver = |change: &Change| filter.delivered(change, id, server, view);
    // A stream that falls behind ends with its result: the client listens again.
    if hearing.relay(notifier, shutdown, Some(listen.max_lifetime), deliver).await == Ended::Gone {
        return Err(gone());
    }
    let mut result = JsonObject::new();
    result.insert("_meta".into(), json!({ SUBSCRIPTION_ID: id }));
    Ok(result)
}

fn not_served() -> Error {
    Error::method_not_found("subscriptions/listen")
}

fn gone() -> Error {
    Error::internal("the listener went away")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_passes_only_what_it_asked_for_tagged_with_the_id() {
        let filter =
            Filter { prompts_list_changed: true, resource_subscriptions: vec!["a://1".into()], ..Filter::default() };
        let id = RequestId::from("listen-1");
        assert!(filter.notification(&Change::ToolsListChanged, &id).is_none());
        assert!(filter.notification(&Change::ResourcesListChanged, &id).is_none());
        assert!(filter.notification(&Change::ResourceUpdated("a://2".into()), &id).is_none());
        let prompts = filter.notification(&Change::PromptsListChanged, &id).unwrap();
        assert_eq!(prompts.method, "notifications/prompts/list_changed");
        assert_eq!(prompts.params["_meta"][SUBSCRIPTION_ID], json!("listen-1"));
        let updated = filter.notification(&Change::ResourceUpdated("a://1".into()), &RequestId::from(7)).unwrap();
        assert_eq!(updated.params, json!({"uri": "a://1", "_meta": {SUBSCRIPTION_ID: 7}}));
    }

    #[test]
    fn the_acknowledgement_lists_only_what_is_honoured() {
        let filter = Filter { tools_list_changed: true, ..Filter::default() };
        assert_eq!(filter.to_json(), json!({"toolsListChanged": true}));
    }
}
