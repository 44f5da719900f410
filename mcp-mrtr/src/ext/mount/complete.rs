//! Completions of a mount's prompts and resource templates, asked of the upstream: a
//! `completion/complete` naming a mounted prompt (by the name we serve it under) or a
//! mounted template goes to the upstream under the upstream's names; any other reference
//! goes on to the completion the server had before the mount.

use std::sync::Arc;

use serde_json::{json, Value};

use super::Plan;
use crate::base::error::{Error, ToolError};
use crate::client::Forwarding;
use crate::dispatch::CompletionFn;
use crate::protocol::{CompleteParams, Completion, CompletionReference, JsonObject};

/// The server's completion with `plan`'s references answered by the upstream first.
pub(super) fn chain(plan: Arc<Plan>, previous: Option<CompletionFn>) -> CompletionFn {
    Arc::new(move |ctx, params: CompleteParams| {
        let (plan, previous) = (plan.clone(), previous.clone());
        Box::pin(async move {
            let (reference, ours) = match &params.reference {
                CompletionReference::Prompt { name } => {
                    (plan.upstream_prompt(name).map(|upstream| json!({"type": "ref/prompt", "name": upstream})), name)
                }
                CompletionReference::Resource { uri } => {
                    (plan.has_template(uri).then(|| json!({"type": "ref/resource", "uri": uri})), uri)
                }
            };
            let Some(reference) = reference else {
                return match previous {
                    Some(previous) => previous(ctx, params).await,
                    None => Ok(Completion::default()),
                };
            };
            let ours = ours.clone();
            let Ok(Value::Object(mut forwarded)) = serde_json::to_value(&params) else {
                return Err(ToolError::protocol(Error::internal("completion params that do not serialize")));
            };
            forwarded.insert("ref".into(), reference);
            let bearer = plan.upstream.token_for(ctx.caller(), &ours).await?;
            let mut result: JsonObject = plan
                .upstream
                .client
                .forward("completion/complete", forwarded, Forwarding { bearer, ..Forwarding::default() })
                .await
                .map_err(|error| plan.upstream.refusal(&ours, &error))?;
            serde_json::from_value(result.remove("completion").unwrap_or(Value::Null)).map_err(|error| {
                ToolError::protocol(Error::internal(format!(
                    "the completion of the server behind {ours} cannot be read: {error}"
                )))
            })
        })
    })
}
