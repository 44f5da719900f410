//! What the sealed `requestState` of a replayed call carries from one round to the next:
//! the wire format of the replay's memory, kept apart from the bookkeeping that fills it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the sealed `requestState` carries from one round to the next. Empty maps are left
/// out: every byte is sealed, sent, and read back each round.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Carried {
    #[serde(rename = "r")]
    pub(super) round: u32,
    /// Accepted answers, by key.
    #[serde(rename = "a", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) answers: BTreeMap<String, Stored>,
    /// The questions the closed round asked, by key: their digests.
    #[serde(rename = "q", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) asked: BTreeMap<String, String>,
    /// Results of `once` steps, by key.
    #[serde(rename = "o", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) once: BTreeMap<String, Value>,
    /// `once` steps a task run claimed and has not finished (tasks only): one still here
    /// when another run replays the task was cut mid-way by a crash or a stall.
    #[serde(rename = "s", default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(super) started: BTreeSet<String>,
    /// How often each key's question changed after being asked.
    #[serde(rename = "c", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) changes: BTreeMap<String, u32>,
    /// Who started the call (an opaque number for its client): the single-use guard counts
    /// the call's states against it, whoever presents them.
    #[serde(rename = "k", default, skip_serializing_if = "is_zero")]
    pub(super) owner: u32,
    /// Where the call started in its client's trace (the first round's `traceparent`), when it carried one: each later round's span, and each run
    /// of the task it became, records it, so one flow reads as one trace.
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    pub(super) origin: Option<String>,
    /// How many notifications (progress, logs) the handler sent in the rounds before: a
    /// replay reaches those again, in the same order, and sends only the ones after them.
    #[serde(rename = "n", default, skip_serializing_if = "is_zero")]
    pub(super) notified: u32,
    /// The last progress the client was sent, so progress never goes backwards across
    /// rounds.
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub(super) progress: Option<f64>,
    /// The state a handler that builds its rounds by hand carries to its next round.
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub(super) hand_state: Option<Value>,
    /// Whether that state is spent when it is first read (see `by_hand`).
    #[serde(rename = "x", default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) single: bool,
    /// The keys the closed round asked by hand: answered to `Ctx::input_response`, never
    /// to an `ask!`.
    #[serde(rename = "h", default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(super) by_hand: BTreeSet<String>,
    /// The call every state of it belongs to, drawn when its first state is sealed and
    /// inherited by every state after, siblings included: the single-use guard records
    /// steps per call, so no state of the call takes a step another took. `None` in a
    /// state sealed by a release before this one (see [`Carried::call_or`]).
    #[serde(rename = "i", default, skip_serializing_if = "Option::is_none")]
    call: Option<CallId>,
    /// When the call's first state was sealed (unix milliseconds): no state of the call
    /// opens past this plus its lifetime, and its claims are kept until that plus its horizon.
    #[serde(rename = "b", default, skip_serializing_if = "Option::is_none")]
    begun: Option<u64>,
    /// The call's lifetime, in milliseconds, as the server was configured when its first
    /// state was sealed: a later change of `StateConfig::call_lifetime` (a rolling deploy
    /// that raises it) moves only new calls, so a late state never opens past the claims
    /// made under the old one. Absent in states of earlier releases, which take today's.
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    lifetime: Option<u64>,
    /// How long past its lifetime a task made from the call may still take its steps, in
    /// milliseconds (the task TTL, when the tool may run as a task): the call's claims are
    /// kept that much longer, so a task never takes a step a round took before the call
    /// ended. Absent (zero) for a call that cannot become a task.
    #[serde(rename = "z", default, skip_serializing_if = "Option::is_none")]
    horizon: Option<u64>,
    /// When the state was sealed (unix milliseconds): a guard whose memory began later
    /// refuses it. Absent in states of earlier releases, which read it from the expiry.
    #[serde(rename = "w", default, skip_serializing_if = "Option::is_none")]
    sealed_at: Option<u64>,
}

#[allow(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero(owner: &u32) -> bool {
    *owner == 0
}

impl Carried {
    /// Who started the call the state belongs to (see [`Carried::stamp`]).
    pub(crate) fn owner(&self) -> u32 {
        self.owner
    }

    /// Where the call started in its client's trace, if it was traced.
    pub(crate) fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// The call this state belongs to. A state of an earlier release carries none: its
    /// call is named by `legacy`, and every state sealed after it inherits that name.
    pub(crate) fn call_or(&mut self, legacy: impl FnOnce() -> CallId) -> CallId {
        *self.call.get_or_insert_with(legacy)
    }

    /// The call this state belongs to, if it is named yet.
    pub(crate) fn call(&self) -> Option<CallId> {
        self.call
    }

    /// When this state was sealed, if it says (see `sealed_at`).
    pub(crate) fn sealed_at(&self) -> Option<SystemTime> {
        self.sealed_at.map(|millis| UNIX_EPOCH.checked_add(Duration::from_millis(millis)).unwrap_or_else(far))
    }

