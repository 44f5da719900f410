//! The tokens of a site: which macro it is (`ask!`, `once!`, `join!`), the options before
//! its question (`key = …`, `fresh`), whether it is the helper form, and where an ask of
//! an unknown kind or one hidden in another macro's tokens is reported.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::{Expr, Ident, Macro, Token};

use super::Site;

pub(super) fn site_of(mac: &Macro) -> Option<Site> {
    let last = mac.path.segments.last()?;
    match last.ident.to_string().as_str() {
        "ask" => Some(Site::Ask),
        "once" => Some(Site::Once),
        _ => None,
    }
}

pub(super) fn is_join(mac: &Macro) -> bool {
    mac.path.segments.last().is_some_and(|s| s.ident == "join")
}

/// `ask!(ctx, key = …, …)`: an identifier then a comma (`fresh` is an option, not a context).
pub(super) fn is_helper_form(tokens: &TokenStream) -> bool {
    let mut tokens = tokens.clone().into_iter();
    matches!(
        (tokens.next(), tokens.next(), tokens.next()),
        (Some(TokenTree::Ident(ctx)), Some(TokenTree::Punct(p)), Some(TokenTree::Ident(k)))
            if ctx != "fresh" && p.as_char() == ',' && k == "key"
    )
}

/// Splits the leading options off an ask's arguments: `key = EXPR,` and `fresh,`, in
/// either order.
pub(super) fn split_key(tokens: TokenStream) -> syn::Result<(Option<Expr>, TokenStream)> {
    split_options(tokens).map(|options| (options.key, options.rest))
}

/// What comes before an ask's kind.
pub(super) struct Options {
    pub(super) key: Option<Expr>,
    /// `fresh,`: only an answer to the question as asked counts (`Ask::fresh`).
    pub(super) fresh: bool,
    pub(super) rest: TokenStream,
}

pub(super) fn split_options(tokens: TokenStream) -> syn::Result<Options> {
    let (fresh_first, tokens) = split_fresh(tokens)?;
    let (key, rest) = split_leading_key(tokens)?;
    let (fresh_after, rest) = if fresh_first { (false, rest) } else { split_fresh(rest)? };
    Ok(Options { key, fresh: fresh_first || fresh_after, rest })
}

/// Splits a leading `fresh,` off an ask's arguments.
pub(super) fn split_fresh(tokens: TokenStream) -> syn::Result<(bool, TokenStream)> {
    let mut rest = tokens.into_iter().peekable();
    if !matches!(rest.peek(), Some(TokenTree::Ident(flag)) if flag == "fresh") {
        return Ok((false, rest.collect()));
    }
    rest.next();
    match rest.next() {
        Some(TokenTree::Punct(comma)) if comma.as_char() == ',' => Ok((true, rest.collect())),
        other => {
            let span = other.map_or_else(Span::call_site, |token| token.span());
            Err(syn::Error::new(span, "expected `,` after `fresh`: ask!(fresh, elicit \"…\")"))
        }
    }
}

/// Splits a leading `key = EXPR,` off an ask's arguments.
pub(super) fn split_leading_key(tokens: TokenStream) -> syn::Result<(Option<Expr>, TokenStream)> {
    let parser = |input: ParseStream<'_>| {
        let key = if input.peek(Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
            let fork = input.fork();
            let ident: Ident = fork.parse()?;
            if ident == "key" {
                input.parse::<Ident>()?;
                input.parse::<Token![=]>()?;
                let key: Expr = input.parse()?;
                input.parse::<Token![,]>()?;
                Some(key)
            } else {
                None
            }
        } else {
            None
        };
        Ok((key, input.parse::<TokenStream>()?))
    };
    parser.parse2(tokens)
}

/// The first `ask!`/`once!` anywhere in `tokens` that needs the handler's context, as
/// its name and the span of its path; the helper form `ask!(ctx, key = …, …)` brings its
/// own context and is skipped.
pub(super) fn find_site_tokens(tokens: TokenStream) -> Option<(&'static str, Span)> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) if ident == "ask" || ident == "once" => {
                let (Some(TokenTree::Punct(bang)), Some(TokenTree::Group(args))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                else {
                    continue;
                };
                if bang.as_char() != '!' {
                    continue;
                }
                if ident == "once" {
                    return Some(("once!", ident.span()));
                }
                if !is_helper_form(&args.stream()) {
                    return Some(("ask!", ident.span()));
                }
            }
            TokenTree::Group(group) => {
                if let Some(found) = find_site_tokens(group.stream()) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

pub(super) const KIND_HELP: &str =
    "ask! expects `elicit MESSAGE`, `elicit_url MESSAGE, URL`, `sample PROMPT[, option = value]` or `roots`";

/// Where to report an ask whose arguments (after any key) do not start with a known
/// kind (one `needs::capability_of` names, as `mcp_mrtr::ask!` has an arm for): that first
/// token, or the ask itself when it has none; `None` when the kind is known.
pub(super) fn unknown_kind(rest: &TokenStream, ask: Span) -> Option<Span> {
    if crate::needs::capability_of(rest).is_some() {
        return None;
    }
    Some(rest.clone().into_iter().next().map_or(ask, |token| token.span()))
}
