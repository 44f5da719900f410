//! Doc comments → descriptions.

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The text of the `///` comments among `attrs`, lines trimmed and joined with newlines;
/// `None` when there are none.
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
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
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
        let bare: syn::ItemFn = parse_quote! { fn g() {} };
        assert_eq!(description(&bare.attrs), None);
    }
}
