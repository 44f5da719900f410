//! `#[toolbox]` on an `impl` block: its `#[tool]`, `#[prompt]` and `#[resource]` methods
//! taking `&self` become handlers of a struct the server owns, registered together.
//!
//! Each such method becomes a hidden method taking the request context and its arguments
//! one by one; a `Toolbox` impl (in a `const _` block, beside the argument structs)
//! builds the routes, each holding an `Arc` of the struct.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Attribute, ImplItem, ImplItemFn, ItemFn, ItemImpl, Meta};

use crate::attr::Args;
use crate::attr::Kind;
use crate::emit::{self, Prepared};
use crate::model::Handler;

/// Expands `#[toolbox]`.
pub(crate) fn expand(args: &TokenStream, item: TokenStream) -> TokenStream {
    let mut item: ItemImpl = match syn::parse2(item) {
        Ok(item) => item,
        Err(error) => return error.to_compile_error(),
    };
    let mut errors = Vec::new();
    if !args.is_empty() {
        errors.push(syn::Error::new_spanned(args, "#[toolbox] takes no arguments"));
    }
    if let Some((_, path, _)) = &item.trait_ {
        errors.push(syn::Error::new_spanned(path, "#[toolbox] goes on an inherent `impl` block, not a trait impl"));
    }
    if !item.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(&item.generics, "#[toolbox] structs cannot be generic"));
    }
    if let Some(error) = emit::combine(std::mem::take(&mut errors)) {
        // Not a toolbox at all: leave the block as written, minus the handler attributes
        // (which would each add an error of their own).
        for member in &mut item.items {
            if let ImplItem::Fn(method) = member {
                take_handler_attr(method);
            }
        }
        let error = error.to_compile_error();
        return quote!(#item #error);
    }
    let mut handlers = Vec::new();
    let mut failed = Vec::new();
    for (index, member) in item.items.iter_mut().enumerate() {
        let ImplItem::Fn(method) = member else { continue };
        let Some((kind, attr)) = take_handler_attr(method) else { continue };
        let before = errors.len();
        let (handler, prepared) = handler_of(kind, &attr, method, &mut errors);
        if errors.len() > before {
            failed.push(index);
            continue;
        }
        *member = ImplItem::Verbatim(hidden_method(&handler, &prepared));
        handlers.push((handler, prepared));
    }
    let runtime = emit::runtime(&Args::default());
    if let Some(error) = emit::combine(errors) {
        // Keep the struct a toolbox, minus the handlers that failed, so code that
        // registers it compiles and only the real errors show.
        let mut index = 0;
        item.items.retain(|_| {
            index += 1;
            !failed.contains(&(index - 1))
        });
        let self_ty = &item.self_ty;
        let error = error.to_compile_error();
        return quote! {
            #item
            impl #runtime::__private::Toolbox for #self_ty {
                fn routes(self: ::std::sync::Arc<Self>) -> #runtime::__private::Routes {
                    ::core::unreachable!("this toolbox failed to compile")
                }
            }
            #error
        };
    }
    let routes = toolbox_impl(&item, &handlers, &runtime);
    quote!(#item #routes)
}

/// Removes the first `#[tool]`, `#[prompt]` or `#[resource]` attribute of `method`.
fn take_handler_attr(method: &mut ImplItemFn) -> Option<(Kind, Attribute)> {
    let position = method.attrs.iter().position(|a| kind_of(a).is_some())?;
    let attr = method.attrs.remove(position);
    Some((kind_of(&attr)?, attr))
}

fn kind_of(attr: &Attribute) -> Option<Kind> {
    let last = attr.path().segments.last()?;
    match last.ident.to_string().as_str() {
        "tool" => Some(Kind::Tool),
        "prompt" => Some(Kind::Prompt),
        "resource" => Some(Kind::Resource),
        _ => None,
    }
}

