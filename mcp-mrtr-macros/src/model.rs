//! The validated shape of a handler function: who it is, its parameters, and the context
//! parameter if it declares one.

use quote::ToTokens;
use syn::{Attribute, Block, FnArg, Ident, ItemFn, LitStr, Pat, PatType, ReturnType, Token, Type, Visibility};

use crate::attr::{Args, Kind};
use crate::param::{self, ParamAttrs, Role};

/// A handler parameter that is an argument of the call.
pub(crate) struct Param {
    /// Its attributes, without our `#[mcp(...)]`.
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) mutability: Option<Token![mut]>,
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    /// `#[mcp(header = "Region")]`: mirrored into the `Mcp-Param-Region` header.
    pub(crate) header: Option<LitStr>,
}

/// How a tool may run as a task: `#[tool(task = "optional" | "required")]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskMode {
    Optional,
    Required,
}

impl TaskMode {
    fn parse(value: &LitStr) -> syn::Result<Self> {
        match value.value().as_str() {
            "optional" => Ok(Self::Optional),
            "required" => Ok(Self::Required),
            other => Err(syn::Error::new(
                value.span(),
                format!("unknown task mode {other:?}: #[tool(task = \"optional\")] or #[tool(task = \"required\")]"),
            )),
        }
    }

    /// The `TaskSupport` variant this mode names.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Self::Optional => "Optional",
            Self::Required => "Required",
        }
    }
}

/// A parameter the runtime resolves from the server and the request (`State<T>`,
/// `Extension<T>`, `Caller`, an `Option` of the last two, or anything under
/// `#[mcp(extract)]`), not an argument.
pub(crate) struct ResolvedParam {
    pub(crate) pat: Pat,
    pub(crate) ty: Type,
    /// Under `#[mcp(extract)]`: resolved through `FromCtx`, which the user's own
    /// extractors may implement. Otherwise it was read as ours from its shape, and is
    /// resolved through `__private::Extractor`, which only ours implement.
    pub(crate) forced: bool,
}

/// The parameter that receives the request context, if the handler declares one.
pub(crate) struct CtxParam {
    pub(crate) pat: Pat,
    /// `Ctx` or `&Ctx` as written: bound through `__private::Context`, which only ours
    /// implements, so a user's own `Ctx` fails the build at it.
    pub(crate) ty: Type,
}

/// A handler function, validated.
pub(crate) struct Handler {
    pub(crate) kind: Kind,
    pub(crate) args: Args,
    pub(crate) vis: Visibility,
    pub(crate) ident: Ident,
    pub(crate) docs: Vec<Attribute>,
    pub(crate) other_attrs: Vec<Attribute>,
    /// `&self` of a method: allowed only under `#[toolbox]`.
    pub(crate) receiver: Option<syn::Receiver>,
    pub(crate) ctx: Option<CtxParam>,
    pub(crate) resolved: Vec<ResolvedParam>,
    pub(crate) params: Vec<Param>,
    pub(crate) task: Option<TaskMode>,
    pub(crate) output: ReturnType,
    pub(crate) body: Block,
}

impl Handler {
    /// Validates `item`, pushing every problem found into `errors`.
    pub(crate) fn from_syn(kind: Kind, args: Args, item: ItemFn, errors: &mut Vec<syn::Error>) -> Self {
        let sig = &item.sig;
        let attr = kind.attr();
        if sig.asyncness.is_none() {
            errors.push(syn::Error::new(
                sig.fn_token.span,
                format!("#[{attr}] needs an `async fn`: add `async` before `fn`"),
            ));
        }
        // `new_spanned` underlines all of `<…>` (or the `where` clause), not only its first token.
        let generic = format!("#[{attr}] functions cannot be generic: give each parameter a concrete type");
        if !sig.generics.params.is_empty() {
            errors.push(syn::Error::new_spanned(&sig.generics, generic));
        } else if let Some(where_clause) = &sig.generics.where_clause {
            errors.push(syn::Error::new_spanned(where_clause, generic));
        }
        if let Some(variadic) = &sig.variadic {
            errors.push(syn::Error::new_spanned(variadic, format!("#[{attr}] functions cannot be variadic")));
        }
        let (docs, other_attrs) = item.attrs.into_iter().partition(|a| a.path().is_ident("doc"));
        let mut inputs = Inputs::default();
        for input in &sig.inputs {
            match input {
                FnArg::Receiver(found) => inputs.receiver = Some(found.clone()),
                FnArg::Typed(typed) => inputs.push(kind, typed, errors),
            }
        }
        let Inputs { receiver, ctx, resolved, params } = inputs;
        check_headers(&params, errors);
        let task = args.task.as_ref().and_then(|value| TaskMode::parse(value).map_err(|e| errors.push(e)).ok());
        Self {
            kind,
            task,
            args,
            vis: item.vis,
            ident: item.sig.ident.clone(),
            docs,
            other_attrs,
            receiver,
            ctx,
            resolved,
            params,
            output: item.sig.output.clone(),
            body: *item.block,
        }
    }
}

