//! The validated shape of a handler function: who it is, its parameters, and the context
//! parameter if it declares one.

use quote::ToTokens;
use syn::{Attribute, Block, FnArg, Ident, ItemFn, Pat, ReturnType, Token, Type, Visibility};

use crate::attr::Args;

/// Which attribute is being expanded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Resource,
}

impl Kind {
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::Resource => "resource",
        }
    }
}

/// A handler parameter that is an argument of the call.
pub(crate) struct Param {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) mutability: Option<Token![mut]>,
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
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
                        Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => params.push(Param {
                            attrs: typed.attrs.clone(),
                            mutability: pat.mutability,
                            ident: pat.ident.clone(),
                            ty: (*typed.ty).clone(),
                        }),
                        other => errors.push(syn::Error::new_spanned(
                            other,
                            "parameters must be plain names: each becomes an argument of that name",
                        )),
                    },
                },
            }
        }
        Self {
            kind,
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
    fn finds_structured_outputs() {
        let out: ReturnType = parse_quote!(-> Result<Json<Weather>, ToolError>);
        assert!(structured_output(&out).is_some());
        let plain: ReturnType = parse_quote!(-> Result<String, ToolError>);
        assert!(structured_output(&plain).is_none());
    }
}
