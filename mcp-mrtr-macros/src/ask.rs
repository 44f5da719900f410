//! The `ask!` / `once!` rewrite: finds each site in a handler body and hands it the
//! hidden request context and its key.
//!
//! `ask!(elicit "…")` becomes `ask!(@__mcp CTX, KEY; elicit "…").await`; inside `join!`
//! the `.await` is left to the join, so joined asks are polled together and go out in
//! one round. `ask!(fresh, …)` (before or after `key = …,`) appends `.fresh()`: only an
//! answer to the question as asked counts.
//!
//! Keys: an explicit `key = …` wins, else the name the `let` binds (through `?`,
//! `.await`, method calls, and the scrutinee of a `match` or `if let`; in `let (a, b) =
//! join!(…)` each ask's place in the tuple). An ask with neither is an error: its key is
//! the wire's name for the answer, and a position would change with the code around it.
//! (`once!`'s results stay inside the sealed state, so an unnamed one is keyed by its
//! position.) The rewrite also refuses, with an error on the `ask!`: two sites with one
//! static key, an ask in a loop without a per-iteration key, and asks inside closures,
//! async blocks, nested items or other macros (there the handler's round cannot end; bind
//! the result to a variable first).

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Local, Macro, Pat, Stmt, Token};

use self::syntax::{
    find_site_tokens, is_helper_form, is_join, site_of, split_key, split_options, unknown_kind, Options, KIND_HELP,
};

/// Which rewritten macro a site is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Site {
    Ask,
    Once,
}

/// How the rewritten ask is used.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Awaited where it stands.
    Await,
    /// A future handed to `join!`.
    Future,
}

pub(crate) struct Rewriter<'e> {
    ctx: Ident,
    errors: &'e mut Vec<syn::Error>,
    static_keys: HashMap<String, Span>,
    ordinal: usize,
    loop_depth: usize,
    /// Set while inside something an ask cannot end a round from.
    barrier: Option<&'static str>,
    /// The form types of `let x: T = ask!(elicit …)?` sites, checked at registration.
    pub(crate) form_types: Vec<syn::Type>,
    /// The `Capability` variants the asks on every path need, each once.
    pub(crate) client_needs: Vec<&'static str>,
    /// Inside a branch, a loop's body or the right side of `&&`/`||`: an ask here may not
    /// be reached, so it is gated where it is.
    conditional: usize,
    /// A `return` came before: asks after it may not be reached either.
    returned: bool,
}

impl<'e> Rewriter<'e> {
    /// Notes the forms that `match ask!(elicit …)` arms and `if let Ok(…) = ask!(elicit …)`
    /// name in `Ok(Form { .. })` patterns, anywhere in `expr`, once each.
    fn note_pattern_forms(&mut self, expr: &Expr) {
        struct Patterns(Vec<syn::Type>);
        // `visit_mut` on a copy: the crate builds syn with it alone (a second visitor is
        // compile time every user pays).
        impl VisitMut for Patterns {
            fn visit_expr_match_mut(&mut self, matched: &mut syn::ExprMatch) {
                if is_elicit(&matched.expr) {
                    self.0.extend(matched.arms.iter().filter_map(|arm| ok_pattern_type(&arm.pat)));
                }
                visit_mut::visit_expr_match_mut(self, matched);
            }
            fn visit_expr_let_mut(&mut self, tested: &mut syn::ExprLet) {
                if is_elicit(&tested.expr) {
                    self.0.extend(ok_pattern_type(&tested.pat));
                }
                visit_mut::visit_expr_let_mut(self, tested);
            }
        }
        let mut patterns = Patterns(Vec::new());
        patterns.visit_expr_mut(&mut expr.clone());
        for form in patterns.0 {
            let name = form.to_token_stream().to_string();
            if !self.form_types.iter().any(|known| known.to_token_stream().to_string() == name) {
                self.form_types.push(form);
            }
        }
    }

    pub(crate) fn new(ctx: Ident, errors: &'e mut Vec<syn::Error>) -> Self {
        Self {
            ctx,
            errors,
            static_keys: HashMap::new(),
            ordinal: 0,
            loop_depth: 0,
            barrier: None,
            form_types: Vec::new(),
            client_needs: Vec::new(),
            conditional: 0,
            returned: false,
        }
    }

