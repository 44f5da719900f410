//! A JSON-RPC message as the client writes it and reads its answer, whatever carries it.

use serde::Serialize;
use serde_json::Value;

use super::error::ClientError;
use crate::base::error::{Error, ErrorCode};
use crate::protocol::JsonObject;

/// Request `id` as JSON text.
pub(super) fn request(id: u64, method: &str, params: &JsonObject) -> Vec<u8> {
    #[derive(Serialize)]
    struct Message<'a> {
        jsonrpc: &'static str,
        id: u64,
        method: &'a str,
        params: &'a JsonObject,
    }
    serde_json::to_vec(&Message { jsonrpc: "2.0", id, method, params }).expect("a JSON object is JSON")
}

/// The result of a JSON-RPC response to `id`, or its error.
pub(super) fn reply(message: Value, id: u64) -> Result<JsonObject, ClientError> {
    let Value::Object(mut message) = message else {
        return Err(ClientError::Malformed("the response is not a JSON object".into()));
    };
    // An error with a null id is a server's that could not read the request's (JSON-RPC
    // 2.0, 5): as the answer to this request's own POST, it is this request's (the
    // TypeScript SDK answers an unknown method before a session so).
    let null_id_error = message.get("id") == Some(&Value::Null) && message.contains_key("error");
    if message.get("id").and_then(Value::as_u64) != Some(id) && !null_id_error {
        let got = message.get("id").map_or_else(|| "none".to_owned(), Value::to_string);
        return Err(ClientError::Malformed(format!("the response's id is {got}, not {id}")));
    }
    if let Some(result) = message.remove("result") {
        let Value::Object(result) = result else {
            return Err(ClientError::Malformed("the result is not an object".into()));
        };
        return Ok(result);
    }
    let Some(error) = message.remove("error") else {
        return Err(ClientError::Malformed("the response has neither a result nor an error".into()));
    };
    Err(error_of(error).unwrap_or_else(|| ClientError::Malformed("the error has no integer code".into())))
}

/// Which call or subscription a notification belongs to: its progress token, or the
/// subscription id a listen stream's notifications carry (the client makes both from
/// request ids, so one key names either).
pub(super) fn route_of(notification: &Value) -> Option<u64> {
    let params = notification.get("params")?;
    match notification.get("method")?.as_str()? {
        "notifications/progress" => params.get("progressToken")?.as_u64(),
        _ => params.get("_meta")?.get(crate::protocol::meta_keys::SUBSCRIPTION_ID)?.as_u64(),
    }
}

/// A JSON-RPC error object as the server's error; `None` when it is not one.
pub(super) fn error_of(error: Value) -> Option<ClientError> {
    let Value::Object(mut error) = error else { return None };
    let code = error.get("code").and_then(Value::as_i64).and_then(|code| i32::try_from(code).ok())?;
    let message = match error.remove("message") {
        Some(Value::String(message)) => message,
        _ => String::new(),
    };
    let mut rpc = Error::new(ErrorCode(code), message);
    if let Some(data) = error.remove("data") {
        rpc = rpc.with_data(data);
    }
    Some(ClientError::Rpc(rpc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_is_its_result_or_its_error() {
        let ok = serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete"}});
        assert_eq!(reply(ok, 3).unwrap()["resultType"], "complete");
        let error = serde_json::json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "no", "data": {"uri": "x"}}});
        let ClientError::Rpc(error) = reply(error, 3).unwrap_err() else { panic!("not an rpc error") };
        assert_eq!(
            (error.code(), error.message(), error.data()),
            (ErrorCode::INVALID_PARAMS, "no", Some(&serde_json::json!({"uri": "x"})))
        );
        let other = serde_json::json!({"jsonrpc": "2.0", "id": 4, "result": {}});
        assert!(matches!(reply(other, 3), Err(ClientError::Malformed(_))));
        // A null id: a server's error that could not read the request's, still its answer.
        let unread = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "no"}});
        assert!(matches!(reply(unread, 3), Err(ClientError::Rpc(_))));
        let null_result = serde_json::json!({"jsonrpc": "2.0", "id": null, "result": {}});
        assert!(matches!(reply(null_result, 3), Err(ClientError::Malformed(_))));
    }
}
