//! What the transport knows about a request besides its JSON ([`Delivery`]), the revision
//! it is served in, and [`Bridge`]: the door a 2025-11-25 request asks its client through.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::{Extensions, HeaderMap};
use futures_util::future::BoxFuture;

use crate::base::caller::Caller;
use crate::base::error::Error;
use crate::protocol::{Era, InputRequest, JsonObject, Notification, Notifier};

/// What the transport knows about a request besides its JSON.
#[derive(Clone, Debug, Default)]
pub(crate) struct Delivery {
    /// Where notifications go; `None` when the client cannot receive them.
    pub(crate) notifier: Option<Notifier>,
    /// The HTTP request headers (none on stdio).
    pub(crate) headers: Option<Arc<HeaderMap>>,
    /// What the application attached to the request: HTTP middleware's extensions (the
    /// authenticated [`Caller`] among them), or a test's.
    pub(crate) extensions: Arc<Extensions>,
    /// The legacy (2025-11-25) side of the request: how it asks its client; `None` for
    /// modern requests.
    pub(crate) bridge: Option<Arc<dyn Bridge>>,
    /// How long one run of a handler may take unless its route says otherwise
    /// (`Server::handler_timeout`, or the transport's default).
    pub(crate) handler_timeout: Option<std::time::Duration>,
}

/// How long a bridge waits, by default, for a client to answer a round's questions: a
/// person may be filling in a form. `Server::bridge_answer_timeout` changes it.
pub(crate) const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// How a 2025-11-25 request asks its client in the middle of a call: as real
/// server-to-client requests. The core defines this door and the legacy transport
/// (`legacy`) goes through it, so the core never names the legacy session machinery.
pub(crate) trait Bridge: Send + Sync + std::fmt::Debug {
    /// Sends one round's questions to the client on `outgoing` and waits for their
    /// answers (keyed as the questions are), at most `timeout`, or until `shutdown`.
    fn ask<'a>(
        &'a self,
        outgoing: &'a Notifier,
        questions: BTreeMap<String, InputRequest>,
        timeout: std::time::Duration,
        shutdown: BoxFuture<'a, ()>,
    ) -> BoxFuture<'a, Result<JsonObject, Error>>;

    /// `notifications/elicitation/complete` for the url elicitation asked under `key`;
    /// `None` if this bridge never asked one under that key.
    fn url_complete(&self, key: &str) -> Option<Notification>;
}

impl Delivery {
    /// The revision the request is served in: 2025-11-25 when it came with a bridge.
    pub(crate) fn era(&self) -> Era {
        if self.bridge.is_some() {
            Era::Legacy
        } else {
            Era::Modern
        }
    }

    /// The authenticated caller, as the HTTP layer (or a test) attached it.
    pub(crate) fn caller(&self) -> Option<&Caller> {
        self.extensions.get::<Caller>()
    }
}