    /// Rewrites `mac` if it is an `ask!`/`once!` site; `None` leaves it as written.
    fn rewrite(&mut self, mac: &Macro, let_key: Option<&Ident>, mode: Mode) -> Option<TokenStream> {
        let site = site_of(mac)?;
        // `ask!(ctx, key = …, …)` names its context itself: the helper form.
        if site == Site::Ask && is_helper_form(&mac.tokens) {
            return None;
        }
        let name = if site == Site::Ask { "ask!" } else { "once!" };
        if let Some(barrier) = self.barrier {
            self.error(mac.path.span(), format!("{name} cannot be used inside {barrier}: only the handler's own body can end a round; move it out, or into a helper async fn that takes the context"));
            return None;
        }
        self.ordinal += 1;
        let Options { key: explicit, fresh, rest } = match split_options(mac.tokens.clone()) {
            Ok(options) => options,
            Err(error) => {
                self.errors.push(error);
                return None;
            }
        };
        if fresh && site == Site::Once {
            self.error(mac.path.span(), "`fresh` is an option of ask!, not of once!".into());
            return None;
        }
        if site == Site::Ask {
            if let Some(span) = unknown_kind(&rest, mac.path.span()) {
                self.error(span, KIND_HELP.into());
                return None;
            }
            // Only an ask every successful call reaches is declared up front: one behind a
            // condition (the newcomer's form above 100 EUR) is checked when it is reached.
            let on_every_path = self.conditional == 0 && !self.returned;
            if let Some(need) =
                crate::needs::capability_of(&rest).filter(|need| on_every_path && !self.client_needs.contains(need))
            {
                self.client_needs.push(need);
            }
        }
        let key = self.key(mac, name, explicit, let_key)?;
        let (ctx, path, span) = (&self.ctx, &mac.path, mac.path.span());
        let call = if fresh {
            quote_spanned!(span=> #path!(@__mcp #ctx, #key; #rest).fresh())
        } else {
            quote_spanned!(span=> #path!(@__mcp #ctx, #key; #rest))
        };
        Some(match (site, mode) {
            (Site::Ask, Mode::Await) => quote_spanned!(span=> #call.await),
            _ => call,
        })
    }

    fn key(&mut self, mac: &Macro, name: &str, explicit: Option<Expr>, let_key: Option<&Ident>) -> Option<TokenStream> {
        let span = mac.path.span();
        // Errors about a fixed key point at what made it: the `key = "…"` literal, else
        // the name the `let` binds, else the ask itself.
        let (key_span, origin) = match (&explicit, let_key) {
            (Some(expr), _) => (expr.span(), ""),
            (None, Some(ident)) => (ident.span(), " (the name the `let` binds)"),
            (None, None) => (span, " (the ask's position)"),
        };
        let literal = match &explicit {
            Some(Expr::Lit(ExprLit { lit: Lit::Str(s), .. })) => Some(s.value()),
            Some(_) => None,
            None if self.loop_depth > 0 => {
                self.error(
                    span,
                    format!("{name} inside a loop needs a per-iteration key: {name}(key = format!(\"item-{{i}}\"), …)"),
                );
                return None;
            }
            // An ask's key is the wire's name for its answer: a position would change
            // whenever the code around it changes, so an ask with no name must get one.
            None if let_key.is_none() && name == "ask!" => {
                self.error(
                    span,
                    "this ask! has no name for its answer, which is part of the wire contract: bind it \
                     (`let target = ask!(…)`), or give it one: ask!(key = \"target\", …)"
                        .into(),
                );
                return None;
            }
            None => Some(let_key.map_or_else(
                || format!("ask{}", self.ordinal),
                |ident| ident.to_string().trim_start_matches("r#").to_owned(),
            )),
        };
        if let Some(literal) = &literal {
            if self.loop_depth > 0 {
                self.error(
                    key_span,
                    format!("{name} inside a loop needs a per-iteration key, not the fixed key {literal:?}: {name}(key = format!(\"item-{{i}}\"), …)"),
                );
                return None;
            }
            if let Some(first) = self.static_keys.insert(literal.clone(), key_span) {
                let mut error = syn::Error::new(
                    key_span,
                    format!("the key {literal:?}{origin} is already used in this handler; give this {name} another: {name}(key = \"…\", …)"),
                );
                error.combine(syn::Error::new(first, format!("the key {literal:?} is first used here")));
                self.errors.push(error);
                return None;
            }
        }
        Some(match explicit {
            Some(expr) => expr.to_token_stream(),
            None => LitStr::new(literal.as_deref().unwrap_or_default(), span).to_token_stream(),
        })
    }

    fn error(&mut self, span: Span, message: String) {
        self.errors.push(syn::Error::new(span, message));
    }

    /// `join!(ask!(…), ask!(…))`: the asks stay futures so the join polls them together.
    /// In `let (a, b) = join!(…)` each ask is named by its place in the tuple.
    fn rewrite_join(&mut self, mac: &Macro, names: &[Option<Ident>]) -> Option<TokenStream> {
        let parser = Punctuated::<Expr, Token![,]>::parse_terminated;
        let mut args = parser.parse2(mac.tokens.clone()).ok()?;
        for (at, arg) in args.iter_mut().enumerate() {
            match arg {
                Expr::Macro(inner) if site_of(&inner.mac) == Some(Site::Ask) => {
                    let name = names.get(at).and_then(Option::as_ref);
                    if let Some(tokens) = self.rewrite(&inner.mac, name, Mode::Future) {
                        *arg = Expr::Verbatim(tokens);
                    }
                }
                other => self.visit_expr_mut(other),
            }
        }
        let path = &mac.path;
        Some(quote!(#path!(#args)))
    }

    fn with_barrier(&mut self, barrier: &'static str, visit: impl FnOnce(&mut Self)) {
        let outer = self.barrier.replace(barrier);
        // A `return` in a closure or async block leaves only that.
        let returned = self.returned;
        visit(self);
        self.barrier = outer;
        self.returned = returned;
    }

    fn in_loop(&mut self, visit: impl FnOnce(&mut Self)) {
        self.loop_depth += 1;
        self.conditionally(visit);
        self.loop_depth -= 1;
    }

    /// Visits what may not run on every call.
    fn conditionally(&mut self, visit: impl FnOnce(&mut Self)) {
        self.conditional += 1;
        visit(self);
        self.conditional -= 1;
    }

    /// A macro we do not understand hides its tokens from the visitor: refuse an ask in
    /// it rather than leave it unrewritten.
    fn check_opaque(&mut self, tokens: &TokenStream) {
        if let Some((name, span)) = find_site_tokens(tokens.clone()) {
            self.error(
                span,
                format!("{name} inside another macro is not rewritten: bind its result with `let` first and use the variable in the macro"),
            );
        }
    }
}

impl VisitMut for Rewriter<'_> {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        match expr {
            Expr::Macro(m) => {
                let rewritten = if site_of(&m.mac).is_some() {
                    self.rewrite(&m.mac, None, Mode::Await)
                } else if is_join(&m.mac) {
                    self.rewrite_join(&m.mac, &[])
                } else {
                    self.check_opaque(&m.mac.tokens);
                    None
                };
                if let Some(tokens) = rewritten {
                    *expr = Expr::Verbatim(tokens);
                }
            }
            // `match ask!(elicit …) { Ok(Form { .. }) => … }` and `if let Ok(Form { .. }) =
            // ask!(elicit …)` name the form in a pattern: check it at registration too.
            Expr::Match(_) | Expr::Let(_) => {
                self.note_pattern_forms(expr);
                match expr {
                    // The scrutinee runs on every call, an arm only on some.
                    Expr::Match(matched) => {
                        self.visit_expr_mut(&mut matched.expr);
                        self.conditionally(|v| matched.arms.iter_mut().for_each(|arm| v.visit_arm_mut(arm)));
                    }
                    _ => visit_mut::visit_expr_mut(self, expr),
                }
            }
            Expr::If(branched) => {
                self.visit_expr_mut(&mut branched.cond);
                self.conditionally(|v| {
                    v.visit_block_mut(&mut branched.then_branch);
                    if let Some((_, otherwise)) = &mut branched.else_branch {
                        v.visit_expr_mut(otherwise);
                    }
                });
            }
            Expr::Binary(both) if matches!(both.op, syn::BinOp::And(_) | syn::BinOp::Or(_)) => {
                self.visit_expr_mut(&mut both.left);
                self.conditionally(|v| v.visit_expr_mut(&mut both.right));
            }
            Expr::Return(returned) => {
                // `return Err(…)` is a failure, as `?` is: a call that succeeds still
                // reaches what comes after it.
                let fails = matches!(returned.expr.as_deref(), Some(Expr::Call(call))
                    if matches!(&*call.func, Expr::Path(path) if path.path.is_ident("Err")));
                visit_mut::visit_expr_mut(self, expr);
                self.returned |= !fails;
            }
            Expr::Closure(_) => self.with_barrier("a closure", |v| visit_mut::visit_expr_mut(v, expr)),
            Expr::Async(_) => self.with_barrier("an async block", |v| visit_mut::visit_expr_mut(v, expr)),
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => self.in_loop(|v| visit_mut::visit_expr_mut(v, expr)),
            _ => visit_mut::visit_expr_mut(self, expr),
        }
    }

    fn visit_stmt_mut(&mut self, stmt: &mut Stmt) {
        if let Stmt::Macro(m) = stmt {
            let expr = Expr::Macro(syn::ExprMacro { attrs: m.attrs.clone(), mac: m.mac.clone() });
            let mut expr = expr;
            self.visit_expr_mut(&mut expr);
            if let Expr::Verbatim(_) = expr {
                *stmt = Stmt::Expr(expr, m.semi_token);
            }
            return;
        }
        visit_mut::visit_stmt_mut(self, stmt);
    }

    fn visit_local_mut(&mut self, local: &mut Local) {
        if let Some(init) = &mut local.init {
            // Before the ask in it is rewritten: `let x = if let Ok(Form { .. }) = ask!(…)`.
            self.note_pattern_forms(&init.expr);
            if let Some(form) = elicited_type(&local.pat, &init.expr) {
                self.form_types.push(form.clone());
            }
            let key = bound_name(&local.pat).cloned();
            if let Some(join) = join_site(&mut init.expr) {
                if let Expr::Macro(m) = join {
                    let names = tuple_names(&local.pat);
                    let tokens = self.rewrite_join(&m.mac, &names).unwrap_or_else(|| m.to_token_stream());
                    *join = Expr::Verbatim(tokens);
                }
            } else if let Some(site) = spine_site(&mut init.expr) {
                if let Expr::Macro(m) = site {
                    // Verbatim either way, so the walk below does not visit the site twice.
                    let tokens = self.rewrite(&m.mac, key.as_ref(), Mode::Await).unwrap_or_else(|| m.to_token_stream());
                    *site = Expr::Verbatim(tokens);
                }
            }
        }
        visit_mut::visit_local_mut(self, local);
    }

    /// A nested `fn` has no handler context: refuse an ask in it (its helper form, which
    /// names its own context, is fine).
    fn visit_item_mut(&mut self, item: &mut syn::Item) {
        if let Some((name, span)) = find_site_tokens(item.to_token_stream()) {
            let helper = if name == "ask!" { "ask!(ctx, key = \"name\", …)" } else { "ctx.once(\"name\", step)" };
            self.error(
                span,
                format!("{name} cannot be used inside a nested item: it has no handler context; take `ctx: &Ctx` as a parameter and use {helper}"),
            );
        }
    }
}

/// `T` in `let x: T = ask!(elicit …)?;`: the form type is written down, so the runtime can
/// check at registration that it fits in a form.
fn elicited_type<'p>(pat: &'p Pat, init: &Expr) -> Option<&'p syn::Type> {
    let Pat::Type(typed) = pat else { return None };
    // `let x: T = ask!(…)?` names the form itself; `let x: Result<T, Declined> = ask!(…)`
    // (the shape for handling a decline) names it as the `Ok` type.
    let (site, form) = match init {
        Expr::Try(tried) => (&*tried.expr, Some(&*typed.ty)),
        other => (other, ok_type(&typed.ty)),
    };
    form.filter(|_| is_elicit(site))
}

