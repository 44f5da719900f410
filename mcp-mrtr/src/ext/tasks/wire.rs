//! The wire shapes of tasks: the flat `CreateTaskResult` a `tools/call` answers with,
//! and the detailed task `tasks/get` returns. Neither ever carries `requestState`.

use serde_json::{json, Value};

use super::store::{TaskRecord, TaskStatus};
use super::POLL_INTERVAL_MS;
use crate::protocol::JsonObject;

/// The fields every task shape has (`Task`): id, status, times, TTL and poll interval.
pub(super) fn task(record: &TaskRecord) -> JsonObject {
    let mut task = JsonObject::new();
    task.insert("taskId".into(), json!(record.id()));
    task.insert("status".into(), json!(record.status));
    if let Some(message) = &record.status_message {
        task.insert("statusMessage".into(), json!(message));
    }
    task.insert("createdAt".into(), json!(iso8601(record.created_at_ms)));
    task.insert("lastUpdatedAt".into(), json!(iso8601(record.updated_at_ms)));
    task.insert("ttlMs".into(), record.ttl_ms.map_or(Value::Null, |ttl| json!(ttl)));
    task.insert("pollIntervalMs".into(), json!(POLL_INTERVAL_MS));
    task
}

/// `DetailedTask`: the base fields plus what the status calls for — every open question
/// while `input_required`, the tool's result when `completed`, the error when `failed`.
pub(super) fn detailed(record: &TaskRecord) -> JsonObject {
    let mut task = task(record);
    match record.status {
        TaskStatus::InputRequired => {
            task.insert("inputRequests".into(), json!(record.input_requests));
        }
        TaskStatus::Completed => {
            if let Some(result) = &record.result {
                task.insert("result".into(), result.clone());
            }
        }
        TaskStatus::Failed => {
            if let Some(error) = &record.error {
                task.insert("error".into(), json!(error));
            }
        }
        TaskStatus::Working | TaskStatus::Cancelled => {}
    }
    task
}

/// Unix milliseconds as an ISO 8601 UTC timestamp, `2026-07-28T12:34:56.789Z`.
pub(super) fn iso8601(unix_ms: u64) -> String {
    let (secs, millis) = (unix_ms / 1000, unix_ms % 1000);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for non-negative days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn formats_utc_timestamps() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_785_242_096_789), "2026-07-28T12:34:56.789Z");
    }
}
