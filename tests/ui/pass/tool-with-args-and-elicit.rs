//! A tool with arguments (one optional, one `mut`) that elicits a form.
use mcp_mrtr::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Books a trip after the user confirms.
#[tool(title = "Book a trip", idempotent)]
async fn book(city: String, mut nights: Option<u8>) -> Result<String, ToolError> {
    let nights = nights.get_or_insert(1);
    let confirm: Confirm = ask!(elicit format!("Book {nights} nights in {city}?"))?;
    Ok(format!("booked: {}", confirm.ok))
}

fn main() {
    let _server = Server::new("ui", "0.0.0").tool(book);
}