/// Whether `expr` is `ask!(elicit …)` (any options before it), not yet rewritten.
fn is_elicit(expr: &Expr) -> bool {
    let Expr::Macro(m) = expr else { return false };
    let Ok((_, rest)) = split_key(m.mac.tokens.clone()) else { return false };
    site_of(&m.mac) == Some(Site::Ask)
        && matches!(rest.into_iter().next(), Some(TokenTree::Ident(kind)) if kind == "elicit")
}

/// `Form` in a pattern `Ok(Form { .. })` or `Ok(Form(..))`: the type a form's answer is
/// matched as.
fn ok_pattern_type(pat: &Pat) -> Option<syn::Type> {
    let Pat::TupleStruct(ok) = pat else { return None };
    if !ok.path.is_ident("Ok") || ok.elems.len() != 1 {
        return None;
    }
    let path = match &ok.elems[0] {
        Pat::Struct(form) => &form.path,
        Pat::TupleStruct(form) => &form.path,
        _ => return None,
    };
    Some(syn::Type::Path(syn::TypePath { qself: None, path: path.clone() }))
}

/// `T` of `Result<T, _>`.
fn ok_type(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(path) = ty else { return None };
    let last = path.path.segments.last().filter(|last| last.ident == "Result")?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    args.args.iter().find_map(|arg| match arg {
        syn::GenericArgument::Type(ok) => Some(ok),
        _ => None,
    })
}

