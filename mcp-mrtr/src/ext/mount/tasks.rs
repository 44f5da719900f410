//! An upstream's task as this server's: a mounted call the upstream answers with a task
//! answers the caller with it, and the caller's `tasks/get`, `tasks/update` and
//! `tasks/cancel` pass through to the upstream. Nothing is kept here: the id the caller
//! gets names the mount and the upstream's id, with a MAC over both and the caller, keyed
//! from the state keys, so any instance sharing the keys serves it, only its caller
//! reaches it, and no caller can make up an id that reaches an upstream's task.

use std::any::Any;
use std::sync::{Arc, PoisonError, RwLock};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use futures_util::future::BoxFuture;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::upstream::{self, Upstream};
use crate::base::error::Error;
use crate::client::Forwarding;
use crate::dispatch::{Engine, TasksElsewhere};
use crate::intake::envelope::RequestMeta;
use crate::mrtr::context::Delivery;
use crate::protocol::{meta_keys, JsonObject, Method};

/// What the MAC key is derived for: no other use of the state keys shares it.
const PURPOSE: &[u8] = b"mcp-mrtr mounted task id v1";
/// The MAC's length in the id: 128 bits.
const MAC_LEN: usize = 16;

/// The server's mounts whose upstreams serve tasks, by door number (the order the
/// mounts were registered in: the same on every instance built from the same code).
#[derive(Default)]
pub(crate) struct MountedTasks {
    upstreams: RwLock<Vec<Arc<Upstream>>>,
}

impl MountedTasks {
    /// Adds `upstream`, which may now answer a call with a task.
    pub(crate) fn add(&self, upstream: &Arc<Upstream>) {
        let mut upstreams = self.upstreams.write().unwrap_or_else(PoisonError::into_inner);
        if upstream.door.set(upstreams.len()).is_ok() {
            upstreams.push(upstream.clone());
        }
    }

    fn upstream(&self, door: usize) -> Option<Arc<Upstream>> {
        self.upstreams.read().unwrap_or_else(PoisonError::into_inner).get(door).cloned()
    }
}

impl TasksElsewhere for MountedTasks {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn adopt(
        &self,
        engine: &Engine,
        delivery: &Delivery,
        upstream: usize,
        mut created: JsonObject,
    ) -> Result<JsonObject, Error> {
        let Some(Value::String(theirs)) = created.remove("taskId") else {
            return Err(Error::internal("a mounted server answered with a task that has no id"));
        };
        let owner = engine.principal_of(delivery).unwrap_or_default();
        let key = engine.sealer()?.ring().current().derive(PURPOSE);
        let ours = id(&key, upstream, &owner, &theirs);
        created.insert("taskId".into(), Value::String(ours));
        Ok(unstamped(created))
    }

    fn serve<'a>(
        &'a self,
        engine: &'a Engine,
        method: Method,
        task_id: &'a str,
        params: &Value,
        meta: &'a RequestMeta,
        delivery: &'a Delivery,
    ) -> Option<BoxFuture<'a, Result<JsonObject, Error>>> {
        let (door, theirs) = parse(task_id)?;
        let mut params = params.clone();
        Some(Box::pin(async move {
            let unknown = || Error::unknown("task", task_id);
            let owner = engine.principal_of(delivery).unwrap_or_default();
            let ring = engine.sealer()?.ring();
            let genuine = ring.keys().iter().any(|key| verify(&key.derive(PURPOSE), door, &owner, &theirs, task_id));
            let upstream = self.upstream(door).filter(|_| genuine).ok_or_else(unknown)?;
            let Some(params) = params.as_object_mut() else { return Err(unknown()) };
            let bearer = upstream.token_for(delivery.caller(), task_id).await?;
            params.insert("taskId".into(), Value::String(theirs));
            params.insert("_meta".into(), upstream::upstream_meta(&meta.client_capabilities, meta.log_level, true));
            let mut answer = upstream
                .client
                .forward(method.name(), std::mem::take(params), Forwarding { bearer, ..Forwarding::default() })
                .await
                .map_err(|error| upstream.refusal(task_id, &error))?;
            if answer.contains_key("taskId") {
                answer.insert("taskId".into(), Value::String(task_id.to_owned()));
            }
            Ok(unstamped(answer))
        }))
    }
}

