//! What each fixture tool must answer, given the answers a flow recorded: the checks
//! compare every final text with these, so a wrong result cannot pass as completed. The
//! verdicts of operations that their own result decides are here too.

use std::collections::BTreeSet;

use serde_json::Value;

use super::checks::{answers, failed, texts, tool, Verdict};
use super::history::{Fact, OpLog};

/// The answers of one operation, in the order they were given.
pub(crate) struct Answers<'a>(pub(crate) Vec<(&'a str, &'a Value)>);

impl Answers<'_> {
    /// The last form answer's `field`, as text (strings) or JSON (anything else).
    pub(crate) fn field(&self, field: &str) -> Option<String> {
        self.0.iter().rev().find_map(|(_, v)| {
            let value = v.get("content")?.get(field)?;
            Some(value.as_str().map_or_else(|| value.to_string(), str::to_owned))
        })
    }

    /// The form answer given to the question `key` (or to `key#n`, when it was asked again).
    fn field_of(&self, key: &str, field: &str) -> Option<String> {
        self.0.iter().rev().find_map(|(k, v)| {
            let base = k.split('#').next().unwrap_or(k);
            (base == key).then(|| v["content"][field].as_str().map(str::to_owned)).flatten()
        })
    }

    fn sampled(&self) -> Option<&str> {
        self.0.iter().rev().find_map(|(_, v)| v.get("role").and(v["content"]["text"].as_str()))
    }

    fn roots(&self) -> Option<usize> {
        self.0.iter().rev().find_map(|(_, v)| v.get("roots").and_then(Value::as_array).map(Vec::len))
    }

    fn content(&self) -> Option<&Value> {
        self.0.iter().rev().find_map(|(_, v)| v.get("content").filter(|c| c.is_object()))
    }
}

/// The text a multi round-trip tool ends with.
pub(crate) fn mrtr_text(tool: &str, answers: &Answers<'_>) -> Option<String> {
    Some(match tool {
        "test_input_required_result_elicitation" => format!("Hello, {}!", answers.field("name")?),
        "test_input_required_result_sampling" => format!("The model says: {}", answers.sampled()?),
        "test_input_required_result_list_roots" => format!("Found {} root(s)", answers.roots()?),
        "test_input_required_result_multi_round" => {
            format!("{} likes {}", answers.field("name")?, answers.field("color")?)
        }
        "test_input_required_result_multiple_inputs" => {
            format!("{}: {} ({} roots)", answers.field("name")?, answers.sampled()?, answers.roots()?)
        }
        _ => return None,
    })
}

/// The text the once flow ends with, when the process serving its last round had taken
/// the step `ran` times.
pub(crate) fn once_text(call_id: &str, ran: usize) -> String {
    format!("call {call_id}: the once step ran {ran} time(s), finished=true")
}

/// The text a completed task ends with, but for `test_durable_task` and `test_task_steps`
/// (whose receipts the checks read) and cancelled tasks.
pub(crate) fn task_text(tool: &str, arguments: &Value, answers: &Answers<'_>) -> Option<String> {
    Some(match tool {
        "slow_compute" => {
            let seconds = arguments["seconds"].as_f64()?;
            format!("{} finished after {seconds}s", arguments["label"].as_str()?)
        }
        "confirm_delete" => {
            let file = arguments["filename"].as_str()?;
            if answers.field("confirm")? == "true" {
                format!("Deleted {file}")
            } else {
                format!("Kept {file}")
            }
        }
        "multi_input" => {
            format!("Reviewers: {} then {}", answers.field_of("input-a", "name")?, answers.field_of("input-b", "name")?)
        }
        "test_tool_with_task" => format!("Hello, {}! (async)", answers.field("name")?),
        _ => return None,
    })
}

/// The receipts (`step@pid…#…`) of one step named in `text`.
pub(crate) fn receipts<'a>(text: &'a str, step: &str) -> impl Iterator<Item = &'a str> + 'a {
    let prefix = format!("{step}@");
    text.split(|c: char| c.is_whitespace() || c == '?' || c == ';')
        .filter(move |word| word.starts_with(&prefix))
        .map(|word| word.trim_end_matches([';', ':', '?', ',']))
}

