//! What the sealed `requestState` of a replayed call carries from one round to the next:
//! the wire format of the replay's memory, kept apart from the bookkeeping that fills it.

use std::collections::{BTreeMap, BTreeSet};

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
    pub(super) app: Option<Value>,
    /// Whether that state is spent when it is first read (see `by_hand`).
    #[serde(rename = "x", default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) single: bool,
    /// The keys the closed round asked by hand: answered to `Ctx::input_response`, never
    /// to an `ask!`.
    #[serde(rename = "h", default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(super) by_hand: BTreeSet<String>,
}

#[allow(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero(owner: &u32) -> bool {
    *owner == 0
}

impl Carried {
    /// Who started the call the state belongs to (see [`Replay::new_call`]).
    pub(crate) fn owner(&self) -> u32 {
        self.owner
    }

    /// Where the call started in its client's trace, if it was traced.
    pub(crate) fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
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
}
