use mcp_mrtr::prelude::*;

struct Db;

#[derive(Clone)]
struct Tenant(String);

/// Takes state, an extension, the caller and the context, in any order.
#[tool]
async fn report(
    ctx: &Ctx,
    State(_db): State<Db>,
    city: String,
    Extension(tenant): Extension<Tenant>,
    caller: Option<Caller>,
) -> Result<String, ToolError> {
    let _ = ctx.request_id();
    Ok(format!("{city} {} {:?}", tenant.0, caller.map(|c| c.id().to_owned())))
}

/// A resource template with state.
#[resource(uri = "note://{title}")]
async fn note(title: String, State(_db): State<Db>) -> Result<ResourceContents, ToolError> {
    Ok(ResourceContents::text(format!("note://{title}"), "text/plain", title))
}

fn main() {
    let _ = Server::new("s", "1").with_state(Db).tool(report).resource(note);
}
