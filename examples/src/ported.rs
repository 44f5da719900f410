//! rmcp's `servers_mrtr` example (a weather tool that asks for the city, keeps
//! integrity-checked state, and answers on the retry), ported twice: line for line in
//! the hand-built style every other SDK uses ([`by_hand`]), and with `ask!`
//! ([`replayed`]). Both give a client the same rounds and the same answers; the guide's
//! "Coming from another SDK" chapter sets them side by side with the original.

use mcp_mrtr::Server;

/// The port line for line: the handler builds its `input_required` result, keeps where it
/// is in a state of its own, and reads the answer on the retry. What the original does with
/// an HMAC codec (seal the state, refuse a tampered one) the runtime does for every state.
pub mod by_hand {
    use mcp_mrtr::context::InputRequired;
    use mcp_mrtr::prelude::*;
    use mcp_mrtr::protocol::{ElicitAction, ElicitResult};
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
}

/// The weather server in either style.
pub fn server(by_hand: bool) -> Server {
    let server = Server::new("weather", env!("CARGO_PKG_VERSION"));
    if by_hand {
        server.tool(by_hand::weather)
    } else {
        server.tool(replayed::weather)
    }
}
