//! A deploy tool with an interface (MCP Apps, issue 51): the model asks to deploy a version
//! of a service; a person approves the change in an app that shows it (an ask rendered by
//! an app, SEP-3118), or in a plain form where the host renders no apps; the roll-out runs
//! exactly once; the result is shown in a second app with a refresh button.
//!
//! - `deploy` (model): plans, asks for approval with the `ui://deploy/review` app, rolls
//!   out once (`once!`), and shows its result in `ui://deploy/status`.
//! - `plan_deploy` (app only): the change a deploy would make, which the review app shows.
//! - `service_status` (app only): what runs now, for the status app's refresh button.
//!
//! The apps are plain HTML files beside this one, embedded at compile time. They talk to
//! the host over `postMessage` with no library, so they need no network (their CSP allows
//! none).

use std::collections::BTreeMap;
use std::sync::Mutex;

use mcp_mrtr::apps::App;
use mcp_mrtr::prelude::*;

/// The review app: shows the change and answers the approval.
pub const REVIEW: &str = "ui://deploy/review";
/// The status app: shows a deploy's result and what runs now.
pub const STATUS: &str = "ui://deploy/status";

/// The services this example deploys, in memory: a real server keeps them in its
/// deployment system and reaches it from the tools.
pub struct Fleet {
    services: Mutex<BTreeMap<String, Service>>,
}

#[derive(Clone)]
struct Service {
    version: String,
    replicas: u32,
    rollouts: u32,
}

impl Default for Fleet {
    fn default() -> Self {
        let service = |version: &str, replicas| Service { version: version.into(), replicas, rollouts: 0 };
        let services = [("checkout", service("2.3.0", 3)), ("search", service("1.9.4", 2))];
        Self { services: Mutex::new(services.into_iter().map(|(name, s)| (name.to_owned(), s)).collect()) }
    }
}

impl Fleet {
    fn service(&self, name: &str) -> Result<Service, ToolError> {
        let services = self.services.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        services.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = services.keys().map(String::as_str).collect();
            ToolError::new(format!("no service named {name:?}; the services are {}", known.join(", ")))
        })
    }

    /// Rolls `service` out at `version`: the step a retry must never repeat.
    fn roll_out(&self, name: &str, version: &str) -> Result<u32, ToolError> {
        let mut services = self.services.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let service = services.get_mut(name).ok_or_else(|| ToolError::new(format!("no service named {name:?}")))?;
        version.clone_into(&mut service.version);
        service.rollouts += 1;
        Ok(service.rollouts)
    }
}

/// The change a deploy makes.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// The service.
    pub service: String,
    /// The version running now.
    pub from: String,
    /// The version it would run.
    pub to: String,
    /// Replicas restarted, one at a time.
    pub replicas: u32,
    /// What changes, one line each.
    pub changes: Vec<String>,
}

fn plan(fleet: &Fleet, service: &str, version: &str) -> Result<Plan, ToolError> {
    let running = fleet.service(service)?;
    if running.version == version {
        return Err(ToolError::new(format!("{service} runs {version} already")));
    }
    Ok(Plan {
        service: service.to_owned(),
        from: running.version.clone(),
        to: version.to_owned(),
        replicas: running.replicas,
        changes: vec![
            format!("image {service}:{} → {service}:{version}", running.version),
            format!("{} replicas restarted one at a time", running.replicas),
            "health check /healthz must pass before the next replica".to_owned(),
        ],
    })
}

/// The approval the review app (or the form) gives.
#[derive(Deserialize, JsonSchema)]
pub struct Approval {
    /// Go ahead with the deploy.
    pub approve: bool,
}

/// What a deploy did.
#[derive(Serialize, JsonSchema)]
pub struct Deployed {
    /// The service.
    pub service: String,
    /// The version it ran before.
    pub from: String,
    /// The version it runs now.
    pub to: String,
    /// The roll-out's number for this service.
    pub rollout: u32,
}

/// Deploys a version of a service to production, once a person approves the change.
#[tool(app = "ui://deploy/status", destructive)]
async fn deploy(fleet: State<Fleet>, service: String, version: String) -> Result<Json<Deployed>, ToolError> {
    // Planned once: later rounds read the plan the person approves from the request state,
    // and a retry after the roll-out is not told the service "runs that version already".
    let plan = once!(plan(&fleet, &service, &version)?);
    let question = format!("Deploy {service} {version} to production (now {}, {} replicas)?", plan.from, plan.replicas);
    // Fresh: a client cannot approve before the person has seen the question.
    match ask!(key = "approval", fresh, elicit question, app = REVIEW, app_context = &plan) {
        Ok(Approval { approve: true }) => {}
        Ok(_) | Err(Declined::Decline) => return Err(ToolError::new(format!("{service} {version} was not approved"))),
        Err(Declined::Cancel) => return Err(ToolError::cancelled()),
    }
    let rollout = once!(fleet.roll_out(&service, &version)?);
    Ok(Json(Deployed { service, from: plan.from, to: version, rollout }))
}

/// The change deploying `version` of `service` would make: for the review app.
#[tool(visibility = "app", read_only)]
async fn plan_deploy(fleet: State<Fleet>, service: String, version: String) -> Result<Json<Plan>, ToolError> {
    plan(&fleet, &service, &version).map(Json)
}

/// What runs now.
#[derive(Serialize, JsonSchema)]
pub struct Status {
    /// The service.
    pub service: String,
    /// The version it runs.
    pub version: String,
    /// Its replicas, all healthy in this example.
    pub healthy: u32,
    /// Roll-outs so far.
    pub rollouts: u32,
}

/// What `service` runs now: for the status app's refresh button.
#[tool(visibility = "app", read_only)]
async fn service_status(fleet: State<Fleet>, service: String) -> Result<Json<Status>, ToolError> {
    let running = fleet.service(&service)?;
    Ok(Json(Status { service, version: running.version, healthy: running.replicas, rollouts: running.rollouts }))
}

/// The deploy server: its apps, its tools, its fleet.
pub fn server() -> Server {
    Server::new("deploy", env!("CARGO_PKG_VERSION"))
        .with_state(Fleet::default())
        .resource(
            App::html(REVIEW, include_str!("review.html"))
                .title("Review a deploy")
                .description("Shows the change a deploy makes and asks for approval")
                .prefers_border(true),
        )
        .resource(
            App::html(STATUS, include_str!("status.html"))
                .title("Deploy status")
                .description("Shows a deploy's result and what the service runs now")
                .prefers_border(true),
        )
        .tools([deploy, plan_deploy, service_status])
}
