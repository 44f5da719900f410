//! Helpers for the code `#[tool]`, `#[prompt]` and `#[resource]` generate.
//!
//! Not public API: reachable as `mcp_mrtr::__private` for generated code only, and may
//! change in any release (the macros crate is pinned to this exact version).
//!
//! Every path generated code names goes through here, re-exported from the module that
//! defines it rather than from the crate root, so the public root can be reshaped without
//! breaking expansions.

use std::future::Future;

pub use {schemars, serde, serde_json};

pub use crate::mrtr::context::Ctx;
pub use crate::mrtr::extract::FromCtx;
pub use crate::protocol::apps::Visibility;
pub use crate::protocol::Icon;
pub use crate::routes::handler::{PromptRoute, ResourceRoute, Routes, TaskSupport, ToolRoute, Toolbox};
// What lib.rs's `macro_rules!` (`tools!`, `ask!`, `require_client_capability!`) name, so
// they can go through here too.
pub use crate::intake::capability::Capability;
pub use crate::mrtr::question::{Elicit, ElicitUrl, Roots, Sample};

pub use self::detect::{probe, Context, Extractor, Otherwise, Probe, RequiresState};
pub use crate::intake::envelope::bench_read_envelope;
pub use crate::mrtr::context::{begin_once, record_once};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::base::error::{Error, ToolError};
use crate::protocol::{JsonObject, Prompt, PromptArgument, Resource, ResourceTemplate, Tool, ToolAnnotations};
use crate::routes::handler::IntoResourceResult;

mod detect;

/// What `#[tool]` knows of a tool, by name: what [`tool`] makes its metadata from.
///
/// The schemas come as functions `tool` calls, not as values: the generated function then
/// holds no value that a later call could unwind past, so it needs no cleanup code for
/// one, which was most of its machine code.
#[derive(Clone, Copy)]
pub struct ToolMeta<'a> {
    /// [`input_schema`] of the generated argument struct.
    pub schema: fn() -> Value,
    /// The tool's name.
    pub name: &'a str,
    /// Its description (the doc comment, unless the attribute gives one).
    pub description: &'a str,
    /// Its title, if the attribute gives one.
    pub title: Option<&'a str>,
    /// The hints the attribute names (`read_only`, `destructive`, `idempotent`, `open_world`).
    pub hints: &'a [&'a str],
    /// The parameters mirrored into headers: (parameter, header name, type check).
    pub headers: &'a [(&'a str, &'a str, HeaderCheck)],
    /// The probe's output schema (see `Probe`), if the result is structured.
    pub output_schema: Option<fn() -> Value>,
}

/// A tool's metadata, from what `#[tool]` knows of it. Not generic, so it is compiled
/// once, not once per tool.
pub fn tool(meta: ToolMeta<'_>) -> Tool {
    let ToolMeta { schema, name, description, title, hints, headers, output_schema } = meta;
    let mut schema = schema();
    for (param, header, _) in headers {
        if let Some(Value::Object(property)) = schema.pointer_mut(&format!("/properties/{param}")) {
            property.insert("x-mcp-header".into(), Value::from(*header));
        }
    }
    let mut tool = Tool::new(name).description(description).input_schema(schema);
    if let Some(title) = title {
        tool = tool.title(title);
    }
    if !hints.is_empty() {
        let hint = |name: &str| hints.contains(&name).then_some(true);
        tool = tool.annotations(ToolAnnotations {
            title: None,
            read_only_hint: hint("read_only"),
            destructive_hint: hint("destructive"),
            idempotent_hint: hint("idempotent"),
            open_world_hint: hint("open_world"),
        });
    }
    if let Some(schema) = output_schema {
        tool = tool.output_schema(schema());
    }
    tool
}

/// Proof, checked at compile time, that a parameter's type can be mirrored into a header.
pub type HeaderCheck = fn() -> ();

/// The type check of `#[mcp(header = "…")]`: only strings, integers and booleans (or an
/// `Option` of one) can travel in a header.
pub fn header_param<T: HeaderParam>() {}

