//! Skills (SEP-2640, the `io.modelcontextprotocol/skills` extension): folders of
//! instructions and supporting files a host loads into its model's context.
//!
//! [`Skills`] serves them from folders (`SKILL.md` plus supporting files, as agents
//! write them) and from code ([`Skill`]). [`Server::skills`](crate::Server::skills)
//! declares the extension and plugs it in through the server's own seams: the methods
//! `skills/list`, `skills/get` and (with [`directory_read`](Skills::directory_read))
//! `resources/directory/read` are [`MethodRoute`]s, every `SKILL.md` is a listed
//! resource, and every file is readable through `resources/read` (the template
//! `skill://{+path}`). So the same limits, scopes, visibility and listeners apply.
//!
//! Everything served comes from one in-memory snapshot (`catalog`): manifests with
//! `sha256:` digests and sizes, the directory view and the bytes, built together and
//! swapped whole by [`Skills::refresh`]. Reading a folder is a security boundary: see
//! `folder`.
//!
//! ```no_run
//! use mcp_mrtr::{Server, skills::Skills};
//!
//! # fn main() -> std::io::Result<()> {
//! let skills = Skills::from_dir("skills")?;
//! let server = Server::new("docs", "1.0.0").skills(skills.clone());
//! // Later, when the folder changed: listeners hear of the skills that came or went.
//! skills.refresh()?;
//! # let _ = server;
//! # Ok(())
//! # }
//! ```

mod catalog;
mod folder;
mod frontmatter;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Value};

use self::catalog::{Catalog, SCHEME};
use self::folder::Found;
use crate::base::error::Error;
use crate::base::error::ToolError;
use crate::mrtr::context::Ctx;
use crate::mrtr::context::Readable;
use crate::protocol::{CacheHints, Resource, ResourceTemplate};
use crate::routes::catalog::{CatalogHandle, WeakHandle};
use crate::routes::handler::{MethodRoute, ResourceRoute};

/// The extension's id, in `capabilities.extensions`.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// Skills per `skills/list` page.
const PAGE: usize = 100;

/// The skills a server serves: from folders and from code, as one snapshot. Cheap to
/// clone; clones share the snapshot, so keep one to [`refresh`](Self::refresh) it after
/// giving another to [`Server::skills`](crate::Server::skills).
///
/// A skill that breaks a rule of the extension (a `SKILL.md` without valid frontmatter,
/// a name that is not its directory's, a symlink, more than 512 files or 16 MiB) is left
/// out and logged at `warn`, never served half.
///
/// ```
/// use mcp_mrtr::testing::TestClient;
/// use mcp_mrtr::{Server, skills::Skill, skills::Skills};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let refunds = Skill::new("refunds", "---\nname: refunds\ndescription: Issue refunds.\n---\n\nWithin 30 days.\n");
/// let client = TestClient::new(Server::new("support", "1.0.0").skills(Skills::new().skill(refunds)));
/// // Each `SKILL.md` is a listed resource, read like any other.
/// assert_eq!(client.list_resources().await.unwrap()[0].uri, "skill://refunds/SKILL.md");
/// let read = client.read_resource("skill://refunds/SKILL.md").start().await;
/// assert!(read.complete().unwrap()["contents"][0]["text"].as_str().unwrap().contains("30 days"));
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Skills {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    config: Mutex<Config>,
    snapshot: RwLock<Arc<Catalog>>,
    /// The catalog the `SKILL.md` resources are registered in, once served. Weak: that
    /// catalog's routes hold these skills, and a strong handle here made a cycle that kept
    /// every server with skills alive after it was dropped (found by LeakSanitizer through
    /// the `stdio` fuzz target). A refresh after the server is gone just swaps the snapshot.
    handle: OnceLock<WeakHandle>,
}

#[derive(Clone, Default)]
struct Config {
    folders: Vec<PathBuf>,
    code: Vec<Skill>,
    no_directory_read: bool,
    cache: CacheHints,
}

/// A skill built in code: its path below `skill://` (the last segment is its name) and
/// its files, `SKILL.md` first.
///
/// ```
/// use mcp_mrtr::skills::Skill;
///
/// let skill = Skill::new("acme/refunds", "---\nname: refunds\ndescription: Issue refunds by the book.\n---\n\nSee `POLICY.md`.\n")
///     .file("POLICY.md", "# Policy\n\nRefunds within 30 days.\n");
/// # let _ = skill;
/// ```
#[derive(Clone)]
pub struct Skill {
    path: String,
    files: BTreeMap<String, Vec<u8>>,
}

impl Skill {
    /// A skill at `path` (such as `acme/billing/refunds`) whose `SKILL.md` is `skill_md`.
    pub fn new(path: impl Into<String>, skill_md: impl Into<Vec<u8>>) -> Self {
        Self { path: path.into(), files: BTreeMap::from([("SKILL.md".to_owned(), skill_md.into())]) }
    }