    /// When the call's states stop opening and when its claims may be forgotten, as its
    /// first state sealed them; `lifetime` and `horizon` stand in for what a state of an
    /// earlier release does not say. `None` for a state that does not say when its call
    /// began (its own expiry is then all there is).
    pub(crate) fn end(&self, lifetime: Duration, horizon: Duration) -> Option<CallEnd> {
        let begun = UNIX_EPOCH.checked_add(Duration::from_millis(self.begun?)).unwrap_or_else(far);
        let (lifetime, horizon) = match self.lifetime {
            Some(lifetime) => (Duration::from_millis(lifetime), Duration::from_millis(self.horizon.unwrap_or(0))),
            None => (lifetime, horizon),
        };
        Some(CallEnd::new(begun.checked_add(lifetime).unwrap_or_else(far), horizon))
    }

    /// Whether a state of this call was ever sealed for a client, which could present it
    /// (or a sibling) again: then every step of the call is claimed in the single-use
    /// guard, wherever it runs. A call that became a task in its first round never was.
    pub(crate) fn held_by_client(&self) -> bool {
        self.sealed_at.is_some() || self.call == Some(CallId::EARLIER_RELEASE)
    }

    /// The call's id, drawn now if it has none yet (a first round, or a task made from
    /// one): what a step's idempotency key is derived from.
    pub(crate) fn call_id(&mut self) -> Result<CallId, crate::base::error::Error> {
        if let Some(call) = self.call {
            return Ok(call);
        }
        let call = CallId::random()?;
        self.call = Some(call);
        Ok(call)
    }

    /// Readies the state to be sealed `now`: the call's id drawn if it has none, its start,
    /// `lifetime` and `horizon` if this is its first state, who started it (`owner`, asked
    /// only then: it costs a keyed hash, which a call that never seals a state never pays),
    /// and the moment it is sealed.
    pub(crate) fn stamp(
        &mut self,
        now: SystemTime,
        lifetime: Duration,
        horizon: Duration,
        owner: impl FnOnce() -> u32,
    ) -> Result<(), crate::base::error::Error> {
        let millis = unix_millis(now);
        if self.owner == 0 {
            self.owner = owner();
        }
        let call = self.call_id()?;
        // A call of an earlier release keeps saying so: none of its states takes a step.
        if self.begun.is_none() && call != CallId::EARLIER_RELEASE {
            self.begun = Some(millis);
            self.lifetime = Some(whole_millis(lifetime));
            self.horizon = (!horizon.is_zero()).then(|| whole_millis(horizon));
        }
        self.sealed_at = Some(millis);
        Ok(())
    }
}

/// The end of the year 9999, for ends past it (as sealed expiries are cut there).
fn far() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(253_402_300_799)
}

fn unix_millis(at: SystemTime) -> u64 {
    whole_millis(at.duration_since(UNIX_EPOCH).unwrap_or_default())
}

fn whole_millis(span: Duration) -> u64 {
    u64::try_from(span.as_millis()).unwrap_or(u64::MAX)
}

/// When a call ends: its states stop opening, and later its claims may be forgotten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallEnd {
    /// No state of the call opens from then on.
    pub(crate) opens_until: SystemTime,
    /// Every claim of the call's steps is kept until then: its end, plus the horizon of a
    /// task made from it (see [`Carried::end`]).
    pub(crate) kept_until: SystemTime,
}

impl CallEnd {
    /// The end of a call whose states stop opening at `opens_until`, and whose task, if it
    /// becomes one, may take steps for `horizon` more.
    pub(crate) fn new(opens_until: SystemTime, horizon: Duration) -> Self {
        Self { opens_until, kept_until: opens_until.checked_add(horizon).unwrap_or_else(far) }
    }
}

/// A call's identity: 128 random bits, sealed into every state of the call, never shown
/// to the client in clear.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CallId(pub(crate) [u8; 16]);

impl CallId {
    /// The call of a state sealed by a release before call ids: its steps were claimed
    /// per token, which the claims here cannot see, so none of its states (nor their
    /// siblings, which inherit this id) may take a step; the call starts over.
    pub(crate) const EARLIER_RELEASE: Self = Self([0; 16]);

    fn random() -> Result<Self, crate::base::error::Error> {
        let bytes = crate::base::random::bytes()
            .map_err(|e| crate::base::error::Error::internal(format!("no randomness for a call id: {e}")))?;
        Ok(Self(bytes))
    }
}