/// Types a `#[mcp(header = "…")]` parameter may have.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be mirrored into a header",
    note = "#[mcp(header = \"…\")] goes on a String, integer or bool parameter, or an Option of one"
)]
pub trait HeaderParam {}

impl HeaderParam for String {}
impl HeaderParam for bool {}
impl<T: HeaderParam> HeaderParam for Option<T> {}
macro_rules! header_integers {
    ($($ty:ty),*) => { $(impl HeaderParam for $ty {})* };
}
header_integers!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

/// The input schema of a generated argument struct: an object schema without the
/// struct's internal name, whose optional parameters are plain types that are not
/// required (see `base::tool_schema`).
pub fn input_schema<A: schemars::JsonSchema>() -> Value {
    as_input(schemars::schema_for!(A).to_value())
}

/// The non-generic part of [`input_schema`], compiled once rather than once per tool.
fn as_input(mut schema: Value) -> Value {
    if let Value::Object(object) = &mut schema {
        object.remove("title");
        object.entry("properties").or_insert_with(|| Value::Object(JsonObject::new()));
    }
    crate::base::tool_schema::for_input(&mut schema);
    schema
}

/// The output schema of a structured (`Json<T>`) tool result; registration refuses one
/// that is not an object.
pub(crate) fn output_schema<T: schemars::JsonSchema>() -> Value {
    as_output(schemars::schema_for!(T).to_value())
}

/// The non-generic part of [`output_schema`].
fn as_output(mut schema: Value) -> Value {
    crate::base::tool_schema::for_output(&mut schema);
    schema
}

/// The routes [`check_form`] can refuse.
pub trait Checked {
    /// The route, refused at registration with `problem`.
    fn refused(self, problem: String) -> Self;
}

impl Checked for ToolRoute {
    fn refused(mut self, problem: String) -> Self {
        self.unfit = Some(problem);
        self
    }
}

impl Checked for PromptRoute {
    fn refused(mut self, problem: String) -> Self {
        self.unfit = Some(problem);
        self
    }
}

impl Checked for ResourceRoute {
    fn refused(mut self, problem: String) -> Self {
        self.unfit = Some(problem);
        self
    }
}

/// A prompt's metadata; `arguments` are (name, description) of `A`'s fields, which are
/// required as `A`'s schema says (an `Option`, however spelled, or a `#[serde(default)]`
/// field is not), the same rule the arguments are read by.
pub fn prompt<A: schemars::JsonSchema>(
    name: &str,
    description: &str,
    title: Option<&str>,
    arguments: &[(&str, &str)],
) -> Prompt {
    let schema = input_schema::<A>();
    let required = schema.get("required").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    prompt_of(name, description, title, arguments, required)
}

/// The non-generic part of [`prompt`], compiled once rather than once per prompt.
fn prompt_of(
    name: &str,
    description: &str,
    title: Option<&str>,
    arguments: &[(&str, &str)],
    required: &[Value],
) -> Prompt {
    let mut prompt = Prompt::new(name).description(description);
    if let Some(title) = title {
        prompt = prompt.title(title);
    }
    for (name, description) in arguments {
        let required = required.iter().any(|field| field.as_str() == Some(name));
        let argument = PromptArgument {
            name: (*name).to_owned(),
            title: None,
            description: (!description.is_empty()).then(|| (*description).to_owned()),
            required: Some(required),
        };
        prompt = prompt.argument(argument);
    }
    prompt
}

