//! One dispatch path for every transport: method → handler, then central result
//! stamping (`resultType`, `serverInfo`, caching hints).
//!
//! Entry point: [`Server::handle`], called by the transports once the envelope is valid.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::context::Notifier;
use crate::envelope::{Request, RequestMeta, SUPPORTED_VERSIONS};
use crate::handler::ResourceKind;
use crate::protocol::{
    meta_keys, CallToolParams, CallToolResult, CompleteParams, CompleteResult, CompletionReference, DiscoverResult,
    GetPromptParams, JsonObject, ListParams, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, ReadResourceParams, RequestId,
};
use crate::server::{CacheHints, CacheScope};
use crate::{Ctx, Error, Server};

/// The answer to one request, before framing.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) id: RequestId,
    pub(crate) outcome: Result<Value, Error>,
}

/// The methods a modern server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Discover,
    ToolsList,
    ToolsCall,
    PromptsList,
    PromptsGet,
    ResourcesList,
    ResourceTemplatesList,
    ResourcesRead,
    Complete,
}

impl Method {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "server/discover" => Self::Discover,
            "tools/list" => Self::ToolsList,
            "tools/call" => Self::ToolsCall,
            "prompts/list" => Self::PromptsList,
            "prompts/get" => Self::PromptsGet,
            "resources/list" => Self::ResourcesList,
            "resources/templates/list" => Self::ResourceTemplatesList,
            "resources/read" => Self::ResourcesRead,
            "completion/complete" => Self::Complete,
            _ => return None,
        })
    }

    /// Results of these methods carry caching hints when complete.
    fn is_cacheable(self) -> bool {
        !matches!(self, Self::ToolsCall | Self::PromptsGet | Self::Complete)
    }
}

impl Server {
    /// Answers one modern request whose envelope has been validated.
    pub(crate) async fn handle(&self, request: Request, meta: RequestMeta, notifier: Option<Notifier>) -> Reply {
        let id = request.id.clone();
        let outcome = self.dispatch(request, meta, notifier).await;
        if let Err(error) = &outcome {
            tracing::debug!(%id, %error, "request failed");
        }
        Reply { id, outcome }
    }

    async fn dispatch(&self, request: Request, meta: RequestMeta, notifier: Option<Notifier>) -> Result<Value, Error> {
        let method = Method::parse(&request.method)
            .filter(|m| self.serves(*m))
            .ok_or_else(|| Error::method_not_found(&request.method))?;
        let params = request.params.unwrap_or_else(|| json!({}));
        let hints = method.is_cacheable().then(|| self.cache_hints_for(&params));
        let ctx = Ctx::new(request.id, meta, notifier, self.logging);
        let body = match method {
            Method::Discover => to_body(&DiscoverResult {
                supported_versions: SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
                capabilities: self.capabilities(),
                instructions: self.instructions.clone(),
            }),
            Method::ToolsList => {
                first_page(&params)?;
                let tools = self.tools.iter().map(|t| t.tool.clone()).collect();
                to_body(&ListToolsResult { tools, next_cursor: None })
            }
            Method::PromptsList => {
                first_page(&params)?;
                let prompts = self.prompts.iter().map(|p| p.prompt.clone()).collect();
                to_body(&ListPromptsResult { prompts, next_cursor: None })
            }
            Method::ResourcesList => {
                first_page(&params)?;
                let resources = self.resources.iter().filter_map(|r| r.kind.as_static().cloned()).collect();
                to_body(&ListResourcesResult { resources, next_cursor: None })
            }
            Method::ResourceTemplatesList => {
                first_page(&params)?;
                let templates = self.resources.iter().filter_map(|r| r.kind.as_template().cloned()).collect();
                to_body(&ListResourceTemplatesResult { resource_templates: templates, next_cursor: None })
            }
            Method::ToolsCall => self.call_tool(ctx, parse_params(params)?).await?,
            Method::PromptsGet => self.get_prompt(ctx, parse_params(params)?).await?,
            Method::ResourcesRead => self.read_resource(ctx, parse_params(params)?).await?,
            Method::Complete => self.complete(ctx, parse_params(params)?).await?,
        };
        Ok(self.stamp(body, hints))
    }

    fn serves(&self, method: Method) -> bool {
        match method {
            Method::Discover => true,
            Method::ToolsList | Method::ToolsCall => !self.tools.is_empty(),
            Method::PromptsList | Method::PromptsGet => !self.prompts.is_empty(),
            Method::ResourcesList | Method::ResourceTemplatesList | Method::ResourcesRead => !self.resources.is_empty(),
            Method::Complete => self.completion.is_some(),
        }
    }

    /// A result computed from a multi-round retry depends on the caller's answers, so it
    /// must not be shared, whatever the configured hints say.
    fn cache_hints_for(&self, params: &Value) -> CacheHints {
        let is_retry = params.get("inputResponses").is_some() || params.get("requestState").is_some();
        if is_retry {
            CacheHints { ttl_ms: 0, scope: CacheScope::Private }
        } else {
            self.cache
        }
    }

