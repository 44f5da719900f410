//! One snapshot of the skills served: entries (frontmatter and manifest), the bytes of
//! every file and the directory view, all built together from the same bytes, so a
//! manifest, a directory read and a `resources/read` never disagree. A refresh builds a
//! new snapshot and swaps it in whole.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::folder::{Found, MAX_BYTES, MAX_FILES};
use super::frontmatter;
use crate::protocol::{ReadResourceResult, ResourceContents};

/// The scheme every served skill is under.
pub(super) const SCHEME: &str = "skill://";

/// A skill as `skills/list` and `skills/get` carry it, with what its `SKILL.md`
/// resource is listed as.
pub(super) struct Entry {
    pub(super) uri: String,
    pub(super) name: String,
    pub(super) description: String,
    /// The `{uri, frontmatter, resources}` object, built once.
    pub(super) wire: Value,
}

struct File {
    bytes: Arc<[u8]>,
    mime: &'static str,
}

/// One snapshot: entries sorted by URI, files and directories by URI.
#[derive(Default)]
pub(crate) struct Catalog {
    pub(super) entries: Vec<Entry>,
    files: HashMap<String, File>,
    /// Each directory's direct children: `(name, is a directory)`.
    dirs: HashMap<String, BTreeSet<(String, bool)>>,
}

impl Catalog {
    /// The snapshot of `skills` (path below `skill://`, files by path below the skill):
    /// one that breaks a rule, or whose URI another took first, is skipped and logged.
    pub(super) fn build(skills: impl IntoIterator<Item = Found>) -> Self {
        let mut catalog = Self::default();
        for Found { path, files } in skills {
            if let Err(why) = catalog.add(&path, files) {
                tracing::warn!(skill = %path, %why, "skipped a skill");
            }
        }
        catalog.entries.sort_by(|a, b| a.uri.cmp(&b.uri));
        catalog
    }

    fn add(&mut self, path: &str, files: BTreeMap<String, Vec<u8>>) -> Result<(), String> {
        let segments: Vec<&str> = path.split('/').collect();
        if segments.iter().any(|s| s.is_empty() || *s == "." || *s == "..") {
            return Err("a skill path has no empty, `.` or `..` segments".into());
        }
        let name = segments.last().copied().unwrap_or_default();
        let skill_md = files.get("SKILL.md").ok_or("a skill has a SKILL.md")?;
        let front = frontmatter::read(skill_md, name)?;
        let total: u64 = files.values().map(|bytes| bytes.len() as u64).sum();
        if files.len() > MAX_FILES || total > MAX_BYTES {
            return Err(format!("over the limits of a skill ({MAX_FILES} files, {MAX_BYTES} bytes)"));
        }
        let root = format!("{SCHEME}{}", encode(path));
        let uri = format!("{root}/SKILL.md");
        if self.entries.iter().any(|entry| entry.uri == uri) {
            return Err(format!("{uri} is served already"));
        }
        let mut manifest = Vec::with_capacity(files.len());
        for (file, bytes) in files {
            if file.split('/').any(|s| s.is_empty() || s == "." || s == ".." || s.starts_with('.')) {
                return Err(format!("{file:?} is not a file path inside the skill"));
            }
            let file_uri = format!("{root}/{}", encode(&file));
            let digest = format!("sha256:{}", crate::base::hex::encode(&Sha256::digest(&bytes)));
            manifest.push(json!({ "uri": file_uri, "digest": digest, "size": bytes.len() }));
            // Every directory from the skill's root down to the file lists its child.
            let mut dir = root.clone();
            let parts: Vec<&str> = file.split('/').collect();
            for (i, part) in parts.iter().enumerate() {
                let is_dir = i + 1 < parts.len();
                self.dirs.entry(dir.clone()).or_default().insert((encode(part), is_dir));
                dir = format!("{dir}/{}", encode(part));
            }
            // A nested skill's files are the outer skill's too: the bytes are the same.
            self.files.entry(file_uri).or_insert(File { mime: mime_of(&file), bytes: bytes.into() });
        }
        let wire = json!({ "uri": uri, "frontmatter": front.object, "resources": manifest });
        self.entries.push(Entry { uri, name: front.name, description: front.description, wire });
        Ok(())
    }

    /// The entry of the skill whose `SKILL.md` is `uri`, spelled as listed.
    pub(super) fn get(&self, uri: &str) -> Option<&Entry> {
        self.entries.binary_search_by(|entry| entry.uri.as_str().cmp(uri)).ok().map(|i| &self.entries[i])
    }

