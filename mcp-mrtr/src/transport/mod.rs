//! Transports: newline-delimited JSON over stdio, and Streamable HTTP.
//!
//! Both read a message with [`read_message`], validate its envelope, then hand it to
//! the one dispatch path (`dispatch::Engine::handle`).

pub(crate) mod http;
pub(crate) mod stdio;

use crate::dispatch::Reply;
use crate::envelope::Incoming;
use crate::protocol::{Outgoing, RequestId};
use crate::Error;

/// Parses one message's bytes into a request or notification.
pub(crate) fn read_message(bytes: &[u8]) -> Result<Incoming, (Option<RequestId>, Error)> {
    let value = serde_json::from_slice(bytes).map_err(|e| (None, Error::parse_error(e)))?;
    Incoming::from_value(value)
}

impl Reply {
    pub(crate) fn into_outgoing(self) -> Outgoing {
        match self.outcome {
            Ok(result) => Outgoing::Result { id: self.id, result },
            Err(error) => error_message(Some(self.id), &error),
        }
    }
}

pub(crate) fn error_message(id: Option<RequestId>, error: &Error) -> Outgoing {
    error.to_message(id)
}