/// The identifier a `let` binds (`let x`, `let x: T`, `let mut x`).
fn bound_name(pat: &Pat) -> Option<&Ident> {
    match pat {
        Pat::Ident(p) => Some(&p.ident),
        Pat::Type(t) => bound_name(&t.pat),
        _ => None,
    }
}

/// The names `let (a, b, …)` binds, by position (`None` for a place that is not a plain
/// name, such as `_`).
fn tuple_names(pat: &Pat) -> Vec<Option<Ident>> {
    match pat {
        Pat::Type(typed) => tuple_names(&typed.pat),
        Pat::Tuple(tuple) => tuple.elems.iter().map(|elem| bound_name(elem).cloned()).collect(),
        _ => Vec::new(),
    }
}

/// The `join!` an initializer starts from, through `.await`, `?` and parentheses.
fn join_site(expr: &mut Expr) -> Option<&mut Expr> {
    match expr {
        Expr::Macro(m) if is_join(&m.mac) => Some(expr),
        Expr::Try(e) => join_site(&mut e.expr),
        Expr::Await(e) => join_site(&mut e.base),
        Expr::Paren(e) => join_site(&mut e.expr),
        _ => None,
    }
}

/// The ask/once site an initializer starts from, looking through `?`, `.await`,
/// parentheses, method calls and field accesses (`ask!(…)?.text()`), and into the
/// scrutinee of a `match` or `if let`.
fn spine_site(expr: &mut Expr) -> Option<&mut Expr> {
    match expr {
        Expr::Macro(m) if site_of(&m.mac).is_some() => Some(expr),
        Expr::Try(e) => spine_site(&mut e.expr),
        Expr::Await(e) => spine_site(&mut e.base),
        Expr::Paren(e) => spine_site(&mut e.expr),
        Expr::MethodCall(e) => spine_site(&mut e.receiver),
        Expr::Field(e) => spine_site(&mut e.base),
        // `let target = match ask!(…) { … }` and `let target = if let Ok(t) = ask!(…) { … }`
        // name the ask as `let target = ask!(…)?` does: a refactor between the shapes keeps
        // the key, and so the wire contract.
        Expr::Match(e) => spine_site(&mut e.expr),
        Expr::If(e) => match &mut *e.cond {
            Expr::Let(condition) => spine_site(&mut condition.expr),
            _ => None,
        },
        _ => None,
    }
}

mod syntax;
#[cfg(test)]
mod tests;