    /// The file at `uri`, as `resources/read` returns it: text when it is UTF-8 without
    /// NUL (the same bytes either way), else a base64 blob. Empty when there is none.
    pub(super) fn read(&self, uri: &str) -> ReadResourceResult {
        let contents = self.files.get(uri).map(|file| match std::str::from_utf8(&file.bytes) {
            Ok(text) if !text.contains('\0') => ResourceContents::text(uri, file.mime, text),
            _ => ResourceContents::blob(uri, file.mime, base64::engine::general_purpose::STANDARD.encode(&file.bytes)),
        });
        ReadResourceResult { contents: contents.into_iter().collect(), ..ReadResourceResult::default() }
    }

    /// The direct children of the directory `uri`, as `resources/directory/read` lists
    /// them; `None` when `uri` is not a directory of a served skill.
    pub(super) fn children(&self, uri: &str) -> Option<Vec<Value>> {
        let children = self.dirs.get(uri)?;
        Some(
            children
                .iter()
                .map(|(name, is_dir)| {
                    let child = format!("{uri}/{name}");
                    match (is_dir, self.files.get(&child)) {
                        (false, Some(file)) => {
                            json!({ "uri": child, "name": name, "mimeType": file.mime, "size": file.bytes.len() })
                        }
                        _ => json!({ "uri": child, "name": name, "mimeType": "inode/directory" }),
                    }
                })
                .collect(),
        )
    }

    /// Whether two snapshots serve the same skills with the same bytes.
    pub(super) fn same_as(&self, other: &Self) -> bool {
        self.entries.len() == other.entries.len()
            && self.entries.iter().zip(&other.entries).all(|(a, b)| a.wire == b.wire)
    }
}

/// Percent-encodes everything but `A-Z a-z 0-9 - . _ ~` and `/` (URIs stay ASCII, and
/// `Mcp-Name` never needs its base64 form).
fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

fn mime_of(file: &str) -> &'static str {
    let extension = file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match extension.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "toml" => "application/toml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(path: &str, files: &[(&str, &str)]) -> Found {
        Found {
            path: path.into(),
            files: files.iter().map(|(p, b)| ((*p).to_owned(), b.as_bytes().to_vec())).collect(),
        }
    }

    #[test]
    fn the_manifest_digests_the_bytes_served() {
        let md = "---\nname: git-workflow\ndescription: Follow the team Git conventions for branches and commits.\n---\n\n# Git workflow\n\nRead `references/BRANCHES.md` before creating a branch.\n";
        let branches = "# Branch names\n\nUse `feat/<ticket>` or `fix/<ticket>`.\n";
        let catalog =
            Catalog::build([skill("git-workflow", &[("SKILL.md", md), ("references/BRANCHES.md", branches)])]);
        let entry = catalog.get("skill://git-workflow/SKILL.md").unwrap();
        // The digest's worked example (skills digest §5): real digests of these bytes.
        assert_eq!(
            entry.wire["resources"],
            json!([
                { "uri": "skill://git-workflow/SKILL.md", "digest": "sha256:1df6688d1885490b80ac09c041e17b12c5f07da46c6f2d7a45b5b1444aa29c0a", "size": 171 },
                { "uri": "skill://git-workflow/references/BRANCHES.md", "digest": "sha256:df5a8b9ebb02eb5db87e383d1bfc1044d5588d08fddf2dbf3971f313a55b5094", "size": 55 },
            ])
        );
        let read = catalog.read("skill://git-workflow/references/BRANCHES.md");
        assert_eq!(serde_json::to_value(&read.contents[0]).unwrap()["text"], branches);
        assert_eq!(
            catalog.children("skill://git-workflow").unwrap(),
            vec![
                json!({ "uri": "skill://git-workflow/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown", "size": 171 }),
                json!({ "uri": "skill://git-workflow/references", "name": "references", "mimeType": "inode/directory" }),
            ]
        );
        assert!(catalog.children("skill://git-workflow/SKILL.md").is_none());
        assert!(catalog.read("skill://git-workflow/../x").contents.is_empty());
    }

    #[test]
    fn a_skill_breaking_a_rule_is_left_out() {
        let ok = "---\nname: a\ndescription: d\n---\n";
        let catalog = Catalog::build([
            skill("a", &[("SKILL.md", ok)]),
            skill("x/a", &[("SKILL.md", ok), (".env", "secret")]),
            skill("b", &[("SKILL.md", ok)]),
            skill("a", &[("SKILL.md", ok), ("more.md", "twice")]),
        ]);
        let uris: Vec<_> = catalog.entries.iter().map(|e| e.uri.as_str()).collect();
        assert_eq!(uris, ["skill://a/SKILL.md"]);
    }
}
