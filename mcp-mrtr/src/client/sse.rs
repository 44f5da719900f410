//! Reading a response body within its bound: whole (JSON), or event by event (SSE), keeping
//! what resuming a stream needs (the last event id and the server's `retry`). A response's
//! stream is bounded whole; a stream that stays open (a subscription, a session's
//! standalone stream) is bounded event by event, and forgets each event once read.

use std::time::Duration;

use axum::body::Bytes;
use http_body_util::BodyExt;
use serde_json::Value;

use super::error::{describe, ClientError};

/// The body of a response, read within a bound.
pub(super) struct Reader {
    body: hyper::body::Incoming,
    limit: usize,
    read: Vec<u8>,
    /// How far the events in `read` were taken.
    scanned: usize,
    /// The bytes read and forgotten before `read`; `None` for a stream bounded event by
    /// event.
    forgotten: Option<usize>,
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

impl Reader {
    pub(super) fn new(body: hyper::body::Incoming, limit: usize) -> Self {
        Self { body, limit, read: Vec::new(), scanned: 0, forgotten: Some(0), last_event_id: None, retry: None }
    }

    /// A reader of a stream that stays open: `limit` bounds each event, not the whole.
    pub(super) fn lasting(body: hyper::body::Incoming, limit: usize) -> Self {
        Self { forgotten: None, ..Self::new(body, limit) }
    }

    /// A reader of a stream resumed after `earlier`: the same event id and retry until the
    /// new stream says otherwise.
    pub(super) fn resuming(body: hyper::body::Incoming, earlier: &Self) -> Self {
        Self {
            last_event_id: earlier.last_event_id.clone(),
            retry: earlier.retry,
            forgotten: earlier.forgotten.map(|forgotten| forgotten + earlier.read.len()),
            ..Self::new(body, earlier.limit)
        }
    }

    /// The id of the last event that had one: where a resumed stream starts after.
    pub(super) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// How long the server asked to wait before reconnecting (`retry`).
    pub(super) fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// The next chunk, `None` at the end.
    async fn chunk(&mut self) -> Result<Option<Bytes>, ClientError> {
        loop {
            let Some(frame) = self.body.frame().await else { return Ok(None) };
            let frame = frame.map_err(|error| ClientError::Connect(describe(&error)))?;
            if let Ok(data) = frame.into_data() {
                let held = match self.forgotten {
                    Some(forgotten) => forgotten + self.read.len(),
                    None => self.read.len() - self.scanned,
                };
                if held + data.len() > self.limit {
                    return Err(ClientError::TooLarge { limit: self.limit });
                }
                return Ok(Some(data));
            }
        }
    }

    /// The whole body.
    pub(super) async fn all(&mut self) -> Result<&[u8], ClientError> {
        while let Some(data) = self.chunk().await? {
            self.read.extend_from_slice(&data);
        }
        Ok(&self.read)
    }

    /// The next message on an SSE stream; `None` at its end.
    pub(super) async fn next_message(&mut self) -> Result<Option<Value>, ClientError> {
        loop {
            // Events end at a blank line; a line ends at LF (CR LF and CR alone are folded).
            while let Some((length, next)) = find_event_end(&self.read[self.scanned..]) {
                let event = parse_event(&self.read[self.scanned..self.scanned + length]);
                self.scanned += next;
                if let Some(id) = event.id {
                    self.last_event_id = Some(id);
                }
                if let Some(retry) = event.retry {
                    self.retry = Some(retry);
                }
                if let Some(data) = event.data.filter(|data| !data.trim().is_empty()) {
                    let message = serde_json::from_str(&data)
                        .map_err(|error| ClientError::Malformed(format!("an event's data is not JSON: {error}")))?;
                    return Ok(Some(message));
                }
            }
            // What was read is forgotten before reading on: a stream may last for days.
            if self.scanned > 0 {
                self.read.drain(..self.scanned);
                if let Some(forgotten) = &mut self.forgotten {
                    *forgotten += self.scanned;
                }
                self.scanned = 0;
            }
            let Some(data) = self.chunk().await? else { return Ok(None) };
            self.read.extend(data.iter().filter(|&&byte| byte != b'\r'));
        }
    }
}

/// Where the first event in `text` ends: the event's length, and how far to skip past it.
fn find_event_end(text: &[u8]) -> Option<(usize, usize)> {
    memchr::memmem::find(text, b"\n\n").map(|at| (at, at + 2))
}

/// The fields of one event the client reads.
#[derive(Debug, Default, PartialEq)]
struct Event {
    /// Its `data` lines, joined.
    data: Option<String>,
    id: Option<String>,
    retry: Option<Duration>,
}

fn parse_event(event: &[u8]) -> Event {
    let text = String::from_utf8_lossy(event);
    let mut parsed = Event::default();
    for line in text.split('\n') {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => match &mut parsed.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => parsed.data = Some(value.to_owned()),
            },
            "id" if !value.contains('\0') => parsed.id = Some(value.to_owned()),
            "retry" => parsed.retry = value.parse().ok().map(Duration::from_millis),
            _ => {}
        }
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_stream_yields_its_fields() {
        let event = parse_event(b"event: message\nid: 7\nretry: 500\ndata: {\"a\":1}");
        assert_eq!(event.data.as_deref(), Some("{\"a\":1}"));
        assert_eq!((event.id.as_deref(), event.retry), (Some("7"), Some(Duration::from_millis(500))));
        assert_eq!(parse_event(b"data: [1,\ndata: 2]").data.as_deref(), Some("[1,\n2]"));
        assert_eq!(parse_event(b": a comment"), Event::default());
        assert_eq!(find_event_end(b"data: 1\n\ndata: 2"), Some((7, 9)));
    }
}
