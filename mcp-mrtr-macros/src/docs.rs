//! Doc comments → descriptions.

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
}
