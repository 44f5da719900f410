//! A handler whose body is one line compiles without a lint on the user's braces
//! (`unused_braces` fired on `{ Ok(..) }` when the body was pasted as a block).
#![deny(unused_braces)]

use mcp_mrtr::prelude::*;

/// Says hi.
#[rustfmt::skip]
#[tool]
async fn hi() -> Result<String, ToolError> { Ok("hi".into()) }

/// Says hi to someone, with a parameter resolved before the body.
#[rustfmt::skip]
#[tool]
async fn hi_to(ctx: &Ctx, name: String) -> Result<String, ToolError> { Ok(format!("hi {name} {}", ctx.task_id().is_none())) }

fn main() {
    let _ = Server::new("one-line", "0").tool(hi).tool(hi_to);
}
