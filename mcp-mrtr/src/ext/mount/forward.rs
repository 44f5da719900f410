//! A mounted tool's call, prompt or resource read (a template's at the URI its variables
//! make), forwarded: one request to the upstream
//! per round of ours. The upstream's questions become this round's (the same keys, gated
//! on the caller's capabilities like any question of ours), and what the retry needs rides
//! in our sealed state: the upstream's `requestState`, opaque to us too, and the keys it
//! asked, so only answers to those reach it.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::held;
use super::relay::{relay_one, RELAYED_NOTICES};
use super::upstream::{upstream_meta, Upstream};
use crate::base::error::{Error, ErrorCode, ToolError};
use crate::base::uri_template::UriTemplate;
use crate::client::Forwarding;
use crate::mrtr::context::{Ctx, InputRequired};
use crate::protocol::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
    TASKS_EXTENSION,
};
use crate::routes::handler::{PromptRoute, ResourceRoute, ToolRoute};

/// What a round of a mounted request seals for the next: the upstream's state and the
/// keys of its questions.
#[derive(Serialize, Deserialize)]
struct Hop {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<String>,
    asked: Vec<String>,
}

/// A mounted request's target as served, and as the upstream knows it.
struct Names {
    ours: String,
    upstream: String,
}

/// `tool` (named as we serve it) forwarding to the upstream's tool `upstream_name`.
pub(super) fn tool_route(upstream: &Arc<Upstream>, tool: Tool, upstream_name: String) -> ToolRoute {
    let upstream = upstream.clone();
    let names = Arc::new(Names { ours: tool.name.clone(), upstream: upstream_name });
    tool.handler(move |ctx: Ctx, arguments: JsonObject| {
        let (upstream, names) = (upstream.clone(), names.clone());
        async move {
            let params = named(&names.upstream, "arguments", arguments);
            let result = forward(&ctx, &upstream, &names.ours, "tools/call", params).await?;
            // The upstream made a task of it (it was offered tasks, as the caller declared
            // them): the caller gets that task, and the result here is never read.
            match upstream.door() {
                Some(door) if result.get("resultType").and_then(Value::as_str) == Some("task") => {
                    ctx.answer_with_task(door, result);
                    Ok(CallToolResult::default())
                }
                _ => read(&names.ours, result),
            }
        }
    })
}

/// `prompt` (named as we serve it) forwarding to the upstream's prompt `upstream_name`.
pub(super) fn prompt_route(upstream: &Arc<Upstream>, prompt: Prompt, upstream_name: String) -> PromptRoute {
    let upstream = upstream.clone();
    let names = Arc::new(Names { ours: prompt.name.clone(), upstream: upstream_name });
    prompt.handler(move |ctx: Ctx, arguments: JsonObject| {
        let (upstream, names) = (upstream.clone(), names.clone());
        async move {
            let params = named(&names.upstream, "arguments", arguments);
            read::<GetPromptResult>(&names.ours, forward(&ctx, &upstream, &names.ours, "prompts/get", params).await?)
        }
    })
}

/// `resource`, read from the upstream at its own URI.
pub(super) fn resource_route(upstream: &Arc<Upstream>, resource: Resource) -> ResourceRoute {
    let upstream = upstream.clone();
    let uri: Arc<str> = resource.uri.as_str().into();
    resource.handler(move |ctx: Ctx| {
        let (upstream, uri) = (upstream.clone(), uri.clone());
        async move {
            let mut params = JsonObject::new();
            params.insert("uri".into(), Value::String(uri.to_string()));
            read::<ReadResourceResult>(&uri, forward(&ctx, &upstream, &uri, "resources/read", params).await?)
        }
    })
}

/// `template`, each read forwarded to the upstream at the URI its variables make.
pub(super) fn template_route(upstream: &Arc<Upstream>, template: ResourceTemplate) -> ResourceRoute {
    let upstream = upstream.clone();
    // A template that does not parse is refused by the handler's own parse, when served.
    let parsed = Arc::new(UriTemplate::parse(&template.uri_template).unwrap_or_default());
    let name: Arc<str> = template.uri_template.as_str().into();
    template.handler(move |ctx: Ctx, vars: JsonObject| {
        let (upstream, parsed, name) = (upstream.clone(), parsed.clone(), name.clone());
        async move {
            let uri = parsed.expand(&vars).ok_or_else(|| {
                ToolError::protocol(Error::invalid_params(format!("the URI does not fit the template {name}")))
            })?;
            let mut params = JsonObject::new();
            params.insert("uri".into(), Value::String(uri));
            read::<ReadResourceResult>(&name, forward(&ctx, &upstream, &name, "resources/read", params).await?)
        }
    })
}

