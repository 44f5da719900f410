//! The MRTR examples of three other SDKs, each ported twice: line for line in the
//! hand-built style they use ([`by_hand`]), and with `ask!` ([`replayed`]).
//!
//! - `weather`, from rmcp 3.x's `servers_mrtr`: asks for the city, keeps integrity-checked
//!   state, answers for an accepted, declined or cancelled form.
//! - `deploy`, from the TypeScript SDK 2.0's `examples/mrtr/server.ts`: a confirmation form,
//!   then a URL sign-in, the step carried in the state.
//! - `confirm_deploy`, from the Python SDK 2.0's `examples/stories/mrtr/server.py`: a
//!   confirmation, with a fixed string as the state.
//!
//! Both styles give a client the same rounds; the guide's "Coming from another SDK"
//! chapter sets them beside the originals.

use mcp_mrtr::Server;

/// The port line for line: the handler builds its `input_required` result, keeps where it
/// is in a state of its own, and reads the answer on the retry. What the original does with
/// an HMAC codec (seal the state, refuse a tampered one) the runtime does for every state.
pub mod by_hand {
    use mcp_mrtr::context::InputRequired;
    use mcp_mrtr::prelude::*;
    use mcp_mrtr::protocol::{ElicitAction, ElicitResult, JsonObject};
    use mcp_mrtr::question::ElicitUrl;
    use serde_json::{json, Value};

    #[derive(Serialize, Deserialize)]
    struct WeatherRequestState {
        awaiting: WeatherInput,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum WeatherInput {
        City,
    }

    /// Current weather for a city the user picks.
    #[tool]
    pub async fn weather(ctx: &Ctx) -> Result<String, ToolError> {
        match ctx.request_state::<WeatherRequestState>().await? {
            // First round: ask for a city, and remember where we are in the state.
            None => {
                let city = json!({
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": "Which city do you want the weather for?",
                        "requestedSchema": {
                            "type": "object",
                            "properties": { "city": { "type": "string" } },
                            "required": ["city"]
                        }
                    }
                });
                let state = WeatherRequestState { awaiting: WeatherInput::City };
                ctx.input_required(InputRequired::new().request_json("city", city).state(&state)).await
            }
            // Retry: the state opened (a tampered one never reaches here); read the city.
            Some(state) => match state.awaiting {
                WeatherInput::City => finish_weather_request(ctx.input_response("city")),
            },
        }
    }

    fn finish_weather_request(response: Option<Value>) -> Result<String, ToolError> {
        let response = response.ok_or_else(|| ToolError::invalid_params("missing city elicitation response"))?;
        let response: ElicitResult = serde_json::from_value(response)
            .map_err(|_| ToolError::invalid_params("invalid city elicitation response"))?;
        match response.action {
            ElicitAction::Accept => {
                let city = response.content.as_ref().and_then(|content| content.get("city")).and_then(Value::as_str);
                let city =
                    city.ok_or_else(|| ToolError::invalid_params("accepted elicitation did not include a city"))?;
                Ok(format!("It is sunny in {city}."))
            }
            ElicitAction::Decline => Ok("I cannot look up the weather without a city.".into()),
            ElicitAction::Cancel => Ok("Weather lookup cancelled.".into()),
        }
    }

