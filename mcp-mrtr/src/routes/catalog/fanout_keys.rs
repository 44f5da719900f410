//! [`FanoutKeys`]: what makes a message on a change fanout shared by several instances
//! one that an instance of this server sent, once.
//!
//! A fanout's bus is a trust boundary (audit C2): an instance applies the catalog edits it
//! hears, so anyone who could publish on the bus (a Redis user allowed pub/sub only,
//! another application on a shared Redis, an SSRF to it) could disable, enable or remove
//! any route on every instance. Every instance already shares one secret, the request
//! state key ring, so each message is sealed with an HMAC-SHA256 keyed from it (a key of
//! its own per ring key, derived with HKDF: never the state cipher's key) and opened only
//! when its tag is right.
//!
//! A sealed message names its key (rotation: every key of the ring opens, the first
//! seals), its sender (random per process), the sender's count and the time it was sent.
//! An instance keeps the last count it accepted from each sender, so a message published
//! again is refused; one older than [`WINDOW`] is refused too. From a sender it has not
//! heard yet, an instance also refuses a message sealed before it began to listen (less
//! [`SKEW`]): a message recorded before an instance started cannot be played to it later
//! (the fifth audit's D5, where a stale `remove` reached an instance started after it).
//! The channel's name is part of what is authenticated: a message moved to another
//! server's channel does not open.
//!
//! What is refused is dropped and counted, in a log line that never quotes it (it is
//! whatever someone published), at the 1st, 2nd, 4th, 8th… refusal so a flood cannot
//! flood the log.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::intake::request_state::KeyRing;

/// How far a sealed message's time may be from the receiver's clock: past it, the
/// message is refused as possibly replayed. It bounds what a receiver that has not heard
/// a sender yet accepts; clocks of a fleet agree far better than this.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);

/// How far a sender's clock may run behind this instance's: a first message from a
/// sender, sealed up to this long before this instance began to listen, is still heard.
const SKEW: Duration = Duration::from_secs(1);

/// The HKDF info of the fanout's MAC key: independent of every other use of the secret.
const PURPOSE: &[u8] = b"change-fanout hmac-sha256 v1";

/// What a sealed message starts with; a later format gets another.
const VERSION: &str = "sealed1";

/// Senders remembered before the ones not heard within [`WINDOW`] are forgotten. Only
/// genuine instances can add one (a sender is recorded once its message opened).
const MAX_SENDERS: usize = 4096;

/// The keys a [`ChangeFanout`](crate::catalog::ChangeFanout) seals and opens its messages with,
/// handed to it by [`ChangeFanout::authenticate_with`](crate::catalog::ChangeFanout::authenticate_with)
/// when serving starts. Derived from the server's request-state keys
/// ([`StateConfig`](crate::request_state::StateConfig), `MCP_MRTR_STATE_KEYS`), so instances that share
/// those share these, and they rotate with them.
///
/// ```
/// # fn carry(keys: &mcp_mrtr::catalog::FanoutKeys) {
/// let sealed = keys.seal("my-bus", "tools");
/// // Once, on the channel it was sealed for.
/// assert_eq!(keys.open("my-bus", &sealed).as_deref(), Some("tools"));
/// assert_eq!(keys.open("my-bus", &sealed), None);
/// assert_eq!(keys.open("my-bus", "tools"), None);
/// # }
/// ```
#[derive(Clone)]
pub struct FanoutKeys {
    inner: Arc<Inner>,
}

struct Inner {
    /// Each ring key's id and MAC key; the first seals.
    keys: Vec<(String, Zeroizing<[u8; 32]>)>,
    /// This process's name as a sender.
    sender: u64,
    /// The count of the last message this process sealed.
    sealed: AtomicU64,
    /// Per sender: the last count accepted and when.
    heard: Mutex<HashMap<u64, Heard>>,
    refused: AtomicU64,
    /// When this instance began to listen (unix ms): what a sender not heard yet sealed
    /// before then was sent to the instances of that time, not to this one.
    born: u64,
}

#[derive(Clone, Copy)]
struct Heard {
    count: u64,
    at_ms: u64,
}

/// Why a message was refused, for the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    NotSealed,
    UnknownKey,
    BadTag,
    OutsideWindow,
    Replayed,
    BeforeListening,
}

impl Refusal {
    fn reason(self) -> &'static str {
        match self {
            Self::NotSealed => "not sealed",
            Self::UnknownKey => {
                "sealed with a key this instance does not hold (give every instance the same MCP_MRTR_STATE_KEYS)"
            }
            Self::BadTag => "its seal does not match",
            Self::OutsideWindow => "sent too long ago, or by a clock far from this one",
            Self::Replayed => "heard before (a replay)",
            Self::BeforeListening => "sent before this instance began to listen (a replay)",
        }
    }
}

