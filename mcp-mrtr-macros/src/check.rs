//! What is checked of a handler before and while its crate compiles: at expansion, what
//! the tokens alone decide (a description, a uri); in `const`s the expansion emits, what
//! the runtime's own rules decide (a resource's uri template). What needs the types'
//! values (a form's schema, a structured result) is checked at registration, by the
//! routes the expansion builds.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

use crate::attr::Kind;
use crate::docs;
use crate::model::Handler;

/// Checks that span the attribute and the signature.
pub(crate) fn handler(handler: &Handler, errors: &mut Vec<syn::Error>) {
    let attr = handler.kind.attr();
    let described = handler.args.description.is_some() || docs::description(&handler.docs).is_some();
    if !described && handler.kind != Kind::Resource {
        errors.push(syn::Error::new(
            handler.ident.span(),
            format!("#[{attr}] needs a description for the model: add a `///` doc comment or #[{attr}(description = \"…\")]"),
        ));
    }
    if handler.kind == Kind::Resource && handler.args.uri.is_none() {
        errors.push(syn::Error::new(
            handler.ident.span(),
            "#[resource] needs a uri: #[resource(uri = \"file:///notes/{name}\")]",
        ));
    }
}

/// `route` with a resource's uri template checked as the crate compiles: `const`s that
/// run the runtime's grammar (`__private::check_template`), so the template is judged by
/// the same code that matches it, and each parameter is one of its variables. A failed
/// check is a compile error at the uri or the parameter.
pub(crate) fn template(handler: &Handler, private: &TokenStream, route: TokenStream) -> TokenStream {
    let Some(uri) = handler.args.uri.as_ref().filter(|_| handler.kind == Kind::Resource) else {
        return route;
    };
    let value = uri.value();
    let variables = handler.params.iter().map(|param| {
        let name = param.ident.to_string();
        let problem = format!(
            "`{name}` is not a variable of the uri template {value:?}: resource parameters are its `{{variables}}`"
        );
        let private = respan(private, param.ident.span());
        quote_spanned!(param.ident.span()=> const _: () = #private::check_template_variable(#uri, #name, #problem);)
    });
    let whole = {
        let private = respan(private, uri.span());
        quote_spanned!(uri.span()=> const _: () = #private::check_template(#uri);)
    };
    quote!({
        #whole
        #(#variables)*
        #route
    })
}

/// `tokens` spanned at `span`: a const's failure is reported at its whole call, which
/// would otherwise start at the attribute, where the path to the runtime came from.
fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}
