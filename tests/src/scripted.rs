//! The person and the model behind a client, scripted: [`answers`] takes every question the
//! fixture servers ask, as the crate's client (`mcp_mrtr::client`) puts it to them.

use std::sync::{Arc, Mutex};

use mcp_mrtr::client::Answers;
use mcp_mrtr::protocol::{CreateMessageResult, ElicitResult, ListRootsResult, Root};
use serde_json::json;

/// What the person was shown, in order: each form's message, and each URL question as
/// `message <url>`.
pub type Shown = Arc<Mutex<Vec<String>>>;

/// Answers every kind of question the fixtures ask. A form is filled in by its first
/// field: a `name` is "Ada", a `color` "green", `ok` and `confirm` are yes, a `context` is
/// "the diff"; any other form is declined. A URL is opened and accepted. The model answers
/// "Paris" (and checks that it was given a token budget), and the roots are `file:///a` and
/// `file:///b`. Each question the person sees is recorded in `shown`.
pub fn answers(shown: &Shown) -> Answers {
    let (forms, urls) = (shown.clone(), shown.clone());
    Answers::new()
        .forms(move |question| {
            forms.lock().unwrap().push(question.message.clone());
            let first = question.schema["properties"].as_object().unwrap().keys().next().cloned();
            async move {
                Ok(match first.as_deref() {
                    Some("name") => ElicitResult::accept_as(&json!({"name": "Ada"}))?,
                    Some("color") => ElicitResult::accept_as(&json!({"color": "green"}))?,
                    Some("ok") => ElicitResult::accept_as(&json!({"ok": true}))?,
                    Some("confirm") => ElicitResult::accept_as(&json!({"confirm": true}))?,
                    Some("context") => ElicitResult::accept_as(&json!({"context": "the diff"}))?,
                    _ => ElicitResult::decline(),
                })
            }
        })
        .urls(move |question| {
            urls.lock().unwrap().push(format!("{} <{}>", question.message, question.url));
            async { Ok(ElicitResult::accepted()) }
        })
        .sampling(|request| async move {
            assert!(request.max_tokens > 0, "a sampling request names a token budget");
            Ok(CreateMessageResult::from_text("scripted", "Paris"))
        })
        .roots(|| async { Ok(ListRootsResult::new(vec![Root::new("file:///a"), Root::new("file:///b").named("b")])) })
}