impl FanoutKeys {
    /// The keys of `ring`, sealing as `sender` (random per process: the instance's id).
    pub(crate) fn new(ring: &KeyRing, sender: u64) -> Self {
        let keys = ring.keys().iter().map(|key| (key.id().to_owned(), key.derive(PURPOSE))).collect();
        Self {
            inner: Arc::new(Inner {
                keys,
                sender,
                sealed: AtomicU64::new(0),
                heard: Mutex::default(),
                refused: AtomicU64::new(0),
                born: now_ms(),
            }),
        }
    }

    /// `message` sealed for `channel`, as one line of text that [`open`](Self::open) reads.
    pub fn seal(&self, channel: &str, message: &str) -> String {
        let (id, key) = &self.inner.keys[0];
        let count = self.inner.sealed.fetch_add(1, Ordering::Relaxed) + 1;
        let head = format!("{VERSION} {id} {:016x} {count} {}", self.inner.sender, now_ms());
        let tag = URL_SAFE_NO_PAD.encode(mac(key, channel, &head, message).finalize().into_bytes());
        format!("{head} {tag} {message}")
    }

    /// The message `sealed` carries, if an instance holding these keys sealed it for
    /// `channel` within the last 60 s and it was not opened before; `None` (logged, without
    /// quoting it) for anything else.
    pub fn open(&self, channel: &str, sealed: &str) -> Option<String> {
        match self.check(channel, sealed) {
            Ok(message) => Some(message.to_owned()),
            Err(refusal) => {
                let refused = self.inner.refused.fetch_add(1, Ordering::Relaxed) + 1;
                if refused.is_power_of_two() {
                    tracing::warn!(
                        refused,
                        reason = refusal.reason(),
                        channel,
                        "dropped a message on the change fanout that no instance of this server sent"
                    );
                }
                None
            }
        }
    }

    fn check<'a>(&self, channel: &str, sealed: &'a str) -> Result<&'a str, Refusal> {
        // `head tag message`: the head is five fields, the message whatever follows the tag.
        let mut spaces = sealed.match_indices(' ').map(|(at, _)| at);
        let (head_end, tag_end) = spaces.nth(4).zip(spaces.next()).ok_or(Refusal::NotSealed)?;
        let (head, tag, message) = (&sealed[..head_end], &sealed[head_end + 1..tag_end], &sealed[tag_end + 1..]);
        let mut fields = head.split(' ');
        let mut field = || fields.next().ok_or(Refusal::NotSealed);
        let (version, id, sender, count, at) = (field()?, field()?, field()?, field()?, field()?);
        if version != VERSION {
            return Err(Refusal::NotSealed);
        }
        let (_, key) = self.inner.keys.iter().find(|(known, _)| known == id).ok_or(Refusal::UnknownKey)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| Refusal::BadTag)?;
        // Compared in constant time: a tag guessed byte by byte reveals nothing.
        mac(key, channel, head, message).verify_slice(&tag).map_err(|_| Refusal::BadTag)?;
        // Authentic from here on: the numbers were written by an instance.
        let parse = |text: &str, radix| u64::from_str_radix(text, radix).map_err(|_| Refusal::NotSealed);
        let (sender, count, at_ms) = (parse(sender, 16)?, parse(count, 10)?, parse(at, 10)?);
        let now = now_ms();
        let window = millis(WINDOW);
        if now.abs_diff(at_ms) > window {
            return Err(Refusal::OutsideWindow);
        }
        let mut senders = self.inner.heard.lock().unwrap_or_else(PoisonError::into_inner);
        match senders.get(&sender) {
            Some(last) if last.count >= count => return Err(Refusal::Replayed),
            None if at_ms.saturating_add(millis(SKEW)) < self.inner.born => return Err(Refusal::BeforeListening),
            _ => {}
        }
        if senders.len() >= MAX_SENDERS {
            senders.retain(|_, last| now.abs_diff(last.at_ms) <= window);
        }
        senders.insert(sender, Heard { count, at_ms: now });
        Ok(message)
    }
}

impl fmt::Debug for FanoutKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self.inner.keys.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("FanoutKeys").field("seals", &ids[0]).field("opens", &ids).finish_non_exhaustive()
    }
}