/// A handler's parameters, sorted by what they are.
#[derive(Default)]
struct Inputs {
    receiver: Option<syn::Receiver>,
    ctx: Option<CtxParam>,
    resolved: Vec<ResolvedParam>,
    params: Vec<Param>,
}

impl Inputs {
    fn push(&mut self, kind: Kind, typed: &PatType, errors: &mut Vec<syn::Error>) {
        let attrs = param::parse_attrs(kind, &typed.attrs, errors);
        if attrs.contradicted {
            return;
        }
        let role = param::role(&typed.ty, attrs.forced);
        if let (Some(header), false) = (&attrs.header, role == Role::Argument) {
            errors.push(syn::Error::new(
                header.span(),
                "only arguments can be mirrored into a header, and this parameter's type reads as mcp_mrtr's context or extractor: write #[mcp(arg)] if it is an argument",
            ));
        }
        match role {
            Role::Context => match &self.ctx {
                Some(first) => errors.push(syn::Error::new_spanned(
                    typed,
                    format!(
                        "only one parameter can take the context, and `{}` already does: remove this one",
                        first.pat.to_token_stream()
                    ),
                )),
                None => self.ctx = Some(CtxParam { pat: (*typed.pat).clone(), ty: (*typed.ty).clone() }),
            },
            Role::MutContext => errors.push(syn::Error::new_spanned(
                &typed.ty,
                "the context cannot be borrowed mutably: take `&Ctx` (or `Ctx`)",
            )),
            Role::Extractor { forced } => match resolved_param(typed, forced) {
                Ok(param) => self.resolved.push(param),
                Err(error) => errors.push(error),
            },
            Role::Argument => match argument(typed, attrs) {
                Ok(param) => self.params.push(param),
                Err(error) => errors.push(error),
            },
        }
    }
}

fn resolved_param(typed: &PatType, forced: bool) -> syn::Result<ResolvedParam> {
    if let Some(inner) = param::option_inner(&typed.ty).filter(|inner| param::state_inner(inner).is_some()) {
        return Err(syn::Error::new_spanned(
            inner,
            "state is always there or the server refuses to start: take `State<T>`, not an `Option`",
        ));
    }
    Ok(ResolvedParam { pat: (*typed.pat).clone(), ty: (*typed.ty).clone(), forced })
}

/// An argument of the call: a plain name, which becomes the argument's.
fn argument(typed: &PatType, attrs: ParamAttrs) -> syn::Result<Param> {
    match &*typed.pat {
        Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => Ok(Param {
            attrs: attrs.rest,
            mutability: pat.mutability,
            ident: pat.ident.clone(),
            ty: (*typed.ty).clone(),
            header: attrs.header,
        }),
        // `State(db): State` is an extractor missing its type, not a user's `State` argument.
        other => Err(match param::missing_type_arg(&typed.ty) {
            Some("State") => {
                syn::Error::new_spanned(&typed.ty, "`State` needs the type of the state: `State(db): State<Db>`")
            }
            Some(name) => syn::Error::new_spanned(
                &typed.ty,
                format!("`{name}` needs the type it holds: `{name}(value): {name}<Type>`"),
            ),
            None => {
                syn::Error::new_spanned(other, "parameters must be plain names: each becomes an argument of that name")
            }
        }),
    }
}

/// Two parameters cannot share a header (names compare ignoring case).
fn check_headers(params: &[Param], errors: &mut Vec<syn::Error>) {
    let headers: Vec<&LitStr> = params.iter().filter_map(|p| p.header.as_ref()).collect();
    for (i, header) in headers.iter().enumerate() {
        if headers[..i].iter().any(|earlier| earlier.value().eq_ignore_ascii_case(&header.value())) {
            errors.push(syn::Error::new(header.span(), "another parameter is already mirrored into this header"));
        }
    }
}

/// The handler's return type, where generated code can name it: `None` without one, or
/// with an `impl Trait` in it.
pub(crate) fn nameable_return_type(output: &ReturnType) -> Option<&Type> {
    let ReturnType::Type(_, ty) = output else { return None };
    (!mentions_impl(ty)).then_some(&**ty)
}

fn mentions_impl(ty: &Type) -> bool {
    match ty {
        Type::ImplTrait(_) => true,
        Type::Path(path) => path.path.segments.iter().any(|segment| match &segment.arguments {
            syn::PathArguments::AngleBracketed(args) => args.args.iter().any(|arg| match arg {
                syn::GenericArgument::Type(inner) => mentions_impl(inner),
                _ => false,
            }),
            _ => false,
        }),
        Type::Reference(reference) => mentions_impl(&reference.elem),
        Type::Paren(inner) => mentions_impl(&inner.elem),
        Type::Group(inner) => mentions_impl(&inner.elem),
        Type::Tuple(tuple) => tuple.elems.iter().any(mentions_impl),
        Type::Array(array) => mentions_impl(&array.elem),
        Type::Slice(slice) => mentions_impl(&slice.elem),
        _ => false,
    }
}

