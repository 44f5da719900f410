//! A mount kept in step with its upstream: where the upstream announces changes of its
//! lists (`listChanged`, `subscriptions/listen` or a session's stream, through the client),
//! a task reads each change, lists again, and swaps the mount's routes in this server's
//! catalog, whose own listeners then hear of the change as this server's.

use std::sync::Arc;

use super::Plan;
use crate::client::{Change, Client, ClientError, Listen};
use crate::protocol::{Resource, ResourceTemplate};
use crate::routes::catalog::{CatalogError, CatalogHandle, Kind};

/// The catalog keys a mount's routes are registered under (those the catalog took), to
/// swap them on a change.
#[derive(Default)]
pub(super) struct Keys {
    pub(super) tools: Vec<String>,
    pub(super) prompts: Vec<String>,
    pub(super) resources: Vec<String>,
}

/// Puts `routes` in the catalog in place of those under `keys`, in one edit (a call
/// arriving meanwhile finds the old route or the new, never neither), and keeps as `keys`
/// those it took: a route refused (its name is another's) is never removed later, so a
/// mount cannot take away a route that is not its own. Returns why each refused one was.
pub(super) fn place<R: Kind>(catalog: &CatalogHandle, keys: &mut Vec<String>, routes: Vec<R>) -> Vec<CatalogError> {
    let (taken, refused) = catalog.catalog.replace(keys, routes);
    *keys = taken;
    refused
}

/// Follows the upstream's changes from a task of the current runtime, if there is one and
/// the upstream announces any; a mount made outside a runtime stays as loaded.
pub(super) fn follow(plan: Arc<Plan>, catalog: CatalogHandle, keys: Keys) {
    let offers = &plan.upstream.client.server().capabilities;
    let mut listen = Listen::new();
    let mut any = false;
    if offers.tools.as_ref().is_some_and(|tools| tools.list_changed == Some(true)) {
        (listen, any) = (listen.tools(), true);
    }
    if offers.prompts.as_ref().is_some_and(|prompts| prompts.list_changed == Some(true)) {
        (listen, any) = (listen.prompts(), true);
    }
    if offers.resources.as_ref().is_some_and(|resources| resources.list_changed == Some(true)) {
        (listen, any) = (listen.resources(), true);
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    if any {
        runtime.spawn(run(plan, catalog, keys, listen));
    }
}

async fn run(plan: Arc<Plan>, catalog: CatalogHandle, mut keys: Keys, listen: Listen) {
    let client = &plan.upstream.client;
    let mut changes = match client.listen(listen).await {
        Ok(changes) => changes,
        Err(error) => {
            tracing::warn!(%error, "a mounted server's changes cannot be followed; its lists stay as loaded");
            return;
        }
    };
    while let Some(change) = changes.next().await {
        let swapped = match change {
            Change::Tools => {
                client.list_tools().await.map(|listed| place(&catalog, &mut keys.tools, plan.tools(listed)))
            }
            Change::Prompts => {
                client.list_prompts().await.map(|listed| place(&catalog, &mut keys.prompts, plan.prompts(listed)))
            }
            Change::Resources => resources_of(client)
                .await
                .map(|(listed, templates)| place(&catalog, &mut keys.resources, plan.resources(listed, templates))),
            _ => continue,
        };
        match swapped {
            Ok(refused) => {
                for error in refused {
                    tracing::warn!(%error, "a mounted server's changed list names a route this server cannot take");
                }
            }
            Err(error) => tracing::warn!(%error, "a mounted server's changed list cannot be read; kept as it was"),
        }
    }
    tracing::info!("a mounted server's stream of changes ended; its lists stay as they are");
}

/// The upstream's resources and resource templates.
async fn resources_of(client: &Client) -> Result<(Vec<Resource>, Vec<ResourceTemplate>), ClientError> {
    Ok((client.list_resources().await?, client.list_resource_templates().await?))
}