/// `m<door>.<the upstream's id, base64url>.<MAC, base64url>`.
fn id(key: &[u8; 32], door: usize, owner: &str, theirs: &str) -> String {
    let tag = mac(key, door, owner, theirs).finalize().into_bytes();
    format!("m{door}.{}.{}", URL_SAFE_NO_PAD.encode(theirs), URL_SAFE_NO_PAD.encode(&tag[..MAC_LEN]))
}

/// The door and the upstream's id an id of ours names, unchecked; `None` for an id that
/// is not of this form (the server's own tasks' ids are hex).
fn parse(id: &str) -> Option<(usize, String)> {
    let mut parts = id.strip_prefix('m')?.split('.');
    let (door, theirs, _tag) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    Some((door.parse().ok()?, String::from_utf8(URL_SAFE_NO_PAD.decode(theirs).ok()?).ok()?))
}

/// Whether `id`'s MAC is the one `key` gives the door, the caller and the upstream's id.
fn verify(key: &[u8; 32], door: usize, owner: &str, theirs: &str, id: &str) -> bool {
    let Some(Ok(tag)) = id.rsplit('.').next().map(|tag| URL_SAFE_NO_PAD.decode(tag)) else { return false };
    tag.len() == MAC_LEN && mac(key, door, owner, theirs).verify_truncated_left(&tag).is_ok()
}

fn mac(key: &[u8; 32], door: usize, owner: &str, theirs: &str) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    // Each field ends where its length says: no two different triples write the same bytes.
    for field in [door.to_string().as_bytes(), owner.as_bytes(), theirs.as_bytes()] {
        mac.update(&(field.len() as u64).to_be_bytes());
        mac.update(field);
    }
    mac
}

/// An upstream's result without what dispatch stamps on ours: its `resultType` and its
/// `serverInfo`.
fn unstamped(mut result: JsonObject) -> JsonObject {
    result.remove("resultType");
    if let Some(Value::Object(meta)) = result.get_mut("_meta") {
        meta.remove(meta_keys::SERVER_INFO);
        if meta.is_empty() {
            result.remove("_meta");
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];

    #[test]
    fn an_id_opens_for_its_caller_and_door_only() {
        let ours = id(&KEY, 2, "caller:alice", "t-1");
        assert_eq!(parse(&ours), Some((2, "t-1".to_owned())));
        assert!(verify(&KEY, 2, "caller:alice", "t-1", &ours));
        assert!(!verify(&KEY, 2, "caller:bob", "t-1", &ours));
        assert!(!verify(&KEY, 1, "caller:alice", "t-1", &ours));
        assert!(!verify(&KEY, 2, "caller:alice", "t-2", &ours));
        assert!(!verify(&[8; 32], 2, "caller:alice", "t-1", &ours));
        // Another upstream id under the same MAC does not open.
        let forged = ours.replacen(&URL_SAFE_NO_PAD.encode("t-1"), &URL_SAFE_NO_PAD.encode("t-2"), 1);
        let (_, theirs) = parse(&forged).unwrap();
        assert!(!verify(&KEY, 2, "caller:alice", &theirs, &forged));
        // A cut MAC does not open either.
        assert!(!verify(&KEY, 2, "caller:alice", "t-1", &ours[..ours.len() - 4]));
    }

    #[test]
    fn the_server_s_own_ids_are_not_mounted_ones() {
        assert_eq!(parse("0123456789abcdef0123456789abcdef"), None);
        assert_eq!(parse("m.x.y"), None);
    }
}
