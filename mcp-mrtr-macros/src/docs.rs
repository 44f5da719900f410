//! Doc comments → descriptions.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The text of the `///` comments among `attrs`, as a client shows it: the lines of a
/// paragraph joined with spaces (a doc comment's line breaks are only where the source
/// wrapped), paragraphs apart by a blank line, and Markdown's own lines (list items,
/// tables, headings, code blocks) kept as written. `None` when there are none.
pub(crate) fn description(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let text = unwrap(&lines).trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// Joins wrapped lines; see [`description`].
fn unwrap(lines: &[String]) -> String {
    let mut text = String::new();
    let mut in_code = false;
    let mut previous_blank = true;
    for line in lines {
        let fence = line.starts_with("```") || line.starts_with("~~~");
        let own_line = in_code || fence || starts_block(line);
        if line.is_empty() {
            text.push_str("\n\n");
        } else if previous_blank || own_line || text.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(line);
        } else {
            text.push(' ');
            text.push_str(line);
        }
        if fence {
            in_code = !in_code;
        }
        // In a code block every line stands alone; after a list item, a plain line
        // continues the item.
        previous_blank = line.is_empty() || in_code || fence;
    }
    // Runs of blank lines are one paragraph break.
    while text.contains("\n\n\n") {
        text = text.replace("\n\n\n", "\n\n");
    }
    text
}

/// Whether a Markdown line stands on its own: a list item, table row, heading or quote.
fn starts_block(line: &str) -> bool {
    let ordered = line.split_once(". ").is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    ordered || ["- ", "* ", "+ ", "|", "#", ">"].iter().any(|marker| line.starts_with(marker))
}

/// An argument's doc comments as the `#[schemars(title = "…", description = "…")]` they
/// amount to, for the generated argument struct's field. Given doc comments, schemars'
/// derive splits them in two `const`s per field, evaluated as the crate compiles: about
/// two million instructions per documented argument, measured, a few percent of a
/// `#[tool]`. Given the strings, it writes them as they are.
///
/// The split is the one schemars' derive makes of the lines joined (1.x): a text
/// starting with `#` has its first line as the title and the rest as the description,
/// any other text is all description. `tests/tests/tool_schema.rs` compares the two on
/// every shape, so a schemars release that splits otherwise fails there.
/// `None`, leaving the comments to schemars, when one is not a string literal or an
/// attribute could change what schemars reads (a `#[schemars]` of the field's own, which
/// may set either, or a `#[cfg_attr]`, which may add a doc).
pub(crate) fn schema_docs(attrs: &[Attribute]) -> Option<TokenStream> {
    let mut lines = Vec::new();
    for attr in attrs {
        if attr.path().is_ident("schemars") || attr.path().is_ident("cfg_attr") {
            return None;
        }
        if !attr.path().is_ident("doc") {
            continue;
        }
        let Meta::NameValue(nv) = &attr.meta else { return None };
        let Expr::Lit(ExprLit { lit: Lit::Str(line), .. }) = &nv.value else { return None };
        let line = line.value();
        lines.push(line.strip_prefix(' ').map(str::to_owned).unwrap_or(line));
    }
    if lines.is_empty() {
        return None;
    }
    let doc = lines.join("\n");
    let (title, description) = title_and_description(&doc);
    let title = (!title.is_empty()).then(|| quote!(#[schemars(title = #title)]));
    let description = (!description.is_empty()).then(|| quote!(#[schemars(description = #description)]));
    Some(quote!(#title #description))
}

/// schemars' split of a doc text; its trimming is of ASCII whitespace only.
fn title_and_description(doc: &str) -> (&str, &str) {
    fn trim(text: &str) -> &str {
        text.trim_matches(|c: char| c.is_ascii_whitespace())
    }
    let doc = trim(doc);
    if !doc.starts_with('#') {
        return ("", doc);
    }
    let (title, description) = doc.split_at(doc.find('\n').unwrap_or(doc.len()));
    (trim(title.trim_start_matches('#')), trim(description))
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::*;

    #[test]
    fn joins_and_trims_doc_lines() {
        let f: syn::ItemFn = parse_quote! {
            /// Current weather.
            ///
            /// In a city.
            #[inline]
            fn f() {}
        };
        assert_eq!(description(&f.attrs).as_deref(), Some("Current weather.\n\nIn a city."));
        let wrapped: syn::ItemFn = parse_quote! {
            /// Rolls a service out to a region,
            /// one instance at a time.
            ///
            /// Steps:
            /// - drain
            /// - deploy,
            ///   then check
            fn h() {}
        };
        assert_eq!(
            description(&wrapped.attrs).as_deref(),
            Some("Rolls a service out to a region, one instance at a time.\n\nSteps:\n- drain\n- deploy, then check")
        );
        let bare: syn::ItemFn = parse_quote! { fn g() {} };
        assert_eq!(description(&bare.attrs), None);
    }

    #[test]
    fn splits_an_arguments_docs_as_schemars_does() {
        assert_eq!(title_and_description(" A word. "), ("", "A word."));
        assert_eq!(title_and_description("Line one.\n\nLine two.\n"), ("", "Line one.\n\nLine two."));
        assert_eq!(
            title_and_description("\n## Units\n Celsius,\nor Fahrenheit."),
            ("Units", "Celsius,\nor Fahrenheit.")
        );
        assert_eq!(title_and_description("# Only a title"), ("Only a title", ""));
        assert_eq!(title_and_description("\u{a0}Not ASCII space"), ("", "\u{a0}Not ASCII space"));
        let f: syn::ItemFn = parse_quote! {
            /// # The city
            ///  Where.
            fn f() {}
        };
        let docs = schema_docs(&f.attrs).unwrap().to_string();
        assert_eq!(docs, quote!(#[schemars(title = "The city")] #[schemars(description = "Where.")]).to_string());
        let own: syn::ItemFn = parse_quote! {
            /// The city.
            #[schemars(description = "A city.")]
            fn g() {}
        };
        assert!(schema_docs(&own.attrs).is_none());
        let computed: syn::ItemFn = parse_quote! {
            #[doc = concat!("The ", "city.")]
            fn h() {}
        };
        assert!(schema_docs(&computed.attrs).is_none());
    }
}
