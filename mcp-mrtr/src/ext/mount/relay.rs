//! An upstream's notifications for a request (progress, log messages), sent on as the
//! request's own.

use serde::Deserialize;
use serde_json::Value;

use crate::mrtr::context::Ctx;
use crate::protocol::LoggingLevel;

/// How many of the upstream's notifications may wait to be relayed.
pub(super) const RELAYED_NOTICES: usize = 64;

/// One of the upstream's notifications, sent on as this request's own: progress, or a log
/// message (at the caller's level: `ctx.log` filters).
pub(super) async fn relay_one(ctx: &Ctx, note: &Value) {
    let params = &note["params"];
    match note["method"].as_str() {
        Some("notifications/progress") => {
            let Some(update) = crate::client::update_of(note) else { return };
            let mut report = ctx.progress(update.progress);
            if let Some(total) = update.total {
                report = report.of(total);
            }
            if let Some(message) = update.message {
                report = report.message(message);
            }
            report.await;
        }
        Some("notifications/message") => {
            let Ok(level) = LoggingLevel::deserialize(&params["level"]) else { return };
            ctx.log(level, params["logger"].as_str(), &params["data"]).await;
        }
        _ => {}
    }
}
