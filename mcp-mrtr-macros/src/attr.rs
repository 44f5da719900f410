//! Parsing `#[tool(...)]`, `#[prompt(...)]` and `#[resource(...)]` arguments. Every
//! value keeps its span, so errors point at what the user wrote.

use proc_macro2::TokenStream;
use syn::meta::ParseNestedMeta;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Path, Token};

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

/// The arguments of one attribute.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) name: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    /// `icon = "https://…/deploy.svg"`: the `src` of one icon (SEP-973).
    pub(crate) icon: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) krate: Option<Path>,
    /// Tool annotation hints given as bare flags (`read_only`, …).
    pub(crate) hints: Vec<Ident>,
    pub(crate) uri: Option<LitStr>,
    pub(crate) mime_type: Option<LitStr>,
    /// `task = "optional"` or `"required"`: validated into a [`crate::model::TaskMode`].
    pub(crate) task: Option<LitStr>,
    /// OAuth scopes a caller needs, `scopes = ["notes:write"]`.
    pub(crate) scopes: Option<Vec<LitStr>>,
    /// Form types the handler asks for through helpers, `forms = [Target]`: checked at
    /// registration like the forms its own `ask!`s name.
    pub(crate) forms: Vec<syn::Type>,
    /// `app = "ui://…"`: the MCP App that shows the tool's result.
    pub(crate) app: Option<LitStr>,
    /// `visibility = "app"`: who may call the tool, as a `Visibility` variant.
    pub(crate) visibility: Option<Ident>,
}

const TOOL_KEYS: &str = "name, title, icon, description, read_only, destructive, idempotent, open_world, task, scopes, forms, app, visibility, crate";
/// `visibility = "…"`: each value and the `Visibility` variant it names.
const VISIBILITIES: &[(&str, &str)] = &[("app", "App"), ("model", "Model"), ("model_and_app", "ModelAndApp")];
const PROMPT_KEYS: &str = "name, title, icon, description, scopes, forms, crate";
const RESOURCE_KEYS: &str = "uri, name, title, icon, description, mime_type, scopes, forms, crate";
pub(crate) const HINTS: &[&str] = &["read_only", "destructive", "idempotent", "open_world"];

impl Args {
    pub(crate) fn parse(kind: Kind, tokens: TokenStream) -> syn::Result<Self> {
        let mut args = Self::default();
        let parser = syn::meta::parser(|meta| args.parse_one(kind, &meta));
        syn::parse::Parser::parse2(parser, tokens)?;
        Ok(args)
    }

    fn parse_one(&mut self, kind: Kind, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
        match (kind, key.as_str()) {
            (_, "name") => set(&mut self.name, meta),
            (_, "title") => set(&mut self.title, meta),
            (_, "icon") => set(&mut self.icon, meta),
            (_, "description") => set(&mut self.description, meta),
            (_, "scopes") => {
                if self.scopes.is_some() {
                    return Err(meta.error("`scopes` is given twice: keep one"));
                }
                self.scopes = Some(scopes_value(meta)?);
                Ok(())
            }
            (_, "forms") => {
                if !self.forms.is_empty() {
                    return Err(meta.error("`forms` is given twice: keep one"));
                }
                self.forms = forms_value(meta)?;
                Ok(())
            }
            (_, "crate") => {
                let path = string_value(meta)?;
                self.krate = Some(path.parse().map_err(|_| {
                    syn::Error::new(path.span(), "`crate` takes the path of mcp_mrtr as a string: crate = \"my::mcp\"")
                })?);
                Ok(())
            }
            (Kind::Tool, hint) if HINTS.contains(&hint) => {
                self.hints.push(meta.path.get_ident().cloned().expect("a hint is an identifier"));
                Ok(())
            }
            (Kind::Tool, "task") => set(&mut self.task, meta),
            (Kind::Tool, "app") => {
                set(&mut self.app, meta)?;
                let uri = self.app.as_ref().expect("set above");
                match uri.value().strip_prefix("ui://") {
                    Some(rest) if !rest.is_empty() => Ok(()),
                    _ => Err(syn::Error::new(uri.span(), "`app` names a ui:// resource: app = \"ui://deploy/review\"")),
                }
            }
            (Kind::Tool, "visibility") => {
                let mut given = None;
                set(&mut given, meta)?;
                let given = given.expect("set above");
                if self.visibility.is_some() {
                    return Err(meta.error("`visibility` is given twice: keep one"));
                }
                let Some((_, variant)) = VISIBILITIES.iter().find(|(value, _)| given.value() == *value) else {
                    let expected = VISIBILITIES.iter().map(|(value, _)| format!("\"{value}\"")).collect::<Vec<_>>();
                    return Err(syn::Error::new(
                        given.span(),
                        format!("`visibility` is one of {}", expected.join(", ")),
                    ));
                };
                self.visibility = Some(Ident::new(variant, given.span()));
                Ok(())
            }
            (Kind::Resource, "uri") => set(&mut self.uri, meta),
            (Kind::Resource, "mime_type") => set(&mut self.mime_type, meta),
            _ => {
                let (attr, keys) = match kind {
                    Kind::Tool => ("tool", TOOL_KEYS),
                    Kind::Prompt => ("prompt", PROMPT_KEYS),
                    Kind::Resource => ("resource", RESOURCE_KEYS),
                };
                Err(meta.error(format!("unknown key in #[{attr}(...)]: expected one of {keys}")))
            }
        }
    }
}

