//! The validated shape of a handler function: who it is, its parameters, and the context
//! parameter if it declares one.

use quote::ToTokens;
use syn::{Attribute, Block, FnArg, Ident, ItemFn, LitStr, Pat, ReturnType, Token, Type, Visibility};

use crate::attr::{Args, Kind};

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
/// `Extension<T>`, `Caller`, or an `Option` of the last two), not an argument.
pub(crate) struct ResolvedParam {
    pub(crate) pat: Pat,
    pub(crate) ty: Type,
    /// `T` of `State<T>`: state the server must be given.
    pub(crate) state: Option<Type>,
}

/// The parameter that receives the request context, if the handler declares one.
pub(crate) struct CtxParam {
    pub(crate) pat: Pat,
    pub(crate) by_ref: bool,
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
        let mut receiver = None;
        let mut ctx = None;
        let mut resolved = Vec::new();
        let mut params = Vec::new();
        for input in &sig.inputs {
            match input {
                FnArg::Receiver(found) => receiver = Some(found.clone()),
                FnArg::Typed(typed) => match (context_type(&typed.ty), &ctx) {
                    (Some(by_ref), None) => ctx = Some(CtxParam { pat: (*typed.pat).clone(), by_ref }),
                    (Some(_), Some(first)) => errors.push(syn::Error::new_spanned(
                        typed,
                        format!(
                            "only one parameter can take the context, and `{}` already does: remove this one",
                            first.pat.to_token_stream()
                        ),
                    )),
                    (None, _) if is_resolved(&typed.ty) => match resolved_param(typed) {
                        Ok(param) => resolved.push(param),
                        Err(error) => errors.push(error),
                    },
                    (None, _) => match &*typed.pat {
                        Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                            let (attrs, header) = param_attrs(kind, &typed.attrs, errors);
                            params.push(Param {
                                attrs,
                                mutability: pat.mutability,
                                ident: pat.ident.clone(),
                                ty: (*typed.ty).clone(),
                                header,
                            });
                        }
                        other => errors.push(syn::Error::new_spanned(
                            other,
                            "parameters must be plain names: each becomes an argument of that name",
                        )),
                    },
                },
            }
        }
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

/// The types the runtime resolves from the request (by the last segment of their path).
const RESOLVED: &[&str] = &["State", "Extension", "Caller"];

fn last_ident(ty: &Type) -> Option<&Ident> {
    match ty {
        Type::Path(path) if path.qself.is_none() => Some(&path.path.segments.last()?.ident),
        _ => None,
    }
}

/// Whether `ty` is one of [`RESOLVED`], or an `Option` of one.
fn is_resolved(ty: &Type) -> bool {
    let ty = option_inner(ty).unwrap_or(ty);
    last_ident(ty).is_some_and(|ident| RESOLVED.iter().any(|name| ident == name))
}

fn resolved_param(typed: &syn::PatType) -> syn::Result<ResolvedParam> {
    let ty = (*typed.ty).clone();
    if let Some(inner) = option_inner(&ty).filter(|inner| last_ident(inner).is_some_and(|i| i == "State")) {
        return Err(syn::Error::new_spanned(
            inner,
            "state is always there or the server refuses to start: take `State<T>`, not an `Option`",
        ));
    }
    let state = (last_ident(&ty).is_some_and(|i| i == "State")).then(|| generic_arg(&ty, "State").cloned());
    let state = match state {
        None => None,
        Some(Some(inner)) => Some(inner),
        Some(None) => {
            return Err(syn::Error::new_spanned(&ty, "`State` needs the type of the state: `State(db): State<Db>`"))
        }
    };
    Ok(ResolvedParam { pat: (*typed.pat).clone(), ty, state })
}

/// Splits our `#[mcp(header = "…")]` off a parameter's attributes; the rest (docs,
/// serde attributes) stay on the generated argument field.
fn param_attrs(kind: Kind, attrs: &[Attribute], errors: &mut Vec<syn::Error>) -> (Vec<Attribute>, Option<LitStr>) {
    let mut header = None;
    let mut rest = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("mcp") {
            rest.push(attr.clone());
            continue;
        }
        let parsed = attr.parse_nested_meta(|meta| {
            if !meta.path.is_ident("header") {
                return Err(meta.error("unknown key in #[mcp(...)] on a parameter: expected header = \"Name\""));
            }
            let value: LitStr = meta.value()?.parse()?;
            if kind != Kind::Tool {
                return Err(syn::Error::new(value.span(), "only tool parameters can be mirrored into a header"));
            }
            if !is_header_token(&value.value()) {
                return Err(syn::Error::new(
                    value.span(),
                    "a header name is a non-empty token: letters, digits and !#$%&'*+-.^_`|~, no spaces",
                ));
            }
            header = Some(value);
            Ok(())
        });
        if let Err(error) = parsed {
            errors.push(error);
        }
    }
    (rest, header)
}

fn is_header_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
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

/// `Some(by_ref)` when `ty` is `Ctx` or `&Ctx` (any path ending in `Ctx`).
fn context_type(ty: &Type) -> Option<bool> {
    match ty {
        Type::Reference(reference) => context_type(&reference.elem).filter(|by_ref| !by_ref).map(|_| true),
        Type::Path(path) if path.qself.is_none() => (path.path.segments.last()?.ident == "Ctx").then_some(false),
        _ => None,
    }
}

/// `Some(T)` when `ty` is `Option<T>`.
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(args) if args.args.len() == 1 => match &args.args[0] {
            syn::GenericArgument::Type(inner) => Some(inner),
            _ => None,
        },
        _ => None,
    }
}

/// `Some(T)` when the handler returns `Json<T>` or `Result<Json<T>, _>`.
pub(crate) fn structured_output(output: &ReturnType) -> Option<&Type> {
    let ReturnType::Type(_, ty) = output else { return None };
    let ty = generic_arg(ty, "Result").unwrap_or(ty);
    generic_arg(ty, "Json")
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
        assert!(h.ctx.as_ref().is_some_and(|c| c.by_ref));
        let names: Vec<String> = h.params.iter().map(|p| p.ident.to_string()).collect();
        assert_eq!(names, ["city", "days"]);
        assert!(h.params[1].mutability.is_some());
        assert!(option_inner(&h.params[1].ty).is_some());
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
    fn finds_structured_outputs() {
        let out: ReturnType = parse_quote!(-> Result<Json<Weather>, ToolError>);
        assert!(structured_output(&out).is_some());
        let plain: ReturnType = parse_quote!(-> Result<String, ToolError>);
        assert!(structured_output(&plain).is_none());
    }
}
