//! One dispatch path for every transport: method → handler, then central result
//! stamping (`resultType`, `serverInfo`, caching hints).
//!
//! Entry point: [`Engine::handle`], called by the transports once the envelope is valid.
//! The [`Engine`] is the runtime state this reads (the `Server` builder makes it); the
//! tasks extension plugs in through [`TaskHook`].

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tracing::Instrument as _;

use crate::intake::envelope::{Request, RequestMeta};
use crate::mrtr::context::Delivery;
use crate::mrtr::replay::{self, Outcome, Replay};
use crate::protocol::{CacheHints, CacheScope, Era, Method};
use crate::protocol::{
    CallToolParams, CompleteParams, CompleteResult, Completion, CompletionReference, GetPromptParams, JsonObject,
    ReadResourceParams, RequestId, ResultJson,
};
use crate::routes::catalog::RequestView;
use crate::routes::handler::{
    declined_prompt, declined_read, MethodRoute, PromptRoute, ResourceKind, ResourceRoute, TaskSupport, ToolRoute,
};

use crate::base::deadline;
use crate::base::error::Error;
use crate::mrtr::context::Ctx;

mod access;
mod call;
mod changes;
mod elsewhere;
mod engine;
mod listen;
mod lists;
mod rounds;
mod stamp;
mod task_hook;

pub(crate) use self::changes::{Ended, Hearing};
pub(crate) use self::elsewhere::TasksElsewhere;
#[cfg(feature = "client")]
pub(crate) use self::engine::CompletionFn;
pub(crate) use self::engine::Engine;
pub(crate) use self::task_hook::{Called, TaskHook, TaskRequest, ToolFuture};

use self::call::{Arguments, Call};
use self::stamp::Text;

/// The answer to one request, before framing.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) id: RequestId,
    pub(crate) outcome: Result<ResultJson, Error>,
}

/// What a request's method names on this server: one of the protocol's, served in the
/// request's revision, or one of the server's own ([`MethodRoute`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Routed {
    Protocol(Method),
    Custom,
}

/// A result body, before stamping.
enum Body {
    Complete(Text),
    InputRequired(Text),
    /// A `CreateTaskResult`.
    Task(Text),
}

impl Body {
    /// The body as legacy clients get it: no stamping at all.
    fn into_unstamped(self) -> ResultJson {
        match self {
            Self::Complete(body) | Self::InputRequired(body) | Self::Task(body) => body.unstamped(),
        }
    }

    fn result_type(&self) -> &'static str {
        match self {
            Self::Complete(_) => "complete",
            Self::InputRequired(_) => "input_required",
            Self::Task(_) => "task",
        }
    }
}