/// `{"name": name, field: value}`.
fn named(name: &str, field: &str, value: JsonObject) -> JsonObject {
    let mut params = JsonObject::new();
    params.insert("name".into(), name.into());
    params.insert(field.into(), Value::Object(value));
    params
}

/// An upstream's complete result as `R`.
fn read<R: DeserializeOwned>(ours: &str, result: JsonObject) -> Result<R, ToolError> {
    serde_json::from_value(Value::Object(result)).map_err(|error| {
        ToolError::protocol(Error::internal(format!("the result of the server behind {ours} cannot be read: {error}")))
    })
}

/// Sends `method` with `params` to the upstream, with this round's answers and the
/// upstream's state when the round is a retry, and returns the upstream's result (complete,
/// or a task); when the upstream asks, ends this round with its questions.
async fn forward(
    ctx: &Ctx,
    upstream: &Upstream,
    ours: &str,
    method: &str,
    mut params: JsonObject,
) -> Result<JsonObject, ToolError> {
    let bearer = upstream.token_for(ctx.caller(), ours).await?;
    // Held while this round waits on the upstream; a round past the limit waits its turn
    // (within the handler's time limit). The semaphore is never closed.
    let _in_flight = upstream.in_flight.acquire().await.map_err(|_| Error::internal("the mount was closed"))?;
    if upstream.client.session().is_some() {
        let ended = held::forward(ctx, &upstream.held, ours, method, params, bearer).await?;
        return ended.map_err(|error| ToolError::protocol(upstream.refusal(ours, &error)));
    }
    if let Some(hop) = ctx.request_state::<Hop>().await.map_err(ToolError::protocol)? {
        let answers: Map<String, Value> =
            hop.asked.iter().filter_map(|key| Some((key.clone(), ctx.input_response(key)?))).collect();
        params.insert("inputResponses".into(), Value::Object(answers));
        if let Some(state) = hop.state {
            params.insert("requestState".into(), Value::String(state));
        }
    } else {
        // Answers sent ahead of any question (a client that knows what will be asked)
        // are the upstream's to take or ignore, as they would be without the hop.
        let ahead = ctx.input_responses();
        if !ahead.is_empty() {
            params.insert("inputResponses".into(), Value::Object(ahead));
        }
    }
    // Only a call may become a task, and only with an upstream that serves them.
    let tasks = method == "tools/call" && upstream.door().is_some();
    params.insert("_meta".into(), upstream_meta(ctx.client_capabilities(), ctx.meta().log_level, tasks));
    // The upstream's progress and log messages are relayed as this request's, when the
    // caller asked for them.
    let progress = ctx.meta().progress_token.is_some();
    let (notices, relayed) = if progress || ctx.meta().log_level.is_some() {
        let (sender, receiver) = mpsc::channel::<Value>(RELAYED_NOTICES);
        (Some(sender), Some(receiver))
    } else {
        (None, None)
    };
    let relay = async {
        let Some(mut relayed) = relayed else { return };
        while let Some(note) = relayed.recv().await {
            relay_one(ctx, &note).await;
        }
    };
    let forwarding = upstream.client.forward(method, params, Forwarding { notices, progress, answers: None, bearer });
    let (forwarded, ()) = tokio::join!(forwarding, relay);
    let mut result =
        forwarded.map_err(|error| ToolError::protocol(for_the_caller(ctx, upstream.refusal(ours, &error))))?;
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return Ok(result);
    }
    let mut next = InputRequired::new();
    let mut asked = Vec::new();
    if let Some(Value::Object(requests)) = result.remove("inputRequests") {
        for (key, request) in requests {
            asked.push(key.clone());
            next = next.request_json(key, request);
        }
    }
    let state = match result.remove("requestState") {
        Some(Value::String(state)) => Some(state),
        _ => None,
    };
    ctx.input_required(next.state(&Hop { state, asked })).await
}

/// `refused` as the caller reads it: a 2025-11-25 caller cannot declare tasks, so the
/// upstream's "tasks required" is, for it, a tool this session cannot run (as this
/// server answers such a caller for a tool of its own).
fn for_the_caller(ctx: &Ctx, refused: Error) -> Error {
    let tasks_required = refused.code() == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        && refused.data().is_some_and(|data| data["requiredCapabilities"]["extensions"].get(TASKS_EXTENSION).is_some());
    if tasks_required && ctx.protocol_version() != crate::protocol::PROTOCOL_VERSION {
        return Error::task_only_tool_in_legacy_session();
    }
    refused
}
