//! A mount kept in step with its upstream: where the upstream announces changes of its
//! lists (`listChanged`, `subscriptions/listen` or a session's stream, through the client),
//! a task reads each change, lists again, and swaps the mount's routes in this server's
//! catalog, whose own listeners then hear of the change as this server's.

use std::sync::Arc;

use super::{Plan, PromptRoute, ResourceRoute, ToolRoute};
use crate::client::{Change, Client, ClientError, Listen};
use crate::protocol::{Resource, ResourceTemplate};
use crate::routes::catalog::{CatalogHandle, Kind};

/// The catalog keys a mount's routes are registered under, to swap them on a change.
pub(super) struct Keys {
    tools: Vec<String>,
    prompts: Vec<String>,
    resources: Vec<String>,
}

impl Keys {
    pub(super) fn of(tools: &[ToolRoute], prompts: &[PromptRoute], resources: &[ResourceRoute]) -> Self {
        Self {
            tools: tools.iter().map(|route| route.tool.name.clone()).collect(),
            prompts: prompts.iter().map(|route| route.prompt.name.clone()).collect(),
            resources: resources.iter().map(|route| Kind::key(route).to_owned()).collect(),
        }
    }
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
            Change::Tools => client.list_tools().await.map(|listed| {
                let routes = plan.tools(listed);
                swap(&mut keys.tools, routes.iter().map(|route| route.tool.name.clone()).collect(), |key| {
                    catalog.tools().remove(key)
                });
                routes.into_iter().filter_map(|route| catalog.tools().add(route).err()).collect::<Vec<_>>()
            }),
            Change::Prompts => client.list_prompts().await.map(|listed| {
                let routes = plan.prompts(listed);
                swap(&mut keys.prompts, routes.iter().map(|route| route.prompt.name.clone()).collect(), |key| {
                    catalog.prompts().remove(key)
                });
                routes.into_iter().filter_map(|route| catalog.prompts().add(route).err()).collect()
            }),
            Change::Resources => resources_of(client).await.map(|(listed, templates)| {
                let routes = plan.resources(listed, templates);
                swap(&mut keys.resources, routes.iter().map(|route| Kind::key(route).to_owned()).collect(), |key| {
                    catalog.resources().remove(key)
                });
                routes.into_iter().filter_map(|route| catalog.resources().add(route).err()).collect()
            }),
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

/// Removes the routes under `old` keys (`remove`) and keeps `new` as the keys from now on;
/// the caller adds the new routes.
fn swap(old: &mut Vec<String>, new: Vec<String>, remove: impl Fn(&str) -> bool) {
    for key in old.iter() {
        remove(key);
    }
    *old = new;
}