/// Fails the build of a `#[resource]` whose uri template is malformed: the macro calls
/// it in a `const`, so the runtime's own grammar judges the template.
///
/// # Panics
///
/// At compile time, with what is wrong, when `template` is malformed.
pub const fn check_template(template: &str) {
    use crate::base::uri_template::{check, TemplateError};
    // A const panic takes a literal or one `{}` of a `&str`, so each message is whole.
    match check(template) {
        Ok(()) => {}
        Err(TemplateError::Unclosed) => panic!("malformed uri template: a `{{` is never closed"),
        Err(TemplateError::Unopened) => panic!("malformed uri template: a `}}` closes no `{{`"),
        Err(TemplateError::BadName) => {
            panic!("malformed uri template: variables are non-empty names of letters, digits and `_`")
        }
        Err(TemplateError::Adjacent) => {
            panic!("malformed uri template: two variables must be separated by literal text")
        }
        Err(TemplateError::Repeated) => panic!("malformed uri template: a variable appears twice"),
    }
}

/// Fails the build of a `#[resource]` with a parameter that is not a variable of its
/// template, with `problem` (the macro's message, naming both). A malformed template is
/// [`check_template`]'s error alone.
///
/// # Panics
///
/// At compile time, with `problem`, when `name` is not a variable of `template`.
pub const fn check_template_variable(template: &str, name: &str, problem: &str) {
    use crate::base::uri_template::{check, has_variable};
    assert!(check(template).is_err() || has_variable(template, name), "{}", problem);
}

/// A resource route: a template when `uri` has `{variables}`, else a static resource.
pub fn resource<A, R, F, Fut>(
    uri: &str,
    name: &str,
    description: &str,
    title: Option<&str>,
    mime_type: Option<&str>,
    read: F,
) -> ResourceRoute
where
    A: DeserializeOwned + Send + 'static,
    R: IntoResourceResult,
    F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
{
    if uri.contains('{') {
        let mut template = ResourceTemplate::new(uri, name);
        if let Some(title) = title {
            template = template.title(title);
        }
        template.description = (!description.is_empty()).then(|| description.to_owned());
        template.mime_type = mime_type.map(str::to_owned);
        return template.handler(read);
    }
    let mut resource = Resource::new(uri, name);
    if let Some(title) = title {
        resource = resource.title(title);
    }
    resource.description = (!description.is_empty()).then(|| description.to_owned());
    resource.mime_type = mime_type.map(str::to_owned);
    resource.handler(move |ctx| {
        // A static resource's generated argument struct has no fields.
        let args = A::deserialize(&Value::Object(JsonObject::new()));
        let fut = args.map(|args| read(ctx, args));
        async move {
            match fut {
                Ok(fut) => fut.await,
                Err(e) => Err(ToolError::protocol(Error::internal(format!("resource arguments: {e}")))),
            }
        }
    })
}

/// `route`, refused at registration when `T`, a type the handler asks for with
/// `ask!(elicit …)`, cannot be a form (not a flat object of primitives), with the
/// offending property named: a type that cannot be asked for stops the server from
/// serving, never reaches a client.
///
/// The macros chain one call per form type, the handler's last form innermost, so the
/// refusal that stands is the first form's that cannot be one. (A chain of calls rather
/// than one call with a slice of problems: no temporaries to drop, which made each
/// handler's expansion measurably slower to compile.)
pub fn check_form<T: crate::mrtr::question::ElicitForm, R: Checked>(route: R, handler: &str) -> R {
    match T::requested_schema() {
        Ok(_) => route,
        Err(problem) => route.refused(not_a_form(handler, std::any::type_name::<T>(), &problem)),
    }
}

/// The non-generic part of [`check_form`]: why `form` cannot be a form.
fn not_a_form(handler: &str, form: &str, problem: &str) -> String {
    format!("handler `{handler}` asks for a `{form}` with ask!(elicit …), which cannot be a form: {problem}")
}

/// `benches/state.rs`: a seal and open round trip under `config`; the opened payload's
/// length.
pub fn bench_seal_open(config: &crate::intake::request_state::StateConfig, payload: &[u8]) -> usize {
    crate::intake::request_state::bench_seal_open(config, payload)
}

/// `benches/state.rs`: the binding digest of a call with `arguments`.
pub fn bench_binding_digest(arguments: &Value) -> [u8; 32] {
    crate::intake::request_state::bench_binding_digest(arguments)
}