/// What a 2025-11-25 bridge call ends with, given the answer given to its question.
pub(crate) fn bridge_text(tool: &str, answer: &Value, text: &str) -> bool {
    match tool {
        "test_sampling" => answer["content"]["text"].as_str().is_some_and(|t| text == format!("LLM response: {t}")),
        "test_elicitation" => {
            let answered = Answers(vec![("", answer)]);
            text.strip_prefix("User response: action=accept, content=")
                .and_then(|json| serde_json::from_str::<Value>(json).ok())
                .is_some_and(|content| Some(&content) == answered.content())
        }
        _ => false,
    }
}

pub(crate) fn mrtr(op: &OpLog) -> Verdict {
    if let Some(why) = failed(op) {
        return Verdict::FailedClean(why.to_owned());
    }
    let text = texts(op).last().unwrap_or_default();
    match mrtr_text(tool(op), &answers(op)) {
        Some(expected) if expected == text => Verdict::Completed,
        expected => Verdict::Wrong(format!("expected {expected:?}, got {text:?}")),
    }
}

pub(crate) fn task_result(op: &OpLog, text: &str) -> Verdict {
    if tool(op) == "test_task_steps" {
        return super::steps::result(op, text);
    }
    if tool(op) != "test_durable_task" {
        return match task_text(tool(op), &op.detail["arguments"], &answers(op)) {
            Some(expected) if expected == text => Verdict::Completed,
            expected => Verdict::Wrong(format!("expected {expected:?}, got {text:?}")),
        };
    }
    // Every receipt a step showed, in status messages, questions and the result, must be one.
    let seen: Vec<&str> = op
        .facts()
        .filter_map(|f| match f {
            Fact::TaskStatus { message, .. } => Some(message.as_str()),
            Fact::TaskFinal { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    for step in ["ticket", "work", "shipped"] {
        let distinct: BTreeSet<&str> = seen.iter().flat_map(|m| receipts(m, step)).collect();
        if distinct.len() > 1 {
            return Verdict::Duplicated(format!("the {step} step was taken again: {distinct:?}"));
        }
    }
    let approved = answers(op).field("approve");
    let words: Vec<&str> = text.split(' ').collect();
    let shape = match approved.as_deref() {
        Some("true") => {
            words.len() == 3 && ["ticket@", "work@", "shipped@"].iter().zip(&words).all(|(p, w)| w.starts_with(p))
        }
        Some(_) => words.len() == 2 && words[0].starts_with("ticket@") && words[1] == "rejected",
        None => false,
    };
    if shape {
        Verdict::Completed
    } else {
        Verdict::Wrong(format!("approve={approved:?} but the result is {text:?}"))
    }
}

pub(crate) fn trigger(op: &OpLog) -> Verdict {
    if let Some(why) = failed(op) {
        return Verdict::FailedClean(why.to_owned());
    }
    let text = texts(op).last().unwrap_or_default();
    if text.starts_with("added ") || text.starts_with("removed ") || text.ends_with(" was added meanwhile") {
        Verdict::Completed
    } else {
        Verdict::Wrong(format!("the trigger answered {text:?}"))
    }
}

pub(crate) fn session(op: &OpLog) -> Verdict {
    if let Some(why) = failed(op) {
        return Verdict::FailedClean(why.to_owned());
    }
    let mut asked: Option<(&str, &Value)> = None;
    let mut calls = 0;
    for fact in op.facts() {
        match fact {
            Fact::Answered { key, value } => asked = Some((key, value)),
            Fact::Text(text) => {
                calls += 1;
                let Some((tool, answer)) = asked.take() else {
                    return Verdict::Wrong(format!("a result without a question: {text:?}"));
                };
                if !bridge_text(tool, answer, text) {
                    return Verdict::Wrong(format!("{tool} answered {answer} ended {text:?}"));
                }
            }
            _ => {}
        }
    }
    if Some(calls) == op.detail["calls"].as_u64() {
        Verdict::Completed
    } else {
        Verdict::Wrong(format!("{calls} results for {} calls", op.detail["calls"]))
    }
}