fn set(slot: &mut Option<LitStr>, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if slot.is_some() {
        let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
        return Err(meta.error(format!("`{key}` is given twice: keep one")));
    }
    *slot = Some(string_value(meta)?);
    Ok(())
}

/// `= [Type, …]`: a non-empty array of the types helpers ask for with a form.
fn forms_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<syn::Type>> {
    const FORM: &str = "`forms` takes an array of the types helpers ask for: forms = [Target]";
    let value = meta.value()?;
    if !value.peek(syn::token::Bracket) {
        return Err(syn::Error::new(value.span(), FORM));
    }
    let content;
    let brackets = syn::bracketed!(content in value);
    let types = Punctuated::<syn::Type, Token![,]>::parse_terminated(&content)?;
    if types.is_empty() {
        return Err(syn::Error::new(brackets.span.join(), "`forms` is empty: name at least one type, or drop the key"));
    }
    Ok(types.into_iter().collect())
}

/// `= ["a", "b"]`: a non-empty array of scope tokens (RFC 6749 §3.3: no spaces, quotes
/// or backslashes), each error on the element that is wrong.
fn scopes_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<LitStr>> {
    const FORM: &str = "`scopes` takes an array of string literals: scopes = [\"notes:write\"]";
    let value = meta.value()?;
    if !value.peek(syn::token::Bracket) {
        return Err(syn::Error::new(value.span(), FORM));
    }
    let content;
    let brackets = syn::bracketed!(content in value);
    let elements = Punctuated::<Expr, Token![,]>::parse_terminated(&content)?;
    if elements.is_empty() {
        return Err(syn::Error::new(
            brackets.span.join(),
            "`scopes` is empty: name at least one scope, or drop the key",
        ));
    }
    elements
        .into_iter()
        .map(|element| match element {
            Expr::Lit(ExprLit { lit: Lit::Str(scope), .. }) => {
                let text = scope.value();
                let valid =
                    !text.is_empty() && text.chars().all(|c| matches!(c, '!'..='~') && !matches!(c, '"' | '\\'));
                if valid {
                    Ok(scope)
                } else {
                    Err(syn::Error::new(
                        scope.span(),
                        "a scope is a non-empty token without spaces, quotes or backslashes",
                    ))
                }
            }
            other => Err(syn::Error::new_spanned(other, FORM)),
        })
        .collect()
}

/// The `= "…"` of a key, with an error that shows the expected form.
fn string_value(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
    let value = meta.value()?;
    let span = value.span();
    value.parse().map_err(|_| syn::Error::new(span, format!("`{key}` takes a string literal: {key} = \"…\"")))
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    #[test]
    fn reads_keys_and_flags() {
        let args =
            Args::parse(Kind::Tool, quote!(name = "x", read_only, task = "optional", crate = "my::mcp")).unwrap();
        assert_eq!(args.name.unwrap().value(), "x");
        assert_eq!(args.task.unwrap().value(), "optional");
        assert_eq!(args.hints.len(), 1);
        assert!(args.krate.is_some());
    }

    #[test]
    fn unknown_and_repeated_keys_are_errors() {
        let unknown = Args::parse(Kind::Prompt, quote!(read_only)).err().unwrap();
        assert!(unknown.to_string().contains("expected one of name, title"));
        assert!(Args::parse(Kind::Tool, quote!(name = "a", name = "b")).is_err());
        assert!(Args::parse(Kind::Tool, quote!(name = 5)).is_err());
        assert!(Args::parse(Kind::Prompt, quote!(task = "optional")).is_err());
    }

    #[test]
    fn scopes_are_an_array_of_scope_tokens() {
        let args = Args::parse(Kind::Resource, quote!(uri = "x://y", scopes = ["a:read", "a:write"])).unwrap();
        let scopes: Vec<String> = args.scopes.unwrap().iter().map(LitStr::value).collect();
        assert_eq!(scopes, ["a:read", "a:write"]);
        for bad in [quote!(scopes = "a"), quote!(scopes = []), quote!(scopes = [a]), quote!(scopes = ["a b"])] {
            assert!(Args::parse(Kind::Tool, bad).is_err());
        }
        assert!(Args::parse(Kind::Prompt, quote!(scopes = ["a"], scopes = ["b"])).is_err());
    }

    #[test]
    fn forms_are_an_array_of_types() {
        let args = Args::parse(Kind::Tool, quote!(forms = [Target, crate::Other])).unwrap();
        assert_eq!(args.forms.len(), 2);
        for bad in [quote!(forms = Target), quote!(forms = []), quote!(forms = [1])] {
            assert!(Args::parse(Kind::Tool, bad).is_err());
        }
    }
}
