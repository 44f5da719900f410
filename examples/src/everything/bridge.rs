//! Tools the 2025-11-25 conformance scenarios call. They are written exactly like the
//! 2026-07-28 ones: legacy clients get them through the bridge (their questions become
//! real `sampling/createMessage` and `elicitation/create` requests), modern clients
//! through `input_required` rounds.

use mcp_mrtr::prelude::*;
use serde_json::json;

/// Asks the client's model to answer `prompt`.
#[tool]
pub async fn test_sampling(
    /// What to ask the model.
    prompt: String,
) -> Result<String, ToolError> {
    let reply = ask!(sample prompt, max_tokens = 100)?;
    Ok(format!("LLM response: {}", reply.text()))
}

/// A username and an email address.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct UserInfo {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

/// Asks the user for a username and an email address, showing `message`.
#[tool]
pub async fn test_elicitation(
    /// The message to show the user.
    message: String,
) -> Result<String, ToolError> {
    let answer: Result<UserInfo, Declined> = ask!(elicit message);
    Ok(match answer {
        Ok(info) => format!("User response: action=accept, content={}", json!(info)),
        Err(Declined::Decline) => "User response: action=decline".to_owned(),
        Err(Declined::Cancel) => "User response: action=cancel".to_owned(),
    })
}

/// An account status (its values untitled, so the form shows a plain `enum`).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    Inactive,
    Pending,
}

/// A form whose every field has a default (SEP-1034).
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Defaults {
    #[serde(default = "defaults::name")]
    name: String,
    #[serde(default = "defaults::age")]
    age: i64,
    #[serde(default = "defaults::score")]
    score: f64,
    #[serde(default = "defaults::status")]
    status: Status,
    #[serde(default = "defaults::verified")]
    verified: bool,
}

mod defaults {
    pub(super) fn name() -> String {
        "John Doe".into()
    }
    pub(super) fn age() -> i64 {
        30
    }
    pub(super) fn score() -> f64 {
        95.5
    }
    pub(super) fn status() -> super::Status {
        super::Status::Active
    }
    pub(super) fn verified() -> bool {
        true
    }
}

/// Asks for a form whose fields all have defaults.
#[tool]
pub async fn test_elicitation_sep1034_defaults() -> Result<String, ToolError> {
    let answer: Result<Defaults, Declined> = ask!(elicit "Please review your details");
    Ok(match answer {
        Ok(values) => format!("Elicitation completed: action=accept, content={}", json!(values)),
        Err(declined) => format!("Elicitation completed: action={}", action(declined)),
    })
}

/// Three plain options.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Plain {
    Option1,
    Option2,
    Option3,
}

/// Three titled options.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Titled {
    /// First Option
    Value1,
    /// Second Option
    Value2,
    /// Third Option
    Value3,
}

/// Three titled choices for a multi-select.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    /// First Choice
    Value1,
    /// Second Choice
    Value2,
    /// Third Choice
    Value3,
}

/// Options titled the deprecated way, with `enumNames`.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Legacy {
    Opt1,
    Opt2,
    Opt3,
}

/// Every enum shape elicitation knows (SEP-1330).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Enums {
    untitled_single: Plain,
    titled_single: Titled,
    #[schemars(extend("enumNames" = ["Option One", "Option Two", "Option Three"]))]
    legacy_enum: Legacy,
    #[schemars(length(min = 1, max = 3))]
    untitled_multi: Vec<Plain>,
    #[schemars(length(min = 1, max = 3))]
    titled_multi: Vec<Choice>,
}

/// Asks for single and multiple choices, titled and untitled.
#[tool]
pub async fn test_elicitation_sep1330_enums() -> Result<String, ToolError> {
    let answer: Result<Enums, Declined> = ask!(elicit "Please pick your options");
    Ok(match answer {
        Ok(values) => format!("Elicitation completed: action=accept, content={}", json!(values)),
        Err(declined) => format!("Elicitation completed: action={}", action(declined)),
    })
}

fn action(declined: Declined) -> &'static str {
    match declined {
        Declined::Decline => "decline",
        Declined::Cancel => "cancel",
    }
}

/// Registers the tools.
pub fn register(server: Server) -> Server {
    server.tools(tools![
        test_sampling,
        test_elicitation,
        test_elicitation_sep1034_defaults,
        test_elicitation_sep1330_enums,
    ])
}
