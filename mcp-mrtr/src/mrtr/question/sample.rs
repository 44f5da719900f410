//! Sampling: [`Sample`], a `sampling/createMessage` request built up option by option, and
//! [`Refused`], the answer of a client (or user) that would not sample.

use serde_json::Value;

use super::{kept, Question};
use crate::base::error::Error;
use crate::protocol::{
    CreateMessageParams, CreateMessageResult, InputRequest, ModelHint, ModelPreferences, SamplingMessage, Tool,
    ToolChoice,
};

/// `sampling/createMessage`: ask the client's model.
///
/// **Deprecated in 2026-07-28** (SEP-2577), still served: clients of that revision may
/// stop offering `sampling`, and a call that needs it then fails with `-32021`. For new
/// tools, call a model provider from the server itself; to ask the person, use
/// [`Elicit`](super::Elicit). Existing tools keep working, and no compiler warning marks them (a
/// `#[deprecated]` would break `-D warnings` builds that must still support older clients).
pub struct Sample {
    params: CreateMessageParams,
}

impl Sample {
    /// Sampling on one user message, with at most 1000 tokens.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self::conversation(vec![SamplingMessage::user_text(prompt)])
    }

    /// Sampling that continues a whole conversation.
    pub fn conversation(messages: Vec<SamplingMessage>) -> Self {
        Self { params: CreateMessageParams::new(messages, 1000) }
    }

    /// The most tokens to generate.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.params.max_tokens = max_tokens;
        self
    }

    /// A system prompt.
    pub fn system(mut self, system_prompt: impl Into<String>) -> Self {
        self.params.system_prompt = Some(system_prompt.into());
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.params.temperature = Some(temperature);
        self
    }

    /// Adds a model name hint (most preferred first).
    pub fn model_hint(mut self, name: impl Into<String>) -> Self {
        let prefs = self.params.model_preferences.get_or_insert_with(ModelPreferences::default);
        prefs.hints.push(ModelHint { name: name.into() });
        self
    }

    /// Model preferences wholesale.
    pub fn model_preferences(mut self, preferences: ModelPreferences) -> Self {
        self.params.model_preferences = Some(preferences);
        self
    }

    /// Tools the model may call; needs the client's `sampling.tools`.
    pub fn tools(mut self, tools: Vec<Tool>) -> Self {
        self.params.tools = Some(tools);
        self
    }

    /// `"auto"`, `"required"` or `"none"`; needs the client's `sampling.tools`.
    pub fn tool_choice(mut self, mode: impl Into<String>) -> Self {
        self.params.tool_choice = Some(ToolChoice { mode: Some(mode.into()) });
        self
    }
}

impl Question for Sample {
    type Output = Result<CreateMessageResult, Refused>;

    fn request(&self) -> Result<InputRequest, Error> {
        Ok(InputRequest::Sample(Box::new(self.params.clone())))
    }

    fn decode(&self, answer: Value) -> Option<(Self::Output, Value)> {
        if let Some(refused) = Refused::of(&answer) {
            let kept = serde_json::json!({ "error": { "code": refused.code, "message": refused.message } });
            return Some((Err(refused), kept));
        }
        let result: CreateMessageResult = serde_json::from_value(answer).ok()?;
        let kept = kept(&result);
        Some((Ok(result), kept))
    }

    fn asks_again_when_malformed(&self) -> bool {
        false
    }
}

/// A sampling request the client refused: what hosts answer when the user rejects it, or
/// when they sample for nobody. Through `?` it ends a tool as an execution error the model
/// reads; `match` it to fall back on something else.
///
/// ```
/// use mcp_mrtr::prelude::*;
///
/// /// Summarises a text, with the client's model when it lets us.
/// #[tool]
/// async fn summarize(text: String) -> Result<String, ToolError> {
///     match ask!(key = "summary", sample format!("Summarize: {text}")) {
///         Ok(summary) => Ok(summary.text()),
///         // The user said no: the first sentence will do.
///         Err(_refused) => Ok(text.split('.').next().unwrap_or_default().to_owned()),
///     }
/// }
/// # let _ = summarize;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refused {
    /// The JSON-RPC error code the client answered with.
    pub code: i64,
    /// Its message.
    pub message: String,
}

impl Refused {
    /// The refusal an answer carries: `{"error": {"code", "message"}}` (how a refused
    /// request's JSON-RPC error reaches `inputResponses`, and how the 2025-11-25 bridge
    /// files one), or a bare error object `{"code", "message"}`.
    fn of(answer: &Value) -> Option<Self> {
        let error = answer.get("error").unwrap_or(answer);
        let code = error.get("code")?.as_i64()?;
        let message = error.get("message")?.as_str()?.to_owned();
        Some(Self { code, message })
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the client refused the sampling request: {}", self.message)
    }
}

impl std::error::Error for Refused {}