    /// Adds a supporting file at `path` below the skill (`references/GUIDE.md`).
    pub fn file(mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.insert(path.into(), bytes.into());
        self
    }
}

impl Skills {
    /// No skills yet: add folders with [`dir`](Self::dir) and code skills with [`skill`](Self::skill).
    pub fn new() -> Self {
        Self::default()
    }

    /// The skills under the folder `path`: each directory holding a `SKILL.md` is one,
    /// served at `skill://` followed by its path below the folder.
    ///
    /// # Errors
    ///
    /// When `path` is not a readable directory.
    pub fn from_dir(path: impl AsRef<Path>) -> io::Result<Self> {
        Self::new().dir(path)
    }

    /// Adds the skills under the folder `path` (see [`from_dir`](Self::from_dir)).
    ///
    /// # Errors
    ///
    /// When `path` is not a readable directory.
    pub fn dir(self, path: impl AsRef<Path>) -> io::Result<Self> {
        self.config().folders.push(path.as_ref().to_owned());
        self.rebuild()?;
        Ok(self)
    }

    /// Adds a skill built in code. One that breaks a rule is left out and logged.
    pub fn skill(self, skill: Skill) -> Self {
        self.config().code.push(skill);
        // Code skills alone cannot fail to read; a folder already read reads again.
        if let Err(error) = self.rebuild() {
            tracing::warn!(%error, "could not read a skills folder again");
        }
        self
    }

    /// Whether `resources/directory/read` is served (default: yes), so hosts can browse
    /// each skill's directories.
    pub fn directory_read(self, enabled: bool) -> Self {
        self.config().no_directory_read = !enabled;
        self
    }

    /// The caching hints of `skills/list` and `skills/get` (default `ttlMs: 0`,
    /// `private`: hosts check again each time). Lists that vary by caller must stay private.
    pub fn cache_hints(self, hints: CacheHints) -> Self {
        self.config().cache = hints;
        self
    }

    /// Reads the folders again and swaps the new snapshot in whole. Requests already
    /// running keep the one they started with; listeners hear `resources/list_changed`
    /// when skills came or went and `resources/updated` for a `SKILL.md` whose skill
    /// changed. Returns whether anything changed.
    ///
    /// # Errors
    ///
    /// When a folder is no longer a readable directory; the old snapshot stays served.
    pub fn refresh(&self) -> io::Result<bool> {
        self.rebuild()
    }

