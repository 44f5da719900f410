//! The reports function's own code: its tool and the server that serves it, without the
//! Redis wiring of `reports` around it. A file of its own so that the Lambda cold-start
//! bench (`examples/bench/lambda`) builds this very function with the `lambda` feature
//! alone: it includes the file, and gives it a `receipt` as `reports` does.

use std::time::Duration;

use mcp_mrtr::prelude::*;

use super::receipt;

/// What a report covers.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Sections {
    /// Include the month's cloud costs.
    costs: bool,
    /// Include the month's incidents.
    incidents: bool,
}

/// Whether to publish a compiled report.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Publish {
    /// Send it to the team now.
    publish: bool,
}

/// A compiled report, and the receipts of the steps taken for it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    team: String,
    month: String,
    sections: Vec<String>,
    /// The receipt of the report number's reservation (taken once per call).
    reserved: String,
    /// The receipt of its publication, when it was published (taken once).
    published: Option<String>,
}

/// Compiles a team's monthly report: asks what it covers, reserves a report number,
/// compiles it (as a task, on a worker, for clients that take tasks), asks whether to
/// publish it, and publishes it.
#[tool(task = "optional")]
pub async fn monthly_report(
    ctx: &Ctx,
    State(outbox): State<Outbox>,
    /// The team, e.g. "payments".
    team: String,
    /// The month, e.g. "2026-11".
    month: String,
) -> Result<Json<Report>, ToolError> {
    let sections: Sections = ask!(elicit format!("What should the {month} report for {team} cover?"))?;
    let reserved = once!(receipt("reserved"));
    ctx.continue_as_task().await;
    ctx.progress(1.0).of(3.0).message(format!("{reserved}: compiling")).await;
    // Compiling: a real report would query the month's data here.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sections: Vec<String> = [("costs", sections.costs), ("incidents", sections.incidents)]
        .into_iter()
        .filter(|(_, wanted)| *wanted)
        .map(|(name, _)| name.to_owned())
        .collect();
    ctx.progress(2.0).of(3.0).message(format!("{reserved}: compiled {}", sections.join(", "))).await;
    let publish: Publish = ask!(elicit format!("The {month} report for {team} is ready. Publish it?"))?;
    let published = if publish.publish {
        let key = ctx.step_key("published")?;
        Some(once!(send(&outbox, &key, &format!("the {month} report for {team}")).await?))
    } else {
        None
    };
    Ok(Json(Report { team, month, sections, reserved, published }))
}

/// How long the mail service takes to confirm a sending.
const SENDING: Duration = Duration::from_millis(500);

/// Where sendings are recorded, outside the process: a file a line per sending, if any.
#[derive(Clone, Debug, Default)]
pub struct Outbox(pub Option<std::path::PathBuf>);

/// Sends `what` to the team, as the sending `key`: hands it to the mail service (and the
/// outbox), then waits for the service to confirm. The receipt.
async fn send(outbox: &Outbox, key: &str, what: &str) -> Result<String, ToolError> {
    let receipt = receipt("published");
    if let Some(outbox) = outbox.0.clone() {
        let line = format!("{key} {receipt} {what}\n");
        let append = move || {
            use std::io::Write as _;
            std::fs::OpenOptions::new().create(true).append(true).open(outbox)?.write_all(line.as_bytes())
        };
        tokio::task::spawn_blocking(append).await.map_err(std::io::Error::other)??;
    }
    tokio::time::sleep(SENDING).await;
    Ok(receipt)
}

/// The server, as every container and worker builds it: its tool, sending to the outbox
/// `REPORTS_OUTBOX` names, if it names one.
pub fn server() -> Server {
    sending_to(Outbox(std::env::var_os("REPORTS_OUTBOX").map(Into::into)))
}

/// The server, sending to `outbox`.
pub fn sending_to(outbox: Outbox) -> Server {
    Server::new("reports", env!("CARGO_PKG_VERSION")).tool(monthly_report).with_state(outbox)
}
