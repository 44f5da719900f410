//! What the client keeps of the server's tools: the parameters each mirrors into
//! `Mcp-Param-*` headers (SEP-2243), learnt from the tool list. A call over HTTP sends those
//! headers beside its body, so a gateway can route on them; a tool whose annotations the
//! spec forbids is not called at all, since no header the client could send would be right.
//!
//! And the list itself, for as long as the server said it stays fresh (`ttlMs`, SEP-2549)
//! and no change of the tools was heard: a list the server marks stale at once (`0`, or a
//! 2025-11-25 server, which names no lifetime) is not kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use axum::http::{HeaderName, HeaderValue};
use serde_json::Value;

use super::error::ClientError;
use crate::base::header_values::{declared, header_text, ParamHeader};
use crate::protocol::Tool;

#[derive(Default)]
pub(super) struct KnownTools {
    /// The mirrored parameters of each listed tool; `None` until the tools were listed.
    mirrored: RwLock<Option<HashMap<String, Mirrored>>>,
    /// The last list, until it goes stale.
    cached: Mutex<Option<(Vec<Tool>, Instant)>>,
}

#[derive(Clone)]
enum Mirrored {
    Params(Arc<[ParamHeader]>),
    /// Why the tool's annotations cannot be honoured.
    Invalid(Arc<str>),
}

impl KnownTools {
    /// Whether the tools were listed yet.
    pub(super) fn known(&self) -> bool {
        self.mirrored.read().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// The last list, while it is fresh.
    pub(super) fn fresh(&self) -> Option<Vec<Tool>> {
        let cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        cached.as_ref().filter(|(_, until)| Instant::now() < *until).map(|(tools, _)| tools.clone())
    }

    /// Forgets the list and what it said of each tool: the tools changed.
    pub(super) fn forget(&self) {
        self.cached.lock().unwrap_or_else(PoisonError::into_inner).take();
        self.mirrored.write().unwrap_or_else(PoisonError::into_inner).take();
    }

    /// Learns a complete tool list, fresh for `ttl`, and keeps from it only the tools the
    /// client can call: one whose `x-mcp-header` annotations are invalid is left out, with
    /// a warning.
    pub(super) fn learn(&self, tools: Vec<Tool>, ttl: Duration) -> Vec<Tool> {
        let mut known = HashMap::new();
        let mut callable = Vec::with_capacity(tools.len());
        for tool in tools {
            match declared(&tool.input_schema) {
                Ok(params) => {
                    known.insert(tool.name.clone(), Mirrored::Params(params.into()));
                    callable.push(tool);
                }
                Err(why) => {
                    tracing::warn!(tool = %tool.name, %why, "the server lists a tool whose header annotations are invalid; it is left out");
                    known.insert(tool.name.clone(), Mirrored::Invalid(why.into()));
                }
            }
        }
        *self.mirrored.write().unwrap_or_else(PoisonError::into_inner) = Some(known);
        let cached = (!ttl.is_zero()).then(|| (callable.clone(), Instant::now() + ttl));
        *self.cached.lock().unwrap_or_else(PoisonError::into_inner) = cached;
        callable
    }

    /// The `Mcp-Param-*` headers of a call of `tool` with `arguments`: one per mirrored
    /// parameter that has a value. A tool the list did not name has none.
    pub(super) fn headers(
        &self,
        tool: &str,
        arguments: Option<&Value>,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, ClientError> {
        let known = self.mirrored.read().unwrap_or_else(PoisonError::into_inner);
        let Some(mirrored) = known.as_ref().and_then(|known| known.get(tool)).cloned() else { return Ok(Vec::new()) };
        drop(known);
        let params = match mirrored {
            Mirrored::Params(params) => params,
            Mirrored::Invalid(why) => {
                return Err(ClientError::Config(format!(
                    "the tool {tool} cannot be called: its header annotations are invalid: {why}"
                )));
            }
        };
        let mut headers = Vec::with_capacity(params.len());
        for param in params.iter() {
            let value = arguments.and_then(|args| param.path.iter().try_fold(args, |value, key| value.get(key)));
            let Some(value) = value.filter(|value| !value.is_null()) else { continue };
            let name = HeaderName::try_from(param.header.as_str()).expect("declared names are header tokens");
            let value = HeaderValue::try_from(header_text(value)).map_err(|_| {
                ClientError::Config(format!("the argument mirrored into {} cannot be a header", param.header))
            })?;
            headers.push((name, value));
        }
        Ok(headers)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, schema: Value) -> Tool {
        Tool::new(name).input_schema(schema)
    }

    #[test]
    fn a_tool_with_forbidden_annotations_is_left_out_and_never_called() {
        let known = KnownTools::default();
        assert!(!known.known());
        let good = json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "n": {"type": "integer", "x-mcp-header": "N"}}});
        let on_a_number =
            json!({"type": "object", "properties": {"ratio": {"type": "number", "x-mcp-header": "Ratio"}}});
        let twice = json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}});
        let tools = vec![tool("good", good), tool("ratio", on_a_number), tool("twice", twice)];
        let listed = known.learn(tools, Duration::from_secs(60));
        assert_eq!(listed.iter().map(|tool| tool.name.as_str()).collect::<Vec<_>>(), ["good"]);
        let headers = known.headers("good", Some(&json!({"region": "café", "n": 7}))).unwrap();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.to_str().unwrap())).collect();
        assert_eq!(headers, [("mcp-param-region", "=?base64?Y2Fmw6k=?="), ("mcp-param-n", "7")]);
        assert!(known.headers("good", Some(&json!({"region": null}))).unwrap().is_empty());
        assert!(matches!(known.headers("ratio", None), Err(ClientError::Config(_))));
        assert!(known.headers("unlisted", None).unwrap().is_empty());
        // Kept while fresh, callable tools only; forgotten whole when the tools change.
        assert_eq!(known.fresh().unwrap().len(), 1);
        known.forget();
        assert!(known.fresh().is_none() && !known.known());
        known.learn(vec![tool("good", json!({"type": "object"}))], Duration::ZERO);
        assert!(known.fresh().is_none() && known.known());
    }
}