/// The MAC over the channel, the sealed head and the message, each delimited (a NUL
/// cannot be part of a channel name or head).
fn mac(key: &[u8; 32], channel: &str, head: &str, message: &str) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    for part in [channel, "\0", head, "\0", message] {
        mac.update(part.as_bytes());
    }
    mac
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intake::request_state::StateKey;

    /// A ring of these key ids, each secret made from its id.
    fn ring(ids: &[&str]) -> KeyRing {
        let key = |id: &str| {
            StateKey::new(id, std::array::from_fn(|i| id.as_bytes()[0] ^ b"0123456789abcdefghijklmnopqrstuv"[i]))
        };
        let mut ring = KeyRing::new(key(ids[0]));
        for id in &ids[1..] {
            ring = ring.with_previous(key(id));
        }
        ring
    }

    fn keys(ids: &[&str], sender: u64) -> FanoutKeys {
        FanoutKeys::new(&ring(ids), sender)
    }

    #[test]
    fn a_message_opens_once_on_its_channel_with_a_key_of_the_ring() {
        let (sender, receiver) = (keys(&["k1"], 1), keys(&["k1"], 2));
        let sealed = sender.seal("mcp-mrtr:changes", "edit 01 tool disable deploy");
        assert_eq!(receiver.open("other:changes", &sealed), None, "bound to its channel");
        assert_eq!(receiver.open("mcp-mrtr:changes", &sealed).as_deref(), Some("edit 01 tool disable deploy"));
        assert_eq!(receiver.open("mcp-mrtr:changes", &sealed), None, "a replay");
        let later = sender.seal("mcp-mrtr:changes", "tools");
        assert_eq!(receiver.open("mcp-mrtr:changes", &later).as_deref(), Some("tools"));
        assert_eq!(receiver.check("mcp-mrtr:changes", &sealed), Err(Refusal::Replayed), "older than the last heard");
    }

    /// D5: a message sealed before an instance began to listen, replayed to it, is refused
    /// unless it comes from a sender the instance has heard since (then its count decides).
    #[test]
    fn a_message_sealed_before_an_instance_listened_is_refused_from_an_unheard_sender() {
        let sender = keys(&["k1"], 1);
        let stale = sender.seal("c", "edit 01 tool remove deploy");
        let mut late = keys(&["k1"], 2);
        Arc::get_mut(&mut late.inner).unwrap().born = now_ms() + millis(SKEW) + 5;
        assert_eq!(late.check("c", &stale), Err(Refusal::BeforeListening));
        let fresh = keys(&["k1"], 3);
        assert_eq!(fresh.check("c", &stale).ok(), Some("edit 01 tool remove deploy"), "within the skew: heard");
    }

    #[test]
    fn rotation_a_previous_key_still_opens_and_a_foreign_one_does_not() {
        let old = keys(&["k1"], 1);
        let rotated = keys(&["k2", "k1"], 2);
        assert!(rotated.open("c", &old.seal("c", "tools")).is_some());
        assert_eq!(old.check("c", &rotated.seal("c", "tools")), Err(Refusal::UnknownKey));
        let foreign = FanoutKeys::new(&KeyRing::new(StateKey::random()), 3);
        let forged = foreign.seal("c", "tools").replacen(foreign.inner.keys[0].0.as_str(), "k1", 1);
        assert_eq!(old.check("c", &forged), Err(Refusal::BadTag));
    }

    #[test]
    fn unsealed_tampered_and_stale_messages_are_refused() {
        let keys = keys(&["k1"], 1);
        for unsealed in ["edit 0000000000000001 tool disable test_simple_text", "", "sealed1 k1", "tools"] {
            assert_eq!(keys.check("c", unsealed), Err(Refusal::NotSealed), "{unsealed:?}");
        }
        let sealed = keys.seal("c", "edit 01 tool disable deploy");
        let tampered = sealed.replace("disable", "enable_");
        assert_eq!(keys.check("c", &tampered), Err(Refusal::BadTag));
        let (head, tail) = sealed.split_at(sealed.find(" 1 ").unwrap());
        assert_eq!(keys.check("c", &format!("{head} 2{}", &tail[2..])), Err(Refusal::BadTag), "its count is sealed");
        // A message sealed long ago, with the same key: built as `seal` builds one.
        let (id, key) = &keys.inner.keys[0];
        let head = format!("{VERSION} {id} {:016x} 9 {}", 7, now_ms() - 2 * 60_000);
        let tag = URL_SAFE_NO_PAD.encode(mac(key, "c", &head, "tools").finalize().into_bytes());
        assert_eq!(keys.check("c", &format!("{head} {tag} tools")), Err(Refusal::OutsideWindow));
        assert!(!format!("{keys:?}").contains(&format!("{:?}", key.as_slice())), "no secret in Debug");
    }
}