impl Engine {
    /// Answers one modern request whose envelope has been validated.
    ///
    /// Not an `async fn`: the work before the handler's (the span, boxing the dispatch)
    /// runs here, so the future returned holds only the boxed dispatch and what follows it,
    /// not the request's parts waiting to be moved in. As an `async fn` it was 1.1 KB, which
    /// every future holding it (the transport's race against giving way, the boxed reply)
    /// copied again whenever it moved.
    pub(crate) fn handle(
        &self,
        request: Request,
        meta: Arc<RequestMeta>,
        delivery: Delivery,
    ) -> impl Future<Output = Reply> + Send + '_ {
        // Serving started the look for tasks to take over; this starts it where nothing
        // served first (in-process use, a router built outside a runtime).
        self.start();
        let id = request.id.clone();
        // One span per request: what it is, never what it carries (no arguments, answers
        // or tokens). Handlers' events and each round's span nest under it. At debug, as
        // tower-http's request spans: a span at info would be formatted on every request
        // of a server logging at info, a tenth of a round's cost (`RUST_LOG=mcp_mrtr=debug`
        // turns them on).
        let span = crate::intake::telemetry::request_span(&request, delivery.era(), &meta);
        // Read only for the debug events below: two clock reads a request otherwise.
        let started = tracing::enabled!(tracing::Level::DEBUG).then(std::time::Instant::now);
        // Boxed: the dispatch future is several KB, and every future that holds this one
        // inline (the transport's, the HTTP framework's) would be moved with it, a memcpy
        // of the whole state each time. A listen stream, which lives for hours, gets a
        // future sized for listening alone.
        let dispatch: futures_util::future::BoxFuture<'_, Result<ResultJson, Error>> =
            if request.known == Some(Method::Listen) && delivery.era() == Era::Modern {
                Box::pin(self.dispatch_listen(request, meta, delivery))
            } else {
                Box::pin(self.dispatch(request, meta, delivery))
            };
        async move {
            // Application code runs in here (handlers, their synchronous prologues, the
            // principal function): a panic fails this request, never the connection.
            let outcome =
                AssertUnwindSafe(dispatch.instrument(span.clone())).catch_unwind().await.unwrap_or_else(|_| {
                    tracing::error!(parent: &span, "a request panicked");
                    Err(Error::internal("the request failed: the server panicked while handling it"))
                });
            let elapsed_us = started.map_or(0, |at| u64::try_from(at.elapsed().as_micros()).unwrap_or(u64::MAX));
            match &outcome {
                // The outcome was recorded when the body was stamped.
                Ok(_) => tracing::debug!(parent: &span, elapsed_us, "request answered"),
                Err(error) => {
                    crate::intake::telemetry::failed(&span, error.code().0, error.message());
                    tracing::debug!(parent: &span, elapsed_us, code = error.code().0, %error, "request failed");
                }
            }
            Reply { id, outcome }
        }
    }

    async fn dispatch(
        &self,
        request: Request,
        meta: Arc<RequestMeta>,
        delivery: Delivery,
    ) -> Result<ResultJson, Error> {
        let id = request.id.clone();
        let era = delivery.era();
        let routed = self.route(&request, era).ok_or_else(|| Error::method_not_found(&request.method))?;
        let params = request.params.unwrap_or_else(|| json!({}));
        let view = RequestView::new(&meta, &delivery);
        let method = match routed {
            Routed::Protocol(method) => method,
            Routed::Custom => {
                let route = self.reach_method(&view, &request.method)?;
                let hints = route.cache.map(|hints| retried_or(&params, hints));
                let body = self.call_method(route, self.call(id, params, meta, delivery)?).await?;
                return Ok(self.finish(body, era, hints));
            }
        };
        let hints = method.is_cacheable().then(|| self.cache_hints_for(method, &params));
        let body = match method {
            Method::Discover => Body::Complete(Text::Prepared(self.discover()?)),
            Method::ToolsList => Body::Complete(Text::Prepared(self.list_tools(&params, &view, era)?)),
            Method::PromptsList => Body::Complete(Text::Prepared(self.list_prompts(&params, &view)?)),
            Method::ResourcesList => Body::Complete(Text::Prepared(self.list_resources(&params, &view)?)),
            Method::ResourceTemplatesList => Body::Complete(Text::Prepared(self.list_templates(&params, &view)?)),
            Method::ToolsCall => self.call_tool(self.call(id, params, meta, delivery)?).await?,
            Method::PromptsGet => self.get_prompt(self.call(id, params, meta, delivery)?).await?,
            Method::ResourcesRead => self.read_resource(self.call(id, params, meta, delivery)?).await?,
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => {
                Body::Complete(Text::from_object(&self.serve_task_method(method, params, &meta, &delivery).await?))
            }
            Method::Complete => {
                let params: CompleteParams = parse_params(&params)?;
                self.may_complete(&view, &params.reference)?;
                let replay = Arc::new(Replay::disabled());
                let limit = delivery.handler_timeout;
                let ctx = Ctx::new(id, meta.clone(), delivery, self.logging, replay.clone(), self.values.clone());
                let run = self.complete(ctx, params);
                match deadline::within(limit, replay::drive(&replay, &meta.client_capabilities, run)).await? {
                    Outcome::Complete(completion) => {
                        Body::Complete(Text::of(&CompleteResult { completion: completion? })?)
                    }
                    // A disabled replay fails every ask, so this cannot happen; answer as if it had.
                    Outcome::InputRequired(..) => {
                        return Err(Error::internal("completion handlers cannot ask for input"))
                    }
                }
            }
            // Modern listens go to `dispatch_listen`; `serves`, which names every method,
            // routes none of the others here.
            _ => return Err(Error::method_not_found(&request.method)),
        };
        Ok(self.finish(body, era, hints))
    }

    /// `tasks/get`, `tasks/update` or `tasks/cancel`: of a task another server made (a
    /// mount's), or of the server's own. Gated on the client's declaring the extension
    /// first, whichever it is, and even for an id that does not exist.
    async fn serve_task_method(
        &self,
        method: Method,
        params: Value,
        meta: &RequestMeta,
        delivery: &Delivery,
    ) -> Result<JsonObject, Error> {
        if let Some(elsewhere) = &self.tasks_elsewhere {
            crate::intake::capability::missing(
                &meta.client_capabilities,
                [crate::intake::capability::Capability::Tasks],
            )?;
            let task_id = params.get("taskId").and_then(Value::as_str).map(str::to_owned).unwrap_or_default();
            if let Some(served) = elsewhere.serve(self, method, &task_id, &params, meta, delivery) {
                return served.await;
            }
            if self.tasks.is_none() {
                return Err(Error::invalid_params(format!("Unknown task: {task_id}")));
            }
        }
        let tasks = self.tasks.as_ref().ok_or_else(|| Error::method_not_found(method.name()))?;
        tasks.serve(self, method, params, meta, delivery).await
    }

    /// The body as the request's revision gets it: stamped for 2026-07-28, bare for
    /// 2025-11-25.
    fn finish(&self, body: Body, era: Era, hints: Option<CacheHints>) -> ResultJson {
        tracing::Span::current().record("outcome", body.result_type());
        match era {
            Era::Modern => self.stamp(body, hints),
            Era::Legacy => body.into_unstamped(),
        }
    }

    async fn call_tool(&self, mut call: Call<CallToolParams>) -> Result<Body, Error> {
        let input = std::mem::take(&mut call.input);
        let arguments = call.params.arguments.take().unwrap_or_default();
        let name = &call.params.name;
        crate::intake::telemetry::target(&tracing::Span::current(), Some(Method::ToolsCall), name);
        let route = self.callable_tool(&call.view(), name)?;
        check_param_headers(&call.delivery, &route, &arguments)?;
        Self::preflight(&call, &route.requires)?;
        call.limit = route.timeout.or(call.limit);
        let legacy = call.delivery.era() == Era::Legacy;
        // Whoever presents a state of the call, and whatever it declares, a task made from
        // another state of it may run this long past its end: its claims are kept as long.
        let horizon = match &self.tasks {
            Some(tasks) if route.task != TaskSupport::Forbidden => tasks.horizon(),
            _ => std::time::Duration::ZERO,
        };
        let tasks = match &self.tasks {
            Some(tasks) if task_hook::may_become_task(route.task, &call.meta.client_capabilities, legacy)? => tasks,
            _ => {
                let target =
                    self.target_digested(&call, Method::ToolsCall.name(), name, &arguments).outlived_by(horizon);
                let arguments = Arguments::new(arguments, call.delivery.bridge.is_some());
                // The round's replay, kept to learn whether another server's task answers:
                // only a server with such a door (a mount's) needs it.
                let last = self.tasks_elsewhere.as_ref().map(|_| std::sync::Mutex::new(None));
                let round = |replay: &Arc<Replay>| {
                    if let Some(last) = &last {
                        *last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(replay.clone());
                    }
                    route.run(self.ctx(&call, replay), arguments.take())
                };
                let body = self.rounds(&target, &call, input, round).await?;
                let last = last.and_then(|last| last.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner));
                return match (last.and_then(|replay: Arc<Replay>| replay.take_elsewhere()), &self.tasks_elsewhere) {
                    (Some((door, created)), Some(elsewhere)) => {
                        Ok(Body::Task(Text::from_object(&elsewhere.adopt(self, &call.delivery, door, created)?)))
                    }
                    _ => Ok(body),
                };
            }
        };
        // A task keeps its arguments in its record, to run again anywhere.
        let target = self.target(&call, Method::ToolsCall.name(), name, Some(&arguments)).outlived_by(horizon);
        let replay = self.open_replay(&target, input, &call.meta.trace)?;
        let handler = route.run(self.ctx(&call, &replay), arguments.clone());
        let request = TaskRequest { tool: name, arguments: &arguments, meta: &call.meta, delivery: &call.delivery };
        // The time limit covers the call up to the task's creation; the task then runs on
        // its own, under the task limits (`TaskLimits::run_timeout`; cancel it to stop it).
        let create = tasks.call(self, request, replay.clone(), handler);
        match deadline::within(call.limit, create).await? {
            Called::Round(outcome) => self.seal(&target, &replay, outcome, &call.delivery.extensions),
            Called::Task(created) => Ok(Body::Task(Text::from_object(&created))),
        }
    }

    async fn get_prompt(&self, mut call: Call<GetPromptParams>) -> Result<Body, Error> {
        let input = std::mem::take(&mut call.input);
        let name = &call.params.name;
        crate::intake::telemetry::target(&tracing::Span::current(), Some(Method::PromptsGet), name);
        let route = self
            .reach_prompt(&call.view(), name)
            .map_err(|refused| refused.or_unknown(|| Error::unknown("prompt", name)))?;
        let args = call.params.arguments.clone().unwrap_or_default();
        let required = route.prompt.arguments.iter().filter(|a| a.required == Some(true));
        if let Some(missing) = required.into_iter().find(|a| !args.contains_key(&a.name)) {
            return Err(Error::invalid_params(format!("Missing required argument: {}", missing.name)));
        }
        Self::preflight(&call, &route.requires)?;
        let args: JsonObject = args.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        let target = self.target(&call, Method::PromptsGet.name(), name, Some(&args));
        self.rounds(&target, &call, input, |replay| {
            let run = (route.get)(self.ctx(&call, replay), args.clone());
            async move { run.await.or_else(|e| e.declined().map(declined_prompt).ok_or(e)).map_err(execution_as_internal) }
        })
        .await
    }

    async fn read_resource(&self, mut call: Call<ReadResourceParams>) -> Result<Body, Error> {
        let input = std::mem::take(&mut call.input);
        let uri = &call.params.uri;
        crate::intake::telemetry::target(&tracing::Span::current(), Some(Method::ResourcesRead), uri);
        let legacy = call.delivery.era() == Era::Legacy;
        let catalog = self.catalog();
        let (route, vars) = self
            .reach_resource(&catalog, &call.view(), uri)
            .map_err(|refused| refused.or_unknown(|| resource_not_found(uri, legacy)))?;
        Self::preflight(&call, &route.requires)?;
        let target = self.target(&call, Method::ResourcesRead.name(), uri, None);
        self.rounds(&target, &call, input, |replay| {
            let run = (route.read)(self.ctx(&call, replay), vars.clone());
            let missing = resource_not_found(uri, legacy);
            async move {
                let declined =
                    |e: crate::base::error::ToolError| e.declined().map(|choice| declined_read(uri, choice)).ok_or(e);
                let result = run.await.or_else(declined).map_err(execution_as_internal)?;
                // The spec forbids empty contents: a resource with nothing to show is missing.
                if result.contents.is_empty() {
                    return Err(missing);
                }
                Ok(result)
            }
        })
        .await
    }

    /// A method of the server's own: its params (without `_meta`) go to the handler,
    /// which may ask in rounds like a tool's; its states are bound to the method's name
    /// and these params.
    async fn call_method(&self, route: Arc<MethodRoute>, mut call: Call<JsonObject>) -> Result<Body, Error> {
        let input = std::mem::take(&mut call.input);
        call.params.remove("_meta");
        let name = route.name.as_str();
        crate::intake::telemetry::target(&tracing::Span::current(), None, name);
        Self::preflight(&call, &route.requires)?;
        let target = self.target(&call, name, name, Some(&call.params));
        self.rounds(&target, &call, input, |replay| {
            let resources = access::MethodResources::new(self, &call.meta, &call.delivery);
            let ctx = self.ctx(&call, replay).with_resource_access(resources);
            let run = (route.run)(ctx, Value::Object(call.params.clone()));
            async move { run.await.map_err(execution_as_internal) }
        })
        .await
    }

    /// What the request's method routes to in `era`: a protocol method of that revision this server
    /// serves, or one of its own methods.
    fn route(&self, request: &Request, era: Era) -> Option<Routed> {
        match request.known {
            Some(method) => (method.is_in(era) && self.serves(method)).then_some(Routed::Protocol(method)),
            None => self.methods.contains_key(&request.method).then_some(Routed::Custom),
        }
    }

    /// Whether this server serves `method`: what it registered, and the extensions it was given.
    fn serves(&self, method: Method) -> bool {
        match method {
            Method::Discover => true,
            Method::ToolsList | Method::ToolsCall => self.catalog().has::<ToolRoute>(),
            Method::PromptsList | Method::PromptsGet => self.catalog().has::<PromptRoute>(),
            Method::ResourcesList | Method::ResourceTemplatesList | Method::ResourcesRead => {
                self.catalog().has::<ResourceRoute>()
            }
            Method::Complete => self.completion.is_some(),
            Method::Listen => self.catalog_config.listen.is_some(),
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => self.serves_tasks(),
            // 2025-11-25 session utilities (answered before dispatch) and removed names.
            Method::Initialize
            | Method::Ping
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe
            | Method::LoggingSetLevel
            | Method::TasksList
            | Method::TasksResult => false,
        }
    }

    /// The hints of a cacheable method's result: lists filtered per caller are private,
    /// and so is anything computed from a retry.
    fn cache_hints_for(&self, method: Method, params: &Value) -> CacheHints {
        if self.lists_vary_by_caller() && method != Method::Discover {
            retried_or(params, CacheHints { scope: CacheScope::Private, ..self.cache })
        } else {
            retried_or(params, self.cache)
        }
    }

    /// Stamps what every modern result carries: `resultType`, `serverInfo` in `_meta`,
    /// and, on complete results of cacheable methods only, the caching hints.
    fn stamp(&self, body: Body, hints: Option<CacheHints>) -> ResultJson {
        let result_type = body.result_type();
        let (body, hints) = match body {
            Body::Complete(body) => (body, hints),
            Body::InputRequired(body) | Body::Task(body) => (body, None),
        };
        stamp::stamp(body, &stamp::Stamps { result_type, hints, info: &self.info, info_json: &self.info_json })
    }

    /// Refuses a completion for a prompt or resource the request may not get or read, as
    /// getting or reading it would: a hidden one is an unknown reference.
    fn may_complete(&self, view: &RequestView<'_>, reference: &CompletionReference) -> Result<(), Error> {
        let decided = match reference {
            CompletionReference::Prompt { name } => self.reach_prompt(view, name).map(drop),
            CompletionReference::Resource { uri } => self.reach_resource_key(view, uri),
        };
        decided.map_err(|refused| {
            refused.or_unknown(|| Error::invalid_params("completion/complete: unknown prompt or resource reference"))
        })
    }

    async fn complete(&self, ctx: Ctx, params: CompleteParams) -> Result<Completion, Error> {
        let complete = self.completion.as_ref().ok_or_else(|| Error::method_not_found("completion/complete"))?;
        complete(ctx, params).await.map_err(execution_as_internal)
    }
}

