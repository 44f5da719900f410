//! Routes built by hand: [`Tool::handler`], [`Prompt::handler`], [`Resource::handler`]
//! and [`ResourceTemplate::handler`] attach a function to the protocol's metadata, with
//! its arguments decoded (a mismatch named by its field) before the function runs. The
//! macros build the same routes.

use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{
    HandlerFn, IntoPromptResult, IntoResourceResult, IntoToolResult, PromptRoute, Requires, ResourceKind,
    ResourceRoute, TaskSupport, ToolRoute,
};
use crate::base::error::{Error, ToolError};
use crate::base::uri_template::UriTemplate;
use crate::mrtr::context::Ctx;
use crate::protocol::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};

impl Tool {
    /// Attaches the function that runs this tool.
    ///
    /// The arguments are deserialized into `A` (use `serde_json::Map` to take them raw);
    /// a mismatch is answered before the function runs as a tool execution error
    /// (`isError: true`, SEP-1303) whose text names the field, so the model reads it and
    /// calls again with the arguments fixed.
    pub fn handler<A, R, F, Fut>(self, f: F) -> ToolRoute
    where
        A: DeserializeOwned + Send + 'static,
        R: IntoToolResult,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        let name = self.name.clone();
        let call: HandlerFn<JsonObject, CallToolResult> = Arc::new(move |ctx, args| {
            // SEP-1303: a tool execution error, which the model reads, not a protocol error.
            let parsed = decode_args::<A>(args, "tool", &name).map_err(ToolError::new);
            let fut = parsed.map(|args| f(ctx, args));
            Box::pin(async move { Ok(fut?.await?.into_tool_result()) })
        });
        let unfit = unfit_output(&self);
        // A tool built by hand may carry `_meta.ui` already: read it here, once.
        let visibility = crate::protocol::apps::Visibility::of_tool_meta(self.meta.as_ref());
        ToolRoute {
            visibility,
            tool: self,
            call,
            requires: Requires::default(),
            timeout: None,
            task: TaskSupport::Forbidden,
            task_timeout: None,
            decoded_arguments: crate::base::kept_arguments::decoded::<A>,
            headers: Vec::new(),
            unfit,
        }
    }
}

/// Why a tool cannot be registered for its output schema, if it cannot: MCP's
/// `outputSchema` and `structuredContent` are objects, so a list or a number (a
/// `Json<Vec<…>>`, say) must be wrapped in a struct.
fn unfit_output(tool: &Tool) -> Option<String> {
    let kind = tool.output_schema.as_ref()?.get("type");
    (kind.and_then(Value::as_str) != Some("object")).then(|| {
        format!(
            "its structured result is not a JSON object, which MCP requires (outputSchema is `type: object`, \
             this one's type is {}): wrap the value in a struct, e.g. `struct Hits {{ hits: Vec<…> }}`",
            kind.map_or_else(|| "not given".to_owned(), Value::to_string)
        )
    })
}

impl Prompt {
    /// Attaches the function that renders this prompt.
    ///
    /// Missing required arguments are answered with `-32602` before the function runs;
    /// the (string) arguments are deserialized into `A`.
    pub fn handler<A, R, F, Fut>(self, f: F) -> PromptRoute
    where
        A: DeserializeOwned + Send + 'static,
        R: IntoPromptResult,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        let name = self.name.clone();
        let get: HandlerFn<JsonObject, GetPromptResult> = Arc::new(move |ctx, args| {
            let fut = decode_args::<A>(args, "prompt", &name).map_err(invalid_params).map(|args| f(ctx, args));
            Box::pin(async move { Ok(fut?.await?.into_prompt_result()) })
        });
        PromptRoute { prompt: self, get, requires: Requires::default(), unfit: None }
    }
}

impl Resource {
    /// Attaches the function that reads this resource.
    pub fn handler<R, F, Fut>(self, f: F) -> ResourceRoute
    where
        R: IntoResourceResult,
        F: Fn(Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        let read: HandlerFn<JsonObject, ReadResourceResult> = Arc::new(move |ctx, _| {
            let fut = f(ctx);
            Box::pin(async move { Ok(fut.await?.into_resource_result()) })
        });
        ResourceRoute { kind: ResourceKind::Static(self), read, requires: Requires::default(), unfit: None }
    }
}

impl ResourceTemplate {
    /// Attaches the function that reads resources matching this template.
    ///
    /// The template's variables, extracted from the requested URI, are deserialized into
    /// `A` (for `test://items/{id}`, a struct with an `id: String` field).
    ///
    /// A malformed URI template (an unclosed `{`, an empty or repeated variable) is a
    /// configuration error: the server refuses to serve, naming it.
    pub fn handler<A, R, F, Fut>(self, f: F) -> ResourceRoute
    where
        A: DeserializeOwned + Send + 'static,
        R: IntoResourceResult,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        // A refused route is never served: the empty template in its place is never matched.
        let (template, unfit) = match UriTemplate::parse(&self.uri_template) {
            Ok(template) => (template, None),
            Err(e) => (UriTemplate::default(), Some(format!("malformed uri template {:?}: {e}", self.uri_template))),
        };
        let name = self.name.clone();
        let read: HandlerFn<JsonObject, ReadResourceResult> = Arc::new(move |ctx, vars| {
            let fut =
                decode_args::<A>(vars, "resource template", &name).map_err(invalid_params).map(|vars| f(ctx, vars));
            Box::pin(async move { Ok(fut?.await?.into_resource_result()) })
        });
        ResourceRoute { kind: ResourceKind::Template(self, template), read, requires: Requires::default(), unfit }
    }
}

/// `args` as `A`, or what is wrong with them, naming the argument (`days: invalid type…`).
fn decode_args<A: DeserializeOwned>(args: JsonObject, kind: &str, name: &str) -> Result<A, String> {
    // From `&Value`, as everything else that decodes `A` does (`kept_arguments`): serde's
    // derived code is compiled once per deserializer it meets, per type, and a crate of
    // many tools pays for each. A string is copied rather than moved, which is cheap.
    let args = Value::Object(args);
    A::deserialize(&args).map_err(|_| {
        // Decoded again, this time keeping the path, which a plain decode does not say for
        // a value of the wrong type ("invalid type: string, expected f64": of which field?).
        let error = serde_path_to_error::deserialize::<_, A>(&args).err();
        let detail = error.map_or_else(String::new, |e| match e.path().to_string().as_str() {
            "." => e.into_inner().to_string(),
            path => format!("{path}: {}", e.into_inner()),
        });
        format!("Invalid arguments for {kind} {name}: {detail}")
    })
}

/// A prompt's or a template's arguments that do not decode: `-32602`, as before SEP-1303,
/// which concerns tools alone.
fn invalid_params(message: String) -> ToolError {
    ToolError::protocol(Error::invalid_params(message))
}
