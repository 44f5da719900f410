//! A gateway's requests (the mount's): forwarded as its caller sent them, with what the
//! gateway does per request (a token, a session's questions relayed), and what the mount
//! needs to know of the client's session.

use serde_json::Value;
use tokio::sync::mpsc;

use super::{legacy, Answers, Client, ClientError, PerRequest, Transport};
use crate::protocol::JsonObject;

/// What a 2025-11-25 session runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SessionOver {
    Http,
    Stdio,
}

/// How [`Client::forward`] treats a forwarded request's side traffic.
#[derive(Default)]
pub(crate) struct Forwarding {
    /// Where the request's notifications go (its log messages, on HTTP, and its progress).
    pub(crate) notices: Option<mpsc::Sender<Value>>,
    /// Whether the request asks for progress (it carries a token of `notices`).
    pub(crate) progress: bool,
    /// What answers a 2025-11-25 session's questions asked on the request's stream (none
    /// by default: they are refused).
    pub(crate) answers: Option<Answers>,
    /// `Authorization: Bearer` this token, instead of the client's own (HTTP only).
    pub(crate) bearer: Option<String>,
}

impl Client {
    /// Whether the client was connected with [`Connect::relaying_questions`](super::Connect::relaying_questions).
    pub(crate) fn relays_questions(&self) -> bool {
        self.inner.answers.declare_every_kind()
    }

    /// Whether the client speaks to its server in a 2025-11-25 session, and over stdio.
    pub(crate) fn session(&self) -> Option<SessionOver> {
        let stdio = matches!(self.inner.transport, Transport::Stdio(_));
        self.inner.in_session().then_some(if stdio { SessionOver::Stdio } else { SessionOver::Http })
    }

    /// One request as a gateway forwards it: the envelope's `_meta` under the params' own,
    /// so the keys the gateway's caller sent (its capabilities) reach the server as the
    /// caller sent them; the result returned as it is, `input_required` included, for the
    /// caller's client to answer. See [`Forwarding`] for the request's notifications, and
    /// for a 2025-11-25 session's questions (over HTTP only: on stdio they do not say
    /// which request they belong to); the params' `_meta` is not sent in a session, where
    /// capabilities are the session's.
    pub(crate) async fn forward(
        &self,
        method: &str,
        mut params: JsonObject,
        forwarding: Forwarding,
    ) -> Result<JsonObject, ClientError> {
        let Forwarding { notices, progress, answers, bearer } = forwarding;
        let session = self.inner.in_session();
        let mut meta = match (session, params.remove("_meta")) {
            (true, _) => JsonObject::new(),
            (false, Some(Value::Object(own))) => {
                let mut meta = self.inner.meta.clone();
                meta.extend(own);
                meta
            }
            (false, _) => self.inner.meta.clone(),
        };
        let notices = notices.map(|sender| (self.inner.next_id(), sender));
        if let (Some((token, _)), true) = (&notices, progress) {
            meta.insert(crate::protocol::meta_keys::PROGRESS_TOKEN.into(), (*token).into());
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        let answers = match answers {
            Some(_) if session && matches!(self.inner.transport, Transport::Stdio(_)) => {
                return Err(ClientError::Unsupported(format!(
                    "a {} server's questions are forwarded over HTTP only: over stdio they do not say which \
                     request they belong to",
                    legacy::VERSION
                )));
            }
            Some(answers) => answers,
            None => Answers::new(),
        };
        let authorization = match (bearer, &self.inner.transport) {
            (None, _) => None,
            (Some(_), Transport::Stdio(_)) => {
                return Err(ClientError::Config("a token is sent over HTTP only: stdio has no headers".into()));
            }
            (Some(token), Transport::Http(_)) => Some(
                axum::http::HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| ClientError::Config("the token cannot be a header value".into()))?,
            ),
        };
        let own = PerRequest { answers: &answers, authorization: authorization.as_ref() };
        self.inner.send_as(method, &params, notices.as_ref(), &own).await
    }
}