/// Validates one annotated method, pushing every problem into `errors`.
fn handler_of(kind: Kind, attr: &Attribute, method: &ImplItemFn, errors: &mut Vec<syn::Error>) -> (Handler, Prepared) {
    let tokens = match &attr.meta {
        Meta::Path(_) => TokenStream::new(),
        Meta::List(list) => list.tokens.clone(),
        Meta::NameValue(value) => {
            errors.push(syn::Error::new_spanned(value, format!("write #[{}(…)]", kind.attr())));
            TokenStream::new()
        }
    };
    let args = Args::parse(kind, tokens).unwrap_or_else(|error| {
        errors.push(error);
        Args::default()
    });
    if args.krate.is_some() {
        errors.push(syn::Error::new_spanned(attr, "in a #[toolbox], `crate = …` is not supported"));
    }
    let item = ItemFn {
        attrs: method.attrs.clone(),
        vis: method.vis.clone(),
        sig: method.sig.clone(),
        block: Box::new(method.block.clone()),
    };
    let mut handler = Handler::from_syn(kind, args, item, errors);
    match &handler.receiver {
        Some(receiver) if receiver.reference.is_some() && receiver.mutability.is_none() => {}
        Some(receiver) => errors.push(syn::Error::new_spanned(
            receiver,
            "toolbox handlers take `&self`: the struct is shared by every call at once (use a Mutex inside for state that changes)",
        )),
        None => errors.push(syn::Error::new_spanned(
            &method.sig.ident,
            format!("#[{}] in a #[toolbox] goes on a method taking `&self`", kind.attr()),
        )),
    }
    let prepared = emit::prepare(&mut handler, errors);
    (handler, prepared)
}

/// The name of the method a handler becomes.
fn hidden_name(handler: &Handler) -> syn::Ident {
    format_ident!("__mcp_{}", handler.ident)
}

/// The method as the route calls it: the context, then each argument.
fn hidden_method(handler: &Handler, prepared: &Prepared) -> TokenStream {
    let runtime = emit::runtime(&handler.args);
    let (ctx, name, output, attrs) = (&prepared.ctx, hidden_name(handler), &handler.output, &handler.other_attrs);
    // Doc comments on a parameter describe the argument in the schema; a fn parameter
    // may not carry them.
    let params = handler.params.iter().map(|p| {
        let (mutability, ident, ty) = (&p.mutability, &p.ident, &p.ty);
        quote!(#mutability #ident: #ty)
    });
    let body = emit::body(handler, &runtime, ctx);
    quote! {
        #[doc(hidden)]
        #[allow(clippy::too_many_arguments, clippy::unused_async)]
        #(#attrs)*
        async fn #name(&self, #ctx: #runtime::__private::Ctx, #(#params),*) #output {
            #body
        }
    }
}

/// `impl Toolbox for T`: every handler's route, each calling its hidden method on a
/// shared `Arc<T>`.
fn toolbox_impl(item: &ItemImpl, handlers: &[(Handler, Prepared)], runtime: &syn::Path) -> TokenStream {
    let self_ty = &item.self_ty;
    let mut structs = Vec::new();
    let mut pushes = Vec::new();
    for (handler, prepared) in handlers {
        let args_ident = format_ident!("__McpArgs_{}", handler.ident, span = Span::mixed_site());
        structs.push(emit::args_struct(handler, runtime, &args_ident));
        let method = hidden_name(handler);
        let names: Vec<_> = handler.params.iter().map(|p| &p.ident).collect();
        let call = quote! {{
            let this = ::std::sync::Arc::clone(&self);
            move |ctx: #runtime::__private::Ctx, #args_ident { #(#names,)* }: #args_ident| {
                let this = ::std::sync::Arc::clone(&this);
                async move { this.#method(ctx, #(#names),*).await }
            }
        }};
        let route = emit::route(handler, runtime, &args_ident, &call, prepared);
        let list = match handler.kind {
            Kind::Tool => quote!(tools),
            Kind::Prompt => quote!(prompts),
            Kind::Resource => quote!(resources),
        };
        pushes.push(quote! {
            routes.#list.push(#route);
        });
    }
    quote! {
        const _: () = {
            #(#structs)*

            #[automatically_derived]
            impl #runtime::__private::Toolbox for #self_ty {
                fn routes(self: ::std::sync::Arc<Self>) -> #runtime::__private::Routes {
                    let mut routes = #runtime::__private::Routes::default();
                    #(#pushes)*
                    routes
                }
            }
        };
    }
}