impl Serialize for CallId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&crate::base::hex::encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for CallId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        let bytes = (text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u128::from_str_radix(&text, 16).ok())
            .flatten()
            .ok_or_else(|| serde::de::Error::custom("a call id is 32 hex digits"))?;
        Ok(Self(bytes.to_be_bytes()))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Stored {
    #[serde(rename = "d")]
    pub(super) digest: String,
    #[serde(rename = "v")]
    pub(super) answer: Value,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Empty parts are left out of the sealed state, and a state written with them (by an
    /// earlier release) still reads the same.
    #[test]
    fn carried_leaves_out_what_is_empty_and_reads_it_either_way() {
        let mut carried = Carried { round: 1, ..Carried::default() };
        carried.asked.insert("k".into(), "d".into());
        let written = serde_json::to_value(&carried).unwrap();
        assert_eq!(written, json!({"r": 1, "q": {"k": "d"}}));
        let older = json!({"r": 1, "a": {}, "q": {"k": "d"}, "o": {}, "c": {}});
        assert_eq!(serde_json::from_value::<Carried>(older).unwrap(), carried);
        carried.answers.insert("a".into(), Stored { digest: "d".into(), answer: json!({"action": "cancel"}) });
        carried.once.insert("o".into(), json!(3));
        carried.changes.insert("k".into(), 1);
        let full = serde_json::to_vec(&carried).unwrap();
        assert_eq!(serde_json::from_slice::<Carried>(&full).unwrap(), carried);
    }

    /// The call id is drawn once, when the first state is sealed, and kept by every state
    /// after; it reads back as it was written.
    #[test]
    fn a_call_keeps_the_id_its_first_state_drew() {
        let hour = Duration::from_secs(3600);
        let mut carried = Carried::default();
        carried.stamp(SystemTime::now(), hour, Duration::ZERO, || 1).unwrap();
        let (drawn, begun) = (carried.call.unwrap(), carried.begun);
        carried.stamp(SystemTime::now() + Duration::from_secs(5), hour, Duration::ZERO, || 1).unwrap();
        assert_eq!((carried.call, carried.begun), (Some(drawn), begun));
        let read: Carried = serde_json::from_slice(&serde_json::to_vec(&carried).unwrap()).unwrap();
        assert_eq!(read.call, Some(drawn));
        assert!(read.sealed_at.is_some());
        let mut legacy = Carried::default();
        assert_eq!(legacy.call_or(|| CallId([7; 16])), CallId([7; 16]));
        assert_eq!(legacy.call_or(|| CallId([8; 16])), CallId([7; 16]), "named once, then inherited");
        assert!(serde_json::from_value::<Carried>(json!({"r": 1, "i": "00"})).is_err());
    }

    /// A call's end is sealed with its start (the audit's N1): a server configured with
    /// another lifetime or task horizon later still ends the call where its first state
    /// said; a state of an earlier release, which says only when it began, takes today's.
    #[test]
    fn a_calls_end_is_the_one_its_first_state_sealed() {
        let (minute, hour) = (Duration::from_secs(60), Duration::from_secs(3600));
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let mut carried = Carried::default();
        assert_eq!(carried.end(hour, hour), None, "not begun");
        carried.stamp(now, minute, hour, || 1).unwrap();
        let sealed = CallEnd { opens_until: now + minute, kept_until: now + minute + hour };
        assert_eq!(carried.end(hour, Duration::ZERO), Some(sealed), "the sealed lifetime, not today's");
        carried.stamp(now + Duration::from_secs(30), hour, Duration::ZERO, || 1).unwrap();
        assert_eq!(carried.end(hour, Duration::ZERO), Some(sealed), "a sibling keeps the first state's end");
        let written = serde_json::to_value(&carried).unwrap();
        assert_eq!((written["l"].clone(), written["z"].clone()), (json!(60_000), json!(3_600_000)));

        let earlier: Carried = serde_json::from_value(json!({"r": 1, "b": 1_000_000})).unwrap();
        assert_eq!(earlier.end(hour, minute), Some(CallEnd::new(now + hour, minute)));
        let mut no_task = Carried::default();
        no_task.stamp(now, minute, Duration::ZERO, || 1).unwrap();
        assert!(serde_json::to_value(&no_task).unwrap().get("z").is_none(), "no horizon, no bytes");
    }

    /// Whether clients hold states of a call: only once one was sealed (or it is a call of
    /// an earlier release, which must take no step anywhere).
    #[test]
    fn a_call_is_held_by_a_client_once_a_state_of_it_is_sealed() {
        let mut carried = Carried::default();
        carried.call_id().unwrap();
        assert!(!carried.held_by_client(), "an id drawn for a step key, or a task, is not a state");
        carried.stamp(SystemTime::now(), Duration::from_secs(60), Duration::ZERO, || 1).unwrap();
        assert!(carried.held_by_client());
        let mut earlier = Carried::default();
        earlier.call_or(|| CallId::EARLIER_RELEASE);
        assert!(earlier.held_by_client());
        earlier.stamp(SystemTime::now(), Duration::from_secs(60), Duration::ZERO, || 1).unwrap();
        assert_eq!(earlier.begun, None, "a call of an earlier release never says it began");
    }
}
