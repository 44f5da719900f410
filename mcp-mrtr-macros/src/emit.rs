//! Code generation: from a validated [`Handler`] to the function users register, which
//! builds its route. Generated code is glue: it builds a descriptor
//! and calls into `mcp_mrtr::__private`, where the logic lives and is tested.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Ident, ItemFn, LitStr, Path};

use crate::ask::Rewriter;
use crate::attr::Args;
use crate::attr::Kind;
use crate::check;
use crate::docs;
use crate::model::{self, Handler};

/// Expands one attribute. Errors never lose the item's name: on failure the function
/// and a stub route are still emitted, so one mistake gives one error.
pub(crate) fn expand(kind: Kind, args: TokenStream, item: TokenStream) -> TokenStream {
    let item: ItemFn = match syn::parse2(item) {
        Ok(item) => item,
        Err(error) => return error.to_compile_error(),
    };
    // A method's expansion sits in an `impl` block, where the fallback function would be
    // an error of its own.
    let is_method = item.sig.receiver().is_some();
    let mut errors = Vec::new();
    let args = Args::parse(kind, args).unwrap_or_else(|error| {
        errors.push(error);
        Args::default()
    });
    let runtime = runtime(&args);
    let mut handler = Handler::from_syn(kind, args, item, &mut errors);
    if let Some(receiver) = &handler.receiver {
        errors.push(syn::Error::new_spanned(
            receiver,
            format!(
                "#[{}] on a method needs #[toolbox] on its `impl` block, which registers the struct's handlers together",
                kind.attr()
            ),
        ));
    }
    let prepared = prepare(&mut handler, &mut errors);
    if let Some(error) = combine(errors) {
        if is_method {
            return error.to_compile_error();
        }
        return fallback(&handler, &runtime, &error);
    }
    emit(&handler, &runtime, &prepared)
}

/// What the body rewrite found, for the code emitted around it.
pub(crate) struct Prepared {
    /// The hidden context parameter the rewritten `ask!`s use.
    pub(crate) ctx: Ident,
    /// Form types to check at registration.
    pub(crate) form_types: Vec<syn::Type>,
    /// The client capabilities the route declares its asks need (see `needs`).
    pub(crate) client_needs: Vec<&'static str>,
}

/// Checks what spans the attribute and the signature, and rewrites the body's asks.
pub(crate) fn prepare(handler: &mut Handler, errors: &mut Vec<syn::Error>) -> Prepared {
    check::handler(handler, errors);
    let ctx = Ident::new("__mcp_ctx", Span::mixed_site());
    let mut rewriter = Rewriter::new(ctx.clone(), errors);
    rewriter.visit_block_mut(&mut handler.body);
    let mut form_types = std::mem::take(&mut rewriter.form_types);
    form_types.extend(handler.args.forms.iter().cloned());
    let mut client_needs = std::mem::take(&mut rewriter.client_needs);
    // Read only when there is something to declare, since it walks the whole body again;
    // after the rewrite, which keeps every identifier of the body but an ask's `fresh`.
    if !client_needs.is_empty() && crate::needs::branches_on_support(handler.body.to_token_stream()) {
        client_needs.clear();
    }
    Prepared { ctx, form_types, client_needs }
}

/// All errors as one, or `None`.
pub(crate) fn combine(errors: Vec<syn::Error>) -> Option<syn::Error> {
    errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    })
}

/// `::mcp_mrtr`, or the path given with `crate = "…"`.
pub(crate) fn runtime(args: &Args) -> Path {
    args.krate.clone().unwrap_or_else(|| syn::parse_quote!(::mcp_mrtr))
}

fn emit(handler: &Handler, runtime: &Path, prepared: &Prepared) -> TokenStream {
    let Handler { vis, ident, docs, other_attrs, output, .. } = handler;
    let args_ident = format_ident!("__McpArgs", span = Span::mixed_site());
    let args_struct = args_struct(handler, runtime, &args_ident);
    let bindings = handler.params.iter().map(|p| {
        let (mutability, name) = (&p.mutability, &p.ident);
        quote!(#mutability #name)
    });
    let ctx = &prepared.ctx;
    let body = body(handler, runtime, ctx);
    let route = route(handler, runtime, &args_ident, &quote!(__mcp_handler), prepared);
    let route_type = route_type(handler.kind, runtime);
    // A function, not a unit struct: a unit struct's name would also be a pattern, and
    // turn an unrelated `let Some(deploy) = …` in the module into a comparison with it.
    quote! {
        #(#docs)*
        #vis fn #ident() -> #route_type {
            #args_struct

            #(#other_attrs)*
            async fn __mcp_handler(#ctx: #runtime::__private::Ctx, #args_ident { #(#bindings,)* }: #args_ident) #output {
                #body
            }

            #route
        }
    }
}

