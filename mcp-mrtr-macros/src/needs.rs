//! The client capabilities a handler's asks need, read from its body: what the route
//! declares so that a client that could never answer is refused before the handler runs
//! (`-32021`), rather than at the first ask, after what the handler did before it.
//!
//! A body that calls `client_supports` decides for itself what to ask of whom, so it
//! declares nothing: each of its asks is gated where it is reached.

use proc_macro2::{TokenStream, TokenTree};

/// The `Capability` variant an ask's arguments (`elicit …`, `elicit_url …`, `sample …`,
/// `roots`) need; `sample` with a `tools` or `tool_choice` option needs sampling with tools.
pub(crate) fn capability_of(ask: &TokenStream) -> Option<&'static str> {
    let tokens: Vec<TokenTree> = ask.clone().into_iter().collect();
    let TokenTree::Ident(kind) = tokens.first()? else { return None };
    Some(match kind.to_string().as_str() {
        "elicit" => "ElicitationForm",
        "elicit_url" => "ElicitationUrl",
        "sample" if has_option(&tokens, &["tools", "tool_choice"]) => "SamplingTools",
        "sample" => "Sampling",
        "roots" => "Roots",
        _ => return None,
    })
}

/// Whether `tokens` set one of `names` as an option (`, name = …`).
fn has_option(tokens: &[TokenTree], names: &[&str]) -> bool {
    tokens.windows(3).any(|window| match window {
        [TokenTree::Punct(comma), TokenTree::Ident(name), TokenTree::Punct(eq)] => {
            comma.as_char() == ',' && eq.as_char() == '=' && names.iter().any(|n| name == n)
        }
        _ => false,
    })
}

/// Whether the body calls `client_supports` anywhere, macros included.
pub(crate) fn branches_on_support(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        TokenTree::Ident(ident) => ident == "client_supports",
        TokenTree::Group(group) => branches_on_support(group.stream()),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    #[test]
    fn each_kind_of_ask_names_its_capability() {
        assert_eq!(capability_of(&quote!(elicit "Which?")), Some("ElicitationForm"));
        assert_eq!(capability_of(&quote!(elicit_url "Sign in", url)), Some("ElicitationUrl"));
        assert_eq!(capability_of(&quote!(sample "Sum up", max_tokens = 50)), Some("Sampling"));
        assert_eq!(capability_of(&quote!(sample "Pick", tools = tools.clone())), Some("SamplingTools"));
        assert_eq!(capability_of(&quote!(roots)), Some("Roots"));
        assert_eq!(capability_of(&quote!(nonsense)), None);
    }

    #[test]
    fn a_call_to_client_supports_is_found_wherever_it_is() {
        assert!(branches_on_support(quote!({
            if ctx.client_supports(Capability::Sampling) {
                a
            }
        })));
        assert!(branches_on_support(quote!({
            assert!(ctx.client_supports(c));
        })));
        assert!(!branches_on_support(quote!({
            let supports = 1;
        })));
    }
}
