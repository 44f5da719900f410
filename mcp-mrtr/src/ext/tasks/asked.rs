//! [`Asked`]: the records of tasks that were waiting for answers when this instance last
//! read them, for the `tasks/update` that answers them to start its write from.
//!
//! A client reads a task (`tasks/get`), sees its questions and answers them
//! (`tasks/update`), often through the same instance. The update's write needs the record
//! as it stands; with a shared store, reading it again is a round trip. The record the
//! poll read is a guess that saves it: the compare-and-set refuses a stale one and the
//! write falls back to a read (see `write`), so the outcome is still decided on what the
//! store holds. Only the owner and the tool are checked on the guess, and neither ever
//! changes.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use super::store::{TaskRecord, TaskStatus};

/// Tasks remembered at once: enough for the questions a server's clients answer at the
/// same moment; beyond it the oldest is forgotten, and its update reads the store.
const CAPACITY: usize = 64;

/// Records of tasks that were `input_required` when last read here, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Asked(Mutex<VecDeque<TaskRecord>>);

impl Asked {
    /// Remembers `record` if it waits for answers; forgets what this instance knew of its
    /// task otherwise.
    pub(crate) fn saw(&self, record: &TaskRecord) {
        let mut records = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        records.retain(|kept| kept.id() != record.id());
        if record.status() == TaskStatus::InputRequired {
            if records.len() == CAPACITY {
                records.pop_front();
            }
            records.push_back(record.clone());
        }
    }

    /// The record of task `id` as last read here, if it was waiting for answers; taken, so
    /// it guesses for one write only.
    pub(crate) fn take(&self, id: &str) -> Option<TaskRecord> {
        let mut records = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let at = records.iter().position(|kept| kept.id() == id)?;
        records.remove(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::tasks::store::tests::record;

    fn asking(id: &str) -> TaskRecord {
        let mut record = record(id, None);
        record.status = TaskStatus::InputRequired;
        record
    }

    #[test]
    fn only_tasks_waiting_for_answers_are_kept_and_each_guesses_once() {
        let asked = Asked::default();
        asked.saw(&asking("a"));
        asked.saw(&record("working", None));
        assert!(asked.take("working").is_none(), "a working task is no guess for an answer");
        assert_eq!(asked.take("a").map(|r| r.id().to_owned()).as_deref(), Some("a"));
        assert!(asked.take("a").is_none(), "taken");

        // A later read that finds it answered forgets the earlier one.
        asked.saw(&asking("b"));
        asked.saw(&record("b", None));
        assert!(asked.take("b").is_none());
    }

    #[test]
    fn past_capacity_the_oldest_is_forgotten() {
        let asked = Asked::default();
        for n in 0..=CAPACITY {
            asked.saw(&asking(&n.to_string()));
        }
        assert!(asked.take("0").is_none());
        assert!(asked.take("1").is_some() && asked.take(&CAPACITY.to_string()).is_some());
    }
}
