//! `completion/complete`: argument autocompletion for prompts and resource templates.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `completion/complete` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompleteParams {
    /// What is being completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument and its partial value.
    pub argument: CompleteArgument,
    /// Values of arguments already filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
}

/// The prompt or resource template whose argument is being completed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionReference {
    /// `{"type":"ref/prompt","name":…}`
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// `{"type":"ref/resource","uri":…}`
    #[serde(rename = "ref/resource")]
    Resource {
        /// The template's URI template.
        uri: String,
    },
}

/// The argument being completed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompleteArgument {
    /// Its name.
    pub name: String,
    /// What has been typed so far.
    pub value: String,
}

/// Already-resolved arguments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompleteContext {
    /// Argument values by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// The body of a `completion/complete` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: Completion,
}

/// Completion suggestions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// At most 100 suggestions.
    pub values: Vec<String>,
    /// How many suggestions exist in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// More suggestions exist than were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl Completion {
    /// Suggestions from a list, truncated to the protocol's 100 with `total`/`hasMore` set.
    pub fn from_values(values: Vec<String>) -> Self {
        const MAX: usize = 100;
        let total = values.len();
        let mut values = values;
        values.truncate(MAX);
        Self { values, total: Some(total as u64), has_more: Some(total > MAX) }
    }
}
