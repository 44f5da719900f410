//! `notes`: a team-notes server behind bearer auth. Every user has their own notes in
//! one store the handlers share (`State<Notes>`); writing over a note asks first,
//! deleting one asks the user to type its title, and a summary comes from the client's
//! model. Each note is also a `note://{title}` resource, and `review_note` a prompt.

pub mod auth;

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use mcp_mrtr::prelude::*;

/// Every user's notes, by title: the store all handlers share.
#[derive(Debug, Default)]
pub struct Notes {
    by_user: Mutex<HashMap<String, BTreeMap<String, String>>>,
}

impl Notes {
    /// `user`'s note called `title`.
    pub fn get(&self, user: &str, title: &str) -> Option<String> {
        self.with(user, |notes| notes.get(title).cloned())
    }

    /// Writes `user`'s note, replacing one of the same title.
    pub fn put(&self, user: &str, title: &str, body: &str) {
        self.with(user, |notes| notes.insert(title.to_owned(), body.to_owned()));
    }

    fn with<T>(&self, user: &str, f: impl FnOnce(&mut BTreeMap<String, String>) -> T) -> T {
        // A panic elsewhere while holding the lock leaves the map whole: keep serving it.
        let mut users = self.by_user.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(users.entry(user.to_owned()).or_default())
    }
}

/// Whether to replace the existing note.
#[derive(Deserialize, JsonSchema)]
pub struct Overwrite {
    /// Replace it.
    overwrite: bool,
}

/// The title, typed again to confirm.
#[derive(Deserialize, JsonSchema)]
pub struct TypedTitle {
    /// The note's exact title.
    title: String,
}

/// Lists your notes' titles.
#[tool(read_only)]
pub async fn list_notes(State(notes): State<Notes>, caller: Caller) -> Result<String, ToolError> {
    let titles = notes.with(caller.id(), |notes| notes.keys().cloned().collect::<Vec<_>>());
    Ok(if titles.is_empty() { "You have no notes yet.".into() } else { titles.join("\n") })
}

/// Writes a note; asks before replacing one with the same title.
#[tool(scopes = ["notes:write"])]
pub async fn write_note(
    State(notes): State<Notes>,
    caller: Caller,
    /// The note's title.
    title: String,
    /// The note's text.
    body: String,
) -> Result<String, ToolError> {
    if notes.get(caller.id(), &title).is_some() {
        match ask!(key = "overwrite", elicit format!("You already have a note called \"{title}\". Replace it?")) {
            Ok(Overwrite { overwrite: true }) => {}
            Ok(_) | Err(Declined::Decline) => return Ok(format!("Kept your existing \"{title}\".")),
            Err(Declined::Cancel) => return Err(ToolError::cancelled()),
        }
    }
    notes.put(caller.id(), &title, &body);
    Ok(format!("Saved \"{title}\"."))
}

/// Deletes a note once you type its title to confirm.
#[tool(scopes = ["notes:write"], destructive)]
pub async fn delete_note(
    State(notes): State<Notes>,
    caller: Caller,
    /// The note to delete.
    title: String,
) -> Result<String, ToolError> {
    if notes.get(caller.id(), &title).is_none() {
        return Err(ToolError::new(format!("You have no note called \"{title}\".")));
    }
    let typed: TypedTitle = ask!(elicit format!("This deletes \"{title}\" for good. Type its title to confirm."))?;
    if typed.title != title {
        return Ok(format!("Not deleted: \"{}\" is not the note's title.", typed.title));
    }
    notes.with(caller.id(), |notes| notes.remove(&title));
    Ok(format!("Deleted \"{title}\"."))
}

/// Summarizes your notes with the client's model.
#[tool(read_only)]
pub async fn summarize_notes(State(notes): State<Notes>, caller: Caller) -> Result<String, ToolError> {
    let all = notes.with(caller.id(), |notes| notes.iter().map(|(t, b)| format!("# {t}\n{b}")).collect::<Vec<_>>());
    if all.is_empty() {
        return Ok("You have no notes to summarize.".into());
    }
    let prompt = format!("Summarize these notes in three lines:\n\n{}", all.join("\n\n"));
    let summary = ask!(sample prompt, max_tokens = 300)?;
    Ok(summary.text())
}

/// One of your notes.
#[resource(uri = "note://{title}", mime_type = "text/markdown")]
pub async fn note(
    State(notes): State<Notes>,
    caller: Caller,
    title: String,
) -> Result<Vec<ResourceContents>, ToolError> {
    // No contents is how a resource says "not found".
    let body = notes.get(caller.id(), &title);
    Ok(body.map(|body| ResourceContents::text(format!("note://{title}"), "text/markdown", body)).into_iter().collect())
}

/// Asks the model to review one of your notes.
#[prompt]
pub async fn review_note(
    State(notes): State<Notes>,
    caller: Caller,
    /// The note to review.
    title: String,
) -> Result<Vec<PromptMessage>, ToolError> {
    let body = notes.get(caller.id(), &title).ok_or_else(|| ToolError::new(format!("no note called \"{title}\"")))?;
    Ok(vec![PromptMessage::user(format!("Review my note \"{title}\" for clarity and gaps:\n\n{body}"))])
}

/// The notes server, with an empty store.
pub fn server() -> Server {
    Server::new("mcp-mrtr-notes", env!("CARGO_PKG_VERSION"))
        .instructions("Your personal notes: list, write, delete and summarize them.")
        .with_state(Notes::default())
        .tools(tools![list_notes, write_note, delete_note, summarize_notes])
        .resource(note)
        .prompt(review_note)
}