/// The struct the call's arguments deserialize into; its schema is the input schema.
pub(crate) fn args_struct(handler: &Handler, runtime: &Path, args_ident: &Ident) -> TokenStream {
    let private = quote!(#runtime::__private);
    let serde_crate = LitStr::new(&format!("{}::serde", path_string(runtime)), Span::call_site());
    let schemars_crate = LitStr::new(&format!("{}::schemars", path_string(runtime)), Span::call_site());
    let fields = handler.params.iter().map(|p| {
        let (name, ty) = (&p.ident, &p.ty);
        // Docs as schemars would read them, worked out here: see `docs::schema_docs`.
        if let Some(docs) = docs::schema_docs(&p.attrs) {
            let others = p.attrs.iter().filter(|a| !a.path().is_ident("doc"));
            return quote!(#(#others)* #docs #name: #ty);
        }
        let attrs = &p.attrs;
        quote!(#(#attrs)* #name: #ty)
    });
    quote! {
        #[allow(non_camel_case_types)]
        #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        struct #args_ident { #(#fields,)* }
    }
}

/// The handler's body, after what it takes besides its arguments is resolved and its
/// context parameter bound.
///
/// Both go through traits of `__private` and are spanned at the parameter's type, so a
/// type that cannot be resolved, or that only reads as ours by its name, is reported
/// there with a message of ours.
pub(crate) fn body(handler: &Handler, runtime: &Path, ctx: &Ident) -> TokenStream {
    let private = quote!(#runtime::__private);
    let resolved = handler.resolved.iter().map(|p| {
        let (pat, ty) = (&p.pat, &p.ty);
        if p.forced {
            quote_spanned!(ty.span()=> let #pat: #ty = <#ty as #private::FromCtx>::from_ctx(&#ctx)?;)
        } else {
            quote_spanned!(ty.span()=> let #pat: #ty = <#ty as #private::Extractor>::extract(&#ctx)?;)
        }
    });
    let ctx_binding = handler.ctx.as_ref().map(|c| {
        let (pat, ty) = (&c.pat, &c.ty);
        quote_spanned!(ty.span()=> let #pat: #ty = <#ty as #private::Context>::bind(&#ctx);)
    });
    // The block's statements, not the block: `{ { Ok(..) } }` would give a one-line body
    // an `unused_braces` warning pointing at the user's own braces.
    let statements = &handler.body.stmts;
    quote!(#(#resolved)* #ctx_binding #(#statements)*)
}

/// `route`, refused at registration if a form type the handler asks for cannot be a
/// form: one `check_form` call per type, the last innermost, so the first type that
/// cannot be a form is the refusal that stands. (That a structured result is an object
/// the route checks itself, from its output schema.)
fn with_form_checks(
    handler: &Handler,
    private: &TokenStream,
    form_types: &[syn::Type],
    route: TokenStream,
) -> TokenStream {
    let handler_name = handler.ident.to_string();
    form_types
        .iter()
        .rev()
        .fold(route, |route, ty| quote_spanned!(ty.span()=> #private::check_form::<#ty, _>(#route, #handler_name)))
}

pub(crate) fn route_type(kind: Kind, runtime: &Path) -> TokenStream {
    match kind {
        Kind::Tool => quote!(#runtime::__private::ToolRoute),
        Kind::Prompt => quote!(#runtime::__private::PromptRoute),
        Kind::Resource => quote!(#runtime::__private::ResourceRoute),
    }
}

/// The expression that builds the route from the metadata, running `call` (a function
/// or closure of the context and the arguments), with what registration checks of it.
pub(crate) fn route(
    handler: &Handler,
    runtime: &Path,
    args: &Ident,
    call: &TokenStream,
    prepared: &Prepared,
) -> TokenStream {
    let private = quote!(#runtime::__private);
    let args_attr = &handler.args;
    let name = args_attr.name.clone().unwrap_or_else(|| LitStr::new(&handler.ident.to_string(), handler.ident.span()));
    let description = args_attr
        .description
        .as_ref()
        .map(LitStr::value)
        .or_else(|| docs::description(&handler.docs))
        .unwrap_or_default();
    let title = option(args_attr.title.as_ref());
    // Attaching the handler is where its result type must implement `Into*Result`: span
    // that code with the type, so a type that cannot be returned is reported there.
    let result = model::result_type(&handler.output).map_or_else(Span::call_site, Spanned::span);
    let scopes = args_attr.scopes.as_ref().map(|scopes| quote!(.requires_scopes([#(#scopes),*])));
    let needs = prepared.client_needs.iter().map(|need| {
        let need = Ident::new(need, Span::call_site());
        quote!(.requires_client_capability(#private::Capability::#need))
    });
    let scopes = quote!(#scopes #(#needs)*);
    let attach = quote_spanned!(result=> .handler(#call) #scopes);
    let route = match handler.kind {
        Kind::Tool => {
            let hints = args_attr.hints.iter().map(ToString::to_string);
            let output = output_schema(handler, &private);
            let headers = handler.params.iter().filter_map(|p| {
                let header = p.header.as_ref()?;
                let (param, ty) = (p.ident.to_string(), &p.ty);
                // Spanned on the type, so a type that cannot be a header is reported there.
                let check = quote_spanned!(ty.span()=> #private::header_param::<#ty>);
                Some(quote!((#param, #header, #check)))
            });
            let task = handler.task.map(|mode| {
                let variant = Ident::new(mode.variant(), Span::call_site());
                quote!(.task(#private::TaskSupport::#variant))
            });
            // Both schemas as functions `tool` calls: see there why.
            let schema = quote!(#private::input_schema::<#args>);
            let meta = quote! {
                #private::ToolMeta {
                    schema: #schema,
                    name: #name,
                    description: #description,
                    title: #title,
                    hints: &[#(#hints),*],
                    headers: &[#(#headers),*],
                    output_schema: #output,
                }
            };
            quote!(#private::tool(#meta)#attach #task)
        }
        Kind::Prompt => {
            let arguments = handler.params.iter().map(|p| {
                let arg = p.ident.to_string();
                let arg_description = docs::description(&p.attrs).unwrap_or_default();
                quote!((#arg, #arg_description))
            });
            quote!(#private::prompt::<#args>(#name, #description, #title, &[#(#arguments),*])#attach)
        }
        Kind::Resource => {
            let uri = args_attr.uri.clone().unwrap_or_else(|| LitStr::new("", Span::call_site()));
            let mime = option(args_attr.mime_type.as_ref());
            quote_spanned!(result=> #private::resource::<#args, _, _, _>(#uri, #name, #description, #title, #mime, #call) #scopes)
        }
    };
    let route = match &args_attr.icon {
        Some(src) => quote!((#route).icon(#private::Icon::new(#src))),
        None => route,
    };
    let route = match &args_attr.app {
        Some(uri) => quote!((#route).app(#uri)),
        None => route,
    };
    let route = match &args_attr.visibility {
        Some(variant) => quote!((#route).visibility(#private::Visibility::#variant)),
        None => route,
    };
    let route = with_state_needs(handler, &private, route);
    let route = check::template(handler, &private, route);
    with_form_checks(handler, &private, &prepared.form_types, route)
}

/// `route`, declaring the state each extractor needs: `T` for a `State<T>`, found by
/// the type (an alias under `#[mcp(extract)]` too), so a server never given a `T`
/// refuses to serve instead of failing calls.
fn with_state_needs(handler: &Handler, private: &TokenStream, route: TokenStream) -> TokenStream {
    if handler.resolved.is_empty() {
        return route;
    }
    let name = Ident::new("__mcp_route", Span::mixed_site());
    let needs = handler.resolved.iter().map(|p| {
        let probe = probe(private, &p.ty);
        quote!(let #name = #probe.require(#name);)
    });
    quote!({
        let #name = #route;
        #(#needs)*
        #name
    })
}

/// `probe::<ty>()`, whose methods answer a question by the type (see `Probe` in the
/// runtime). A probe always resolves (a fallback takes every type), so it needs no span
/// of the user's.
fn probe(private: &TokenStream, ty: &syn::Type) -> TokenStream {
    quote!(#private::probe::<#ty>())
}

/// What makes the tool's output schema (a function `tool` calls), found by the result's
/// type (`Json<T>`, `Result<Json<T>, _>`, an alias of either); `None` where the type
/// cannot be named (no return type, or an `impl Trait` in it).
fn output_schema(handler: &Handler, private: &TokenStream) -> TokenStream {
    let Some(ty) = model::nameable_return_type(&handler.output) else {
        return quote!(::core::option::Option::None);
    };
    let probe = probe(private, ty);
    // Spanned at the return type: a `Json<T>` whose `T` has no schema is reported there.
    quote_spanned!(ty.span()=> #probe.output_schema())
}

fn option(value: Option<&LitStr>) -> TokenStream {
    value.map_or_else(|| quote!(::core::option::Option::None), |v| quote!(::core::option::Option::Some(#v)))
}

/// What a failed expansion still emits: the struct and a route stub, so code that
/// registers the handler keeps compiling and only the real error shows.
fn fallback(handler: &Handler, runtime: &Path, error: &syn::Error) -> TokenStream {
    let (vis, ident, docs) = (&handler.vis, &handler.ident, &handler.docs);
    let route_type = route_type(handler.kind, runtime);
    let error = error.to_compile_error();
    quote! {
        #(#docs)*
        #vis fn #ident() -> #route_type {
            ::core::unreachable!("this handler failed to compile")
        }

        #error
    }
}

/// `::mcp_mrtr::__private` as the string serde's and schemars' `crate = "…"` want.
fn path_string(runtime: &Path) -> String {
    let mut text = runtime.to_token_stream().to_string().replace(' ', "");
    text.push_str("::__private");
    text
}
