//! What a handler parameter is: an argument of the call, the request context, or an
//! extractor the runtime resolves from the server and the request.
//!
//! `#[mcp(arg)]` and `#[mcp(extract)]` say it outright. Without them the type's shape
//! decides, never its last name alone: `State<T>` and `Extension<T>` with one type
//! argument, `Caller` and `Ctx` with none (so a user's `enum State { … }` is an
//! argument). A macro cannot see what a name resolves to, so the code emitted for a
//! parameter read as ours by its shape names a trait of `__private` that only our types
//! implement: a user's own `struct Caller;` fails the build, saying to write
//! `#[mcp(arg)]`, instead of quietly turning into something else.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, LitStr, PathArguments, PathSegment, Type};

use crate::attr::Kind;

/// An explicit `#[mcp(arg)]` or `#[mcp(extract)]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Forced {
    Arg,
    Extract,
}

impl Forced {
    fn key(self) -> &'static str {
        match self {
            Self::Arg => "arg",
            Self::Extract => "extract",
        }
    }
}

/// A parameter's `#[mcp(...)]` keys, and its other attributes.
pub(crate) struct ParamAttrs {
    /// Docs and serde attributes: they stay on the generated argument field.
    pub(crate) rest: Vec<Attribute>,
    /// `header = "Region"`: mirrored into the `Mcp-Param-Region` header.
    pub(crate) header: Option<LitStr>,
    pub(crate) forced: Option<Forced>,
    /// Keys contradicted each other (already reported): what the parameter is stays
    /// unknown, so it gets no second error of its own.
    pub(crate) contradicted: bool,
}

/// What a parameter is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// `Ctx` or `&Ctx`.
    Context,
    /// `&mut Ctx`, which cannot be given: the context is shared by the handler's asks.
    MutContext,
    /// Resolved from the request; `forced` by `#[mcp(extract)]` (through `FromCtx`, so an
    /// extractor of the user's own works) or read so from the type's shape (through
    /// `__private::Extractor`, which only ours implement).
    Extractor {
        forced: bool,
    },
    Argument,
}

/// Splits our `#[mcp(...)]` off a parameter's attributes, pushing every problem into
/// `errors`. A key that contradicts an earlier one is reported at itself.
pub(crate) fn parse_attrs(kind: Kind, attrs: &[Attribute], errors: &mut Vec<syn::Error>) -> ParamAttrs {
    let mut out = ParamAttrs { rest: Vec::new(), header: None, forced: None, contradicted: false };
    for attr in attrs {
        if !attr.path().is_ident("mcp") {
            out.rest.push(attr.clone());
            continue;
        }
        let parsed = attr.parse_nested_meta(|meta| {
            let forced = if meta.path.is_ident("arg") {
                Forced::Arg
            } else if meta.path.is_ident("extract") {
                Forced::Extract
            } else if meta.path.is_ident("header") {
                let value: LitStr = meta.value()?.parse()?;
                check_header(kind, &value)?;
                if out.forced == Some(Forced::Extract) {
                    out.contradicted = true;
                    return Err(extract_and_header(meta.path.span()));
                }
                out.header = Some(value);
                return Ok(());
            } else {
                return Err(meta.error(
                    "unknown key in #[mcp(...)] on a parameter: expected arg, extract or header = \"Name\"",
                ));
            };
            if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                return Err(meta.error(format!("`{0}` takes no value: #[mcp({0})]", forced.key())));
            }
            match out.forced {
                Some(earlier) if earlier == forced => {
                    Err(meta.error(format!("`{}` is given twice: keep one", forced.key())))
                }
                Some(_) => {
                    out.contradicted = true;
                    Err(meta.error(
                        "#[mcp(arg)] and #[mcp(extract)] contradict each other: a parameter is either an argument of the call or resolved from the request, keep one",
                    ))
                }
                None if forced == Forced::Extract && out.header.is_some() => {
                    out.contradicted = true;
                    Err(extract_and_header(meta.path.span()))
                }
                None => {
                    out.forced = Some(forced);
                    Ok(())
                }
            }
        });
        if let Err(error) = parsed {
            errors.push(error);
        }
    }
    out
}

fn extract_and_header(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        "#[mcp(extract)] and `header` contradict each other: an extractor is not an argument, so nothing of it travels in a header",
    )
}

fn check_header(kind: Kind, value: &LitStr) -> syn::Result<()> {
    if kind != Kind::Tool {
        return Err(syn::Error::new(value.span(), "only tool parameters can be mirrored into a header"));
    }
    let name = value.value();
    let token = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Err(syn::Error::new(
            value.span(),
            "a header name is a non-empty token: letters, digits and !#$%&'*+-.^_`|~, no spaces",
        ));
    }
    Ok(())
}

/// What a parameter of type `ty` is, given its attributes.
pub(crate) fn role(ty: &Type, forced: Option<Forced>) -> Role {
    match (forced, context_shape(ty)) {
        (Some(Forced::Arg), _) => Role::Argument,
        (_, Some(true)) => Role::MutContext,
        (_, Some(false)) => Role::Context,
        (Some(Forced::Extract), None) => Role::Extractor { forced: true },
        (None, None) if extractor_shape(ty) => Role::Extractor { forced: false },
        (None, None) => Role::Argument,
    }
}