impl ResourceKind {
    fn matches(&self, uri: &str) -> Option<JsonObject> {
        match self {
            Self::Static(resource) => (resource.uri == uri).then(JsonObject::new),
            Self::Template(_, template) => template.matches(uri),
        }
    }

    pub(crate) fn as_static(&self) -> Option<&crate::protocol::Resource> {
        match self {
            Self::Static(resource) => Some(resource),
            Self::Template(..) => None,
        }
    }

    pub(crate) fn as_template(&self) -> Option<&crate::protocol::ResourceTemplate> {
        match self {
            Self::Template(template, _) => Some(template),
            Self::Static(_) => None,
        }
    }
}

/// Checks the `Mcp-Param-*` headers of a modern HTTP `tools/call` against the tool's
/// mirrored parameters. Only once the tool is known to be reachable: a hidden tool's
/// header rules would otherwise show that it exists.
fn check_param_headers(delivery: &Delivery, route: &ToolRoute, arguments: &JsonObject) -> Result<(), Error> {
    let modern_http = delivery.headers.as_deref().filter(|_| delivery.era() == Era::Modern);
    match modern_http {
        Some(headers) if !route.headers.is_empty() => {
            crate::intake::param_headers::check(&route.headers, headers, Some(&Value::Object(arguments.clone())))
        }
        _ => Ok(()),
    }
}

