//! The rewrite's keys, refusals and shapes, on parsed bodies.

use syn::parse_quote;

use super::*;

fn rewrite(mut body: syn::Block) -> (String, Vec<String>) {
    let mut errors = Vec::new();
    let ctx = Ident::new("__mcp_ctx", Span::call_site());
    Rewriter::new(ctx, &mut errors).visit_block_mut(&mut body);
    (body.to_token_stream().to_string(), errors.iter().map(ToString::to_string).collect())
}

#[test]
fn keys_come_from_let_bindings_tuples_or_explicit_keys() {
    let (out, errors) = rewrite(parse_quote!({
        let place: City = ask!(elicit "Which city?")?;
        let text = ask!(sample "Hi").text();
        match ask!(key = "sure", elicit "Sure?") {
            _ => {}
        }
        let named = ask!(key = "explicit", roots);
        let (first, second) = join!(ask!(elicit "A?"), ask!(elicit "B?"));
    }));
    assert!(errors.is_empty(), "{errors:?}");
    for key in ["\"place\"", "\"text\"", "\"sure\"", "\"explicit\"", "\"first\"", "\"second\""] {
        assert!(out.contains(&format!("ask ! (@ __mcp __mcp_ctx , {key} ;")), "{key} missing in {out}");
    }
    assert_eq!(out.matches(". await").count(), 4);
}

#[test]
fn an_ask_with_no_name_is_an_error_not_a_position() {
    for body in [
        parse_quote!({
            match ask!(elicit "Sure?") {
                _ => {}
            }
        }),
        parse_quote!({
            let _ = join!(ask!(elicit "A?"), ask!(key = "b", roots));
        }),
        parse_quote!({
            let (a, _) = join!(ask!(elicit "A?"), ask!(elicit "B?"));
        }),
    ] {
        let (_, errors) = rewrite(body);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("ask!(key = \"target\", …)"), "{errors:?}");
    }
}

#[test]
fn every_typed_form_binding_is_checked_at_registration() {
    let mut errors = Vec::new();
    let mut rewriter = Rewriter::new(Ident::new("__mcp_ctx", Span::call_site()), &mut errors);
    rewriter.visit_block_mut(&mut parse_quote!({
        let a: Party = ask!(elicit "How many?")?;
        let b: Result<Slot, Declined> = ask!(elicit "When?");
        let c: Result<Table, _> = ask!(key = "table", elicit "Where?");
        let d: Result<String, ToolError> = Ok(String::new());
        let e: CreateMessageResult = ask!(sample "Hi");
    }));
    let forms: Vec<String> = rewriter.form_types.iter().map(|t| t.to_token_stream().to_string()).collect();
    assert_eq!(forms, ["Party", "Slot", "Table"]);
}

#[test]
fn a_form_named_in_a_pattern_is_checked_at_registration() {
    let mut errors = Vec::new();
    let mut rewriter = Rewriter::new(Ident::new("__mcp_ctx", Span::call_site()), &mut errors);
    rewriter.visit_block_mut(&mut parse_quote!({
        match ask!(key = "overwrite", elicit "Replace it?") {
            Ok(Overwrite { overwrite: true }) => {}
            Ok(_) | Err(Declined::Decline) => {}
            Err(Declined::Cancel) => {}
        }
        let name = if let Ok(forms::Target { name }) = ask!(fresh, key = "target", elicit "Where?") { name } else { x };
        match ask!(key = "summary", sample "Hi") {
            Ok(Summary { .. }) => {}
            Err(_) => {}
        }
    }));
    let forms: Vec<String> = rewriter.form_types.iter().map(|t| t.to_token_stream().to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(forms, ["Overwrite", "forms :: Target"], "a sample's pattern is no form");
}

#[test]
fn joined_asks_stay_futures() {
    let (out, errors) = rewrite(parse_quote!({
        let (a, b) = join!(ask!(key = "a", elicit "A?"), ask!(key = "b", roots));
    }));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(out.matches(". await").count(), 0, "{out}");
    assert_eq!(out.matches("@ __mcp").count(), 2);
}

#[test]
fn refuses_what_cannot_work() {
    let (_, errors) = rewrite(parse_quote!({
        let a = ask!(elicit "A?");
        let a = ask!(elicit "A again?");
        for i in 0..3 {
            let x = ask!(elicit "In a loop?");
        }
        for i in 0..3 {
            let y = ask!(key = "fixed", elicit "In a loop?");
        }
        let f = || ask!(elicit "In a closure?");
        let s = format!("{}", ask!(elicit "In a macro?"));
    }));
    assert_eq!(errors.len(), 5, "{errors:?}");
    assert!(errors[0].contains("already used"));
    assert!(errors[1].contains("per-iteration key"));
    assert!(errors[2].contains("not the fixed key"));
    assert!(errors[3].contains("closure"));
    assert!(errors[4].contains("inside another macro"));
}

#[test]
fn names_what_is_wrong_where_it_is() {
    let (_, errors) = rewrite(parse_quote!({
        let a = ask!(shout "Hey?");
        fn nested() -> usize {
            ask!(roots).len()
        }
        let b = ask!();
    }));
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].starts_with("ask! expects `elicit MESSAGE`"));
    assert!(errors[1].contains("inside a nested item"));
    assert!(errors[2].starts_with("ask! expects"));
}