    /// Stamps what every modern result carries: `resultType`, `serverInfo` in `_meta`,
    /// and the caching hints of cacheable methods.
    fn stamp(&self, mut body: JsonObject, hints: Option<CacheHints>) -> Value {
        body.insert("resultType".into(), json!("complete"));
        if let Some(hints) = hints {
            body.insert("ttlMs".into(), json!(hints.ttl_ms));
            body.insert("cacheScope".into(), json!(hints.scope.as_str()));
        }
        let meta = body.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(meta_keys::SERVER_INFO.into(), json!(self.info));
        }
        Value::Object(body)
    }

    async fn call_tool(&self, ctx: Ctx, params: CallToolParams) -> Result<JsonObject, Error> {
        let route = self
            .find_tool(&params.name)
            .ok_or_else(|| Error::invalid_params(format!("Unknown tool: {}", params.name)))?;
        let result = match (route.call)(ctx, params.arguments.unwrap_or_default()).await {
            Ok(result) => result,
            Err(error) => CallToolResult::error(error.into_parts()?),
        };
        Ok(to_body(&result))
    }

    async fn get_prompt(&self, ctx: Ctx, params: GetPromptParams) -> Result<JsonObject, Error> {
        let route = self
            .find_prompt(&params.name)
            .ok_or_else(|| Error::invalid_params(format!("Unknown prompt: {}", params.name)))?;
        let args = params.arguments.unwrap_or_default();
        if let Some(missing) =
            route.prompt.arguments.iter().find(|a| a.required == Some(true) && !args.contains_key(&a.name))
        {
            return Err(Error::invalid_params(format!("Missing required argument: {}", missing.name)));
        }
        let args = args.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        let result = (route.get)(ctx, args).await.map_err(execution_as_internal)?;
        Ok(to_body(&result))
    }

    async fn read_resource(&self, ctx: Ctx, params: ReadResourceParams) -> Result<JsonObject, Error> {
        let (route, vars) = self
            .resources
            .iter()
            .find_map(|r| r.kind.matches(&params.uri).map(|vars| (r, vars)))
            .ok_or_else(|| Error::resource_not_found(&params.uri))?;
        let result = (route.read)(ctx, vars).await.map_err(execution_as_internal)?;
        if result.contents.is_empty() {
            // The spec forbids empty contents: a resource with nothing to show is missing.
            return Err(Error::resource_not_found(&params.uri));
        }
        Ok(to_body(&result))
    }

    async fn complete(&self, ctx: Ctx, params: CompleteParams) -> Result<JsonObject, Error> {
        let known = match &params.reference {
            CompletionReference::Prompt { name } => self.find_prompt(name).is_some(),
            CompletionReference::Resource { uri } => self.resources.iter().any(|r| r.kind.key() == uri),
        };
        if !known {
            return Err(Error::invalid_params("completion/complete: unknown prompt or resource reference"));
        }
        let complete = self.completion.as_ref().ok_or_else(|| Error::method_not_found("completion/complete"))?;
        let completion = complete(ctx, params).await.map_err(execution_as_internal)?;
        Ok(to_body(&CompleteResult { completion }))
    }
}

impl ResourceKind {
    fn matches(&self, uri: &str) -> Option<JsonObject> {
        match self {
            Self::Static(resource) => (resource.uri == uri).then(JsonObject::new),
            Self::Template(_, template) => template.matches(uri),
        }
    }

    fn as_static(&self) -> Option<&crate::protocol::Resource> {
        match self {
            Self::Static(resource) => Some(resource),
            Self::Template(..) => None,
        }
    }

    fn as_template(&self) -> Option<&crate::protocol::ResourceTemplate> {
        match self {
            Self::Template(template, _) => Some(template),
            Self::Static(_) => None,
        }
    }
}

/// Prompts and resources have no `isError` result: their execution failures are
/// internal errors carrying the handler's message.
fn execution_as_internal(error: crate::ToolError) -> Error {
    match error.into_parts() {
        Ok(message) => Error::internal(message),
        Err(protocol) => protocol,
    }
}

/// This server sends every list in one page, so any cursor is one it never issued.
fn first_page(params: &Value) -> Result<(), Error> {
    let list: ListParams = parse_params(params.clone())?;
    match list.cursor {
        Some(_) => Err(Error::invalid_params("Invalid cursor")),
        None => Ok(()),
    }
}

fn parse_params<T: DeserializeOwned>(params: Value) -> Result<T, Error> {
    serde_json::from_value(params).map_err(|e| Error::invalid_params(format!("Invalid params: {e}")))
}

fn to_body<T: Serialize>(value: &T) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(object)) => object,
        // Every result type here is a struct, which serializes to an object.
        other => unreachable!("result types serialize to objects, got {other:?}"),
    }
}