/// The type a handler's result is made from: `T` of `Result<T, _>`, else the whole
/// return type; `None` for a function without one.
pub(crate) fn result_type(output: &ReturnType) -> Option<&Type> {
    let ReturnType::Type(_, ty) = output else { return None };
    Some(generic_arg(ty, "Result").unwrap_or(ty))
}

fn generic_arg<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            syn::GenericArgument::Type(inner) => Some(inner),
            _ => None,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::*;

    fn handler(item: ItemFn) -> (Handler, Vec<syn::Error>) {
        let mut errors = Vec::new();
        let handler = Handler::from_syn(Kind::Tool, Args::default(), item, &mut errors);
        (handler, errors)
    }

    #[test]
    fn separates_the_context_from_the_arguments() {
        let (h, errors) = handler(parse_quote! {
            /// Doc.
            async fn f(ctx: &mcp_mrtr::Ctx, city: String, mut days: Option<u8>) -> Result<String, ToolError> { todo!() }
        });
        assert!(errors.is_empty());
        assert!(h.ctx.is_some());
        let names: Vec<String> = h.params.iter().map(|p| p.ident.to_string()).collect();
        assert_eq!(names, ["city", "days"]);
        assert!(h.params[1].mutability.is_some());
        assert!(param::option_inner(&h.params[1].ty).is_some());
        assert_eq!(h.docs.len(), 1);
    }

    #[test]
    fn reports_every_signature_problem() {
        let (h, errors) = handler(parse_quote! { fn f<T>(&self, (a, b): (u8, u8), c: &Ctx, d: Ctx) {} });
        // `&self` is kept for #[toolbox] to judge; the expansion of a lone #[tool] refuses it.
        assert!(h.receiver.is_some());
        assert_eq!(errors.len(), 4, "{:?}", errors.iter().map(ToString::to_string).collect::<Vec<_>>());
    }

    #[test]
    fn reads_header_params_and_task_modes() {
        let mut errors = Vec::new();
        let args = Args { task: Some(parse_quote!("required")), ..Args::default() };
        let item: ItemFn = parse_quote! {
            async fn f(#[mcp(header = "Region")] /// Where.
            region: String, other: u8) -> Result<String, ToolError> { todo!() }
        };
        let h = Handler::from_syn(Kind::Tool, args, item, &mut errors);
        assert!(errors.is_empty());
        assert_eq!(h.task, Some(TaskMode::Required));
        assert_eq!(h.params[0].header.as_ref().map(LitStr::value).as_deref(), Some("Region"));
        assert_eq!(h.params[0].attrs.len(), 1, "the doc stays, #[mcp] goes");
        assert!(h.params[1].header.is_none());
    }

    #[test]
    fn rejects_bad_header_params_and_task_modes() {
        let mut errors = Vec::new();
        let args = Args { task: Some(parse_quote!("sometimes")), ..Args::default() };
        let item: ItemFn = parse_quote! {
            async fn f(#[mcp(header = "A")] a: String, #[mcp(header = "a")] b: String,
                #[mcp(header = "has space")] c: String, #[mcp(route = "x")] d: String) {}
        };
        Handler::from_syn(Kind::Tool, args, item, &mut errors);
        assert_eq!(errors.len(), 4, "{:?}", errors.iter().map(ToString::to_string).collect::<Vec<_>>());
    }

    #[test]
    fn takes_a_users_state_enum_as_an_argument_and_obeys_the_attributes() {
        let (h, errors) = handler(parse_quote! {
            async fn f(state: State, #[mcp(arg)] own: State<Mine>, #[mcp(extract)] db: Db, caller: Caller) {}
        });
        assert!(errors.is_empty());
        let names: Vec<String> = h.params.iter().map(|p| p.ident.to_string()).collect();
        assert_eq!(names, ["state", "own"]);
        let forced: Vec<bool> = h.resolved.iter().map(|p| p.forced).collect();
        assert_eq!(forced, [true, false]);
    }

    #[test]
    fn explains_a_state_without_its_type_and_a_header_on_an_extractor() {
        let (_, errors) = handler(parse_quote! {
            async fn f(State(db): State, #[mcp(header = "Db")] other: State<Db>, c: &mut Ctx) {}
        });
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("`State` needs the type of the state"));
        assert!(errors[1].contains("only arguments can be mirrored into a header"));
        assert!(errors[2].contains("cannot be borrowed mutably"));
    }

    #[test]
    fn names_return_types_without_impl_trait() {
        let out: ReturnType = parse_quote!(-> Result<Json<Weather>, ToolError>);
        assert!(nameable_return_type(&out).is_some());
        for unnameable in
            [parse_quote!(), parse_quote!(-> impl IntoToolResult), parse_quote!(-> Result<impl IntoToolResult, E>)]
        {
            assert!(nameable_return_type(&unnameable).is_none());
        }
    }
}