#[test]
fn the_helper_form_is_welcome_in_nested_items_and_other_macros() {
    let (_, errors) = rewrite(parse_quote!({
        async fn helper(ctx: &Ctx) -> usize {
            ask!(ctx, key = "k", roots).len()
        }
        let s = format!("{}", ask!(ctx, key = "j", roots).len());
    }));
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn loops_accept_per_iteration_keys_and_helpers_are_left_alone() {
    let (out, errors) = rewrite(parse_quote!({
        for i in 0..3 {
            let x = ask!(key = format!("item-{i}"), elicit "Item?");
        }
        let y = ask!(ctx, key = "k", roots);
    }));
    assert!(errors.is_empty(), "{errors:?}");
    assert!(out.contains("ask ! (ctx , key = \"k\" , roots)"), "{out}");
}

#[test]
fn fresh_and_key_come_in_either_order() {
    let (out, errors) = rewrite(parse_quote!({
        match ask!(fresh, key = "first", elicit "Pay?") {
            _ => {}
        }
        match ask!(key = "second", fresh, elicit "Delete?") {
            _ => {}
        }
    }));
    assert!(errors.is_empty(), "{errors:?}");
    for key in ["\"first\"", "\"second\""] {
        assert!(out.contains(&format!("ask ! (@ __mcp __mcp_ctx , {key} ;")), "{key} missing in {out}");
    }
    assert_eq!(out.matches(". fresh ()").count(), 2, "{out}");
}

/// The capabilities of the asks every successful call reaches, each once.
fn needs(mut body: syn::Block) -> Vec<&'static str> {
    let mut errors = Vec::new();
    let ctx = Ident::new("__mcp_ctx", Span::call_site());
    let mut rewriter = Rewriter::new(ctx, &mut errors);
    rewriter.visit_block_mut(&mut body);
    let needs = std::mem::take(&mut rewriter.client_needs);
    assert!(errors.is_empty(), "{errors:?}");
    needs
}

#[test]
fn only_asks_on_every_path_are_needed_up_front() {
    let on_every_path = needs(parse_quote!({
        let picked = match ask!(roots) {
            r => r,
        };
        let form: Form = ask!(elicit "Which?")?;
        if let Ok(text) = ask!(key = "text", sample "Sum up") {}
        Ok(())
    }));
    assert_eq!(on_every_path, ["Roots", "ElicitationForm", "Sampling"]);
    let behind_conditions = needs(parse_quote!({
        if big {
            let a: A = ask!(elicit "Sure?")?;
        }
        match kind {
            K::Url => {
                let u = ask!(elicit_url "Sign in", url);
            }
            _ => {}
        }
        let ok = ready || ask!(key = "ready", sample "Ready?").is_ok();
        for item in items {
            let r = ask!(key = format!("{item}"), roots);
        }
        Ok(())
    }));
    assert!(behind_conditions.is_empty(), "{behind_conditions:?}");
}

#[test]
fn a_return_hides_the_asks_after_it_unless_it_returns_an_error() {
    let after_failure = needs(parse_quote!({
        if bad {
            return Err(ToolError::new("no"));
        }
        let r = ask!(roots);
        Ok(())
    }));
    assert_eq!(after_failure, ["Roots"]);
    let after_success = needs(parse_quote!({
        if done {
            return Ok("early".into());
        }
        let r = ask!(roots);
        Ok(())
    }));
    assert!(after_success.is_empty(), "{after_success:?}");
    let return_in_a_closure = needs(parse_quote!({
        let f = |x: u8| {
            return x;
        };
        let r = ask!(roots);
        Ok(())
    }));
    assert_eq!(return_in_a_closure, ["Roots"]);
}