/// `Some(is_mut)` for `Ctx`, `&Ctx` or `&mut Ctx` (any path ending in a `Ctx` without
/// generic arguments); `Some(false)` for the first two.
fn context_shape(ty: &Type) -> Option<bool> {
    match peel(ty) {
        Type::Reference(reference) if bare(&reference.elem, "Ctx") => Some(reference.mutability.is_some()),
        other => bare(other, "Ctx").then_some(false),
    }
}

/// `State<T>`, `Extension<T>` or `Caller`, or an `Option` of one.
fn extractor_shape(ty: &Type) -> bool {
    let ty = option_inner(ty).unwrap_or(ty);
    one_type_arg(ty, "State").is_some() || one_type_arg(ty, "Extension").is_some() || bare(ty, "Caller")
}

/// `Some(T)` when `ty` has the shape of `State<T>`.
pub(crate) fn state_inner(ty: &Type) -> Option<&Type> {
    one_type_arg(ty, "State")
}

/// `State` or `Extension` without the type it holds: the name of it, for the hint to add one.
pub(crate) fn missing_type_arg(ty: &Type) -> Option<&'static str> {
    ["State", "Extension"].into_iter().find(|name| bare(ty, name))
}

/// `Some(T)` when `ty` is `Option<T>`.
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    one_type_arg(ty, "Option")
}

/// Through the invisible groups a `macro_rules!` `$t:ty` leaves, and parentheses.
fn peel(ty: &Type) -> &Type {
    match ty {
        Type::Group(group) => peel(&group.elem),
        Type::Paren(paren) => peel(&paren.elem),
        other => other,
    }
}

/// The last segment of a plain path type (`a::b::Name<…>`, not `<T as X>::Name`).
fn last_segment(ty: &Type) -> Option<&PathSegment> {
    match peel(ty) {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        _ => None,
    }
}

/// Whether `ty` is a path ending in `name` with no generic arguments.
fn bare(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|last| last.ident == name && last.arguments.is_none())
}

/// `Some(T)` when `ty` is a path ending in `name<T>`: exactly one generic argument, a type.
fn one_type_arg<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let last = last_segment(ty).filter(|last| last.ident == name)?;
    let PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.first() {
        Some(syn::GenericArgument::Type(inner)) if args.args.len() == 1 => Some(inner),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::*;

    fn role_of(ty: &Type) -> Role {
        role(ty, None)
    }

    #[test]
    fn the_shape_decides_not_the_name() {
        assert_eq!(role_of(&parse_quote!(State<Db>)), Role::Extractor { forced: false });
        assert_eq!(role_of(&parse_quote!(mcp_mrtr::State<Db>)), Role::Extractor { forced: false });
        assert_eq!(role_of(&parse_quote!(Option<Extension<Tenant>>)), Role::Extractor { forced: false });
        assert_eq!(role_of(&parse_quote!(Caller)), Role::Extractor { forced: false });
        assert_eq!(role_of(&parse_quote!(&Ctx)), Role::Context);
        assert_eq!(role_of(&parse_quote!(mcp_mrtr::Ctx)), Role::Context);
        assert_eq!(role_of(&parse_quote!(&mut Ctx)), Role::MutContext);
        // A user's enum, and names with the wrong number of generics, are arguments.
        for ty in [
            parse_quote!(State),
            parse_quote!(State<A, B>),
            parse_quote!(State<'a>),
            parse_quote!(Caller<T>),
            parse_quote!(Ctx<T>),
            parse_quote!(&Ctx<T>),
            parse_quote!(<T as X>::State<U>),
            parse_quote!(Vec<State<Db>>),
        ] {
            assert_eq!(role_of(&ty), Role::Argument);
        }
    }

    #[test]
    fn attributes_override_the_shape() {
        assert_eq!(role(&parse_quote!(State<Db>), Some(Forced::Arg)), Role::Argument);
        assert_eq!(role(&parse_quote!(Ctx), Some(Forced::Arg)), Role::Argument);
        assert_eq!(role(&parse_quote!(Db), Some(Forced::Extract)), Role::Extractor { forced: true });
        assert_eq!(role(&parse_quote!(&Ctx), Some(Forced::Extract)), Role::Context);
    }

    #[test]
    fn contradicting_keys_are_errors() {
        let parse = |attrs: Vec<Attribute>| {
            let mut errors = Vec::new();
            let parsed = parse_attrs(Kind::Tool, &attrs, &mut errors);
            (parsed, errors.iter().map(ToString::to_string).collect::<Vec<_>>())
        };
        let (ok, errors) = parse(vec![parse_quote!(#[mcp(arg, header = "Region")]), parse_quote!(#[doc = "x"])]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!((ok.forced, ok.rest.len()), (Some(Forced::Arg), 1));
        for attrs in [
            vec![parse_quote!(#[mcp(arg, extract)])],
            vec![parse_quote!(#[mcp(extract)]), parse_quote!(#[mcp(arg)])],
            vec![parse_quote!(#[mcp(extract, header = "A")])],
            vec![parse_quote!(#[mcp(header = "A", extract)])],
            vec![parse_quote!(#[mcp(arg, arg)])],
            vec![parse_quote!(#[mcp(arg = true)])],
            vec![parse_quote!(#[mcp(argument)])],
        ] {
            let (_, errors) = parse(attrs);
            assert_eq!(errors.len(), 1, "{errors:?}");
        }
    }
}