/// A result computed from a multi-round retry depends on the caller's answers, so it
/// must not be shared, whatever the configured hints say.
fn retried_or(params: &Value, hints: CacheHints) -> CacheHints {
    let is_retry = params.get("inputResponses").is_some() || params.get("requestState").is_some();
    if is_retry {
        CacheHints { ttl_ms: 0, scope: CacheScope::Private }
    } else {
        hints
    }
}

/// `-32602` with `data.uri` in this revision; legacy clients know `-32002`.
fn resource_not_found(uri: &str, legacy: bool) -> Error {
    if legacy {
        Error::new(crate::base::error::ErrorCode(-32002), "Resource not found").with_data(json!({ "uri": uri }))
    } else {
        Error::resource_not_found(uri)
    }
}

/// Prompts and resources have no `isError` result: their execution failures are
/// internal errors carrying the handler's message.
fn execution_as_internal(error: crate::base::error::ToolError) -> Error {
    match error.into_parts() {
        Ok(message) => Error::internal(message),
        Err(protocol) => protocol,
    }
}

/// Reads typed params straight from the request's tree (no copy of the tree first).
fn parse_params<T: DeserializeOwned>(params: &Value) -> Result<T, Error> {
    T::deserialize(params).map_err(|e| Error::invalid_params(format!("Invalid params: {e}")))
}