    #[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum Step {
        Confirm,
        SignedIn,
    }

    #[derive(Serialize, Deserialize)]
    struct DeployState {
        step: Step,
        env: String,
    }

    fn confirm_schema() -> Value {
        json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } }, "required": ["confirm"] })
    }

    /// The `content` of an accepted form under `key`, if that is the answer.
    fn accepted_content(ctx: &Ctx, key: &str) -> Option<JsonObject> {
        let answer: ElicitResult = serde_json::from_value(ctx.input_response(key)?).ok()?;
        (answer.action == ElicitAction::Accept).then_some(answer.content?)
    }

    /// Deploys to the named environment after a confirmation and a sign-in.
    #[tool(title = "Deploy (write-once)")]
    pub async fn deploy(ctx: &Ctx, env: String) -> Result<CallToolResult, ToolError> {
        let state = ctx.request_state::<DeployState>().await?;
        let step = state.as_ref().map_or(Step::Confirm, |state| state.step);
        if step == Step::Confirm {
            let confirmed = accepted_content(ctx, "confirm").and_then(|content| content.get("confirm")?.as_bool());
            if confirmed != Some(true) {
                let confirm = json!({
                    "method": "elicitation/create",
                    "params": { "mode": "form", "message": format!("Deploy to {env}?"), "requestedSchema": confirm_schema() }
                });
                // The next entry stays at the confirm step until the user accepts.
                let state = DeployState { step: Step::Confirm, env };
                return ctx.input_required(InputRequired::new().request_json("confirm", confirm).state(&state)).await;
            }
            let auth = ElicitUrl::new("Sign in to continue", format!("https://example.com/auth?env={env}"));
            let state = DeployState { step: Step::SignedIn, env };
            return ctx.input_required(InputRequired::new().ask("auth", &auth).state(&state)).await;
        }
        let auth = ctx.input_response("auth");
        if auth.as_ref().and_then(|auth| auth["action"].as_str()) != Some("accept") {
            return Ok(CallToolResult::error("auth response missing or declined"));
        }
        Ok(CallToolResult::text(format!("deployed to {}", state.map_or(env, |state| state.env))))
    }

    /// Deploy to an environment, asking the user to confirm first.
    #[tool]
    pub async fn confirm_deploy(ctx: &Ctx, env: String) -> Result<String, ToolError> {
        let Some(answer) = ctx.input_response("confirm") else {
            let mut schema = confirm_schema();
            schema["properties"]["confirm"]["description"] = json!("Proceed with the deployment?");
            let ask = json!({
                "method": "elicitation/create",
                "params": { "mode": "form", "message": format!("Deploy to {env}?"), "requestedSchema": schema }
            });
            return ctx
                .input_required(InputRequired::new().request_json("confirm", ask).state(&"awaiting-confirm"))
                .await;
        };
        if ctx.request_state::<String>().await?.as_deref() != Some("awaiting-confirm") {
            return Err(ToolError::new("unexpected request state"));
        }
        let answer: Option<ElicitResult> = serde_json::from_value(answer).ok();
        let confirmed = answer.filter(|answer| answer.action == ElicitAction::Accept).and_then(|answer| answer.content);
        if confirmed.and_then(|content| content.get("confirm")?.as_bool()) == Some(true) {
            return Ok(format!("deployed to {env}"));
        }
        Ok(format!("deployment to {env} cancelled"))
    }
}

/// The same tool with `ask!`: the form comes from the type, the state and the retry are
/// the runtime's.
pub mod replayed {
    use mcp_mrtr::prelude::*;

    /// The city to report on.
    #[derive(Deserialize, JsonSchema)]
    struct City {
        city: String,
    }

    /// Current weather for a city the user picks.
    #[tool]
    pub async fn weather() -> Result<String, ToolError> {
        match ask!(key = "city", elicit "Which city do you want the weather for?") {
            Ok(City { city }) => Ok(format!("It is sunny in {city}.")),
            Err(Declined::Decline) => Ok("I cannot look up the weather without a city.".into()),
            Err(Declined::Cancel) => Ok("Weather lookup cancelled.".into()),
        }
    }

    #[derive(Deserialize, JsonSchema)]
    struct Confirm {
        /// Proceed with the deployment?
        confirm: bool,
    }

    /// Deploys to the named environment after a confirmation and a sign-in.
    #[tool(title = "Deploy (write-once)")]
    pub async fn deploy(env: String) -> Result<String, ToolError> {
        let Confirm { confirm: true } = ask!(key = "confirm", elicit format!("Deploy to {env}?"))? else {
            return Ok(format!("deployment to {env} cancelled"));
        };
        ask!(key = "auth", elicit_url "Sign in to continue", format!("https://example.com/auth?env={env}"))
            .map_err(|_| ToolError::new("auth response missing or declined"))?;
        Ok(format!("deployed to {env}"))
    }

    /// Deploy to an environment, asking the user to confirm first.
    #[tool]
    pub async fn confirm_deploy(env: String) -> Result<String, ToolError> {
        match ask!(key = "confirm", elicit format!("Deploy to {env}?")) {
            Ok(Confirm { confirm: true }) => Ok(format!("deployed to {env}")),
            _ => Ok(format!("deployment to {env} cancelled")),
        }
    }
}

/// The three tools in either style.
pub fn server(by_hand: bool) -> Server {
    let server = Server::new("ported", env!("CARGO_PKG_VERSION"));
    if by_hand {
        server.tools(mcp_mrtr::tools![by_hand::weather, by_hand::deploy, by_hand::confirm_deploy])
    } else {
        server.tools(mcp_mrtr::tools![replayed::weather, replayed::deploy, replayed::confirm_deploy])
    }
}
