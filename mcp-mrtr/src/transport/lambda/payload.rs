//! What AWS lets a function answer. A response over it never reaches the client: Lambda
//! refuses a synchronous invocation's response over 6 MB, and an Application Load Balancer a
//! Lambda target's over 1 MB, and the client gets a bare 502. So the function answers a
//! JSON-RPC error in its place, naming both sizes, which the client can show and the model
//! can act on (ask for less).

use axum::body::Bytes;
use axum::http::response::Parts;
use axum::http::{header, HeaderValue};
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;
use serde_json::{json, Value};

/// AWS Lambda's limit on a synchronous invocation's response payload: 6 MB.
pub(super) const LAMBDA_RESPONSE_BYTES: usize = 6 * 1024 * 1024;

/// An Application Load Balancer's limit on a Lambda target's response body: 1 MB.
const ALB_RESPONSE_BYTES: usize = 1_000_000;

/// The most a response to `request` may hold, and whose limit that is: an ALB's behind
/// one (or `max`, if lower), `max` otherwise.
pub(super) fn limit_for(request: &lambda_http::Request, max: usize) -> (usize, &'static str) {
    match request.request_context_ref() {
        Some(RequestContext::Alb(_)) if ALB_RESPONSE_BYTES < max => {
            (ALB_RESPONSE_BYTES, "an Application Load Balancer's limit")
        }
        _ if max < LAMBDA_RESPONSE_BYTES => (max, "the function's Lambda::max_response_bytes"),
        _ => (max, "AWS Lambda's limit on a response"),
    }
}

/// `body`, or in its place a JSON-RPC error saying it is over `limit` (`whose` it is).
pub(super) fn bounded(parts: &mut Parts, body: Bytes, (limit, whose): (usize, &str)) -> Bytes {
    if body.len() <= limit {
        return body;
    }
    tracing::warn!(bytes = body.len(), limit, "a response over {whose} was answered with an error in its place");
    let message = format!(
        "the answer is {} bytes, more than this function may send ({limit} bytes, {whose}); ask for less",
        body.len()
    );
    let error = json!({ "jsonrpc": "2.0", "id": answered_id(&body), "error": { "code": -32603, "message": message } });
    parts.status = axum::http::StatusCode::OK;
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Bytes::from(error.to_string())
}

/// The id of the request `body` answers: its JSON-RPC response's, as JSON or as the last
/// response among an SSE stream's events; `null` when none is found.
fn answered_id(body: &[u8]) -> Value {
    let id_of = |message: &[u8]| -> Option<Value> {
        let message: Value = serde_json::from_slice(message).ok()?;
        (message.get("result").is_some() || message.get("error").is_some()).then(|| message.get("id").cloned())?
    };
    if let Some(id) = id_of(body) {
        return id;
    }
    let text = String::from_utf8_lossy(body);
    text.lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .find_map(|data| id_of(data.trim().as_bytes()))
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts() -> Parts {
        axum::http::Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    #[test]
    fn an_answer_within_the_limit_goes_as_it_is() {
        let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert_eq!(bounded(&mut parts(), body.clone(), (body.len(), "a limit")), body);
    }

    #[test]
    fn an_answer_over_the_limit_is_an_error_for_its_request() {
        let stream =
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n\
                      event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"result\":{\"big\":\"xxxxxxxx\"}}\n\n";
        let mut parts = parts();
        let answered = bounded(&mut parts, Bytes::from(stream), (64, "a test's limit"));
        let error: Value = serde_json::from_slice(&answered).unwrap();
        assert_eq!(error["id"], "r-7");
        assert_eq!(error["error"]["code"], -32603);
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("{} bytes", stream.len())) && message.contains("64 bytes, a test's limit"));
        assert_eq!(parts.headers[header::CONTENT_TYPE], "application/json");
    }
}