    fn config(&self) -> std::sync::MutexGuard<'_, Config> {
        self.shared.config.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn snapshot(&self) -> Arc<Catalog> {
        self.shared.snapshot.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn rebuild(&self) -> io::Result<bool> {
        let config = self.config().clone();
        let mut found = Vec::new();
        for folder in &config.folders {
            found.extend(folder::read(folder)?);
        }
        found.extend(config.code.into_iter().map(|skill| Found { path: skill.path, files: skill.files }));
        let new = Arc::new(Catalog::build(found));
        let old =
            std::mem::replace(&mut *self.shared.snapshot.write().unwrap_or_else(PoisonError::into_inner), new.clone());
        if old.same_as(&new) {
            return Ok(false);
        }
        if let Some(handle) = self.shared.handle.get().and_then(WeakHandle::upgrade) {
            self.announce(&handle, &old, &new);
        }
        Ok(true)
    }

    /// Brings the catalog's `SKILL.md` resources in line with `new`.
    fn announce(&self, handle: &CatalogHandle, old: &Catalog, new: &Catalog) {
        for entry in &old.entries {
            if new.get(&entry.uri).is_none() {
                handle.remove_resource_here(&entry.uri);
            }
        }
        for entry in &new.entries {
            match old.get(&entry.uri) {
                None => self.register(handle, entry),
                Some(before) if before.wire != entry.wire => {
                    // The listing shows the name and description: replace the entry.
                    handle.remove_resource_here(&entry.uri);
                    self.register(handle, entry);
                    handle.resource_updated(entry.uri.clone());
                }
                Some(_) => {}
            }
        }
    }

    fn register(&self, handle: &CatalogHandle, entry: &catalog::Entry) {
        let skills = self.clone();
        let uri = entry.uri.clone();
        let route = Resource::new(&entry.uri, &entry.name)
            .description(&entry.description)
            .mime_type("text/markdown")
            .handler(move |_ctx| {
                let read = skills.snapshot().read(&uri);
                async move { Ok::<_, ToolError>(read) }
            });
        if let Err(error) = handle.add_resource_here(route) {
            tracing::warn!(%error, uri = %entry.uri, "could not list a skill");
        }
    }

    /// Plugs these skills into a server's catalog; returns the extension's settings and
    /// its methods. Called once, by `Server::skills`.
    pub(crate) fn serve(self, handle: &CatalogHandle) -> (Value, Vec<MethodRoute>) {
        let snapshot = self.snapshot();
        for entry in &snapshot.entries {
            self.register(handle, entry);
        }
        let skills = self.clone();
        let files: ResourceRoute = ResourceTemplate::new(format!("{SCHEME}{{+path}}"), "skill-files")
            .description("The files of the skills this server serves (SEP-2640)")
            .handler(move |_ctx, vars: PathVar| {
                let read = skills.snapshot().read(&format!("{SCHEME}{}", vars.path));
                async move { Ok::<_, ToolError>(read) }
            });
        if let Err(error) = handle.add_resource_here(files) {
            tracing::warn!(%error, "could not serve skill files");
        }
        let _ = self.shared.handle.set(handle.downgrade());
        let config = self.config().clone();
        let mut methods = vec![self.list(config.cache), self.get(config.cache)];
        let settings = if config.no_directory_read {
            json!({})
        } else {
            methods.push(self.directory());
            json!({ "directoryRead": true })
        };
        (settings, methods)
    }

    fn list(&self, hints: CacheHints) -> MethodRoute {
        let skills = self.clone();
        MethodRoute::new("skills/list", move |ctx: Ctx, params: Page| {
            let snapshot = skills.snapshot();
            async move {
                // Listed as `resources/list` lists the skill's `SKILL.md`: what the
                // visibility filter hides from this caller is not here either.
                let listed = |entry: &&catalog::Entry| !matches!(ctx.registered(&entry.uri), Readable::Hidden);
                let after = match &params.cursor {
                    None => None,
                    Some(cursor) => Some(
                        decode_cursor(cursor)
                            .ok_or_else(|| ToolError::invalid_params("Invalid cursor: not one this server issued"))?,
                    ),
                };
                let start = after.map_or(0, |after| snapshot.entries.partition_point(|e| e.uri <= after));
                let mut shown = snapshot.entries[start..].iter().filter(listed);
                let page: Vec<&catalog::Entry> = shown.by_ref().take(PAGE).collect();
                let mut result = json!({ "skills": page.iter().map(|e| &e.wire).collect::<Vec<_>>() });
                if let (Some(last), Some(_)) = (page.last(), shown.next()) {
                    result["nextCursor"] = json!(URL_SAFE_NO_PAD.encode(&last.uri));
                }
                Ok::<_, ToolError>(result)
            }
        })
        .cache_hints(hints)
    }

    fn get(&self, hints: CacheHints) -> MethodRoute {
        let skills = self.clone();
        MethodRoute::new("skills/get", move |ctx: Ctx, params: UriParam| {
            let snapshot = skills.snapshot();
            async move {
                let unknown = || {
                    ToolError::protocol(Error::invalid_params(format!(
                        "No skill is served at {}",
                        crate::base::error::shown(&params.uri)
                    )))
                };
                let entry = snapshot.get(&params.uri).ok_or_else(unknown)?;
                // Decided as for its `SKILL.md` resource.
                match ctx.registered(&entry.uri) {
                    Readable::Granted => Ok(json!({ "skill": entry.wire })),
                    Readable::Forbidden(error) => Err(ToolError::protocol(error)),
                    Readable::Hidden => Err(unknown()),
                }
            }
        })
        .cache_hints(hints)
    }

    fn directory(&self) -> MethodRoute {
        let skills = self.clone();
        MethodRoute::new("resources/directory/read", move |ctx: Ctx, params: UriParam| {
            let snapshot = skills.snapshot();
            async move {
                match snapshot.children(&params.uri) {
                    Some(mut resources) => {
                        // What the visibility filter hides from this caller is not listed.
                        resources.retain(|child| {
                            let uri = child["uri"].as_str().unwrap_or_default();
                            !matches!(ctx.readable(uri), Readable::Hidden)
                        });
                        Ok(json!({ "resources": resources }))
                    }
                    None => Err(ToolError::invalid_params(format!(
                        "{} is not a directory resource",
                        crate::base::error::shown(&params.uri)
                    ))),
                }
            }
        })
    }
}

impl std::fmt::Debug for Skills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let snapshot = self.snapshot();
        f.debug_struct("Skills").field("skills", &snapshot.entries.iter().map(|e| &e.uri).collect::<Vec<_>>()).finish()
    }
}

impl std::fmt::Debug for Skill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skill").field("path", &self.path).field("files", &self.files.keys()).finish()
    }
}

#[derive(Deserialize)]
struct Page {
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct UriParam {
    uri: String,
}

#[derive(Deserialize)]
struct PathVar {
    path: String,
}

/// A `skills/list` cursor names the last skill of the page before.
fn decode_cursor(cursor: &str) -> Option<String> {
    String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).ok()?).ok().filter(|uri| uri.starts_with(SCHEME))
}
