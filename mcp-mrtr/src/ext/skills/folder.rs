//! Reading a folder of skills: a security boundary (SEP-2640 digest §11). The tree is
//! walked once and every served byte is read then, into memory: requests look files up
//! in that snapshot and never build a path from a URI, so `..`, encoded slashes and
//! absolute paths reach nothing.
//!
//! - Links are never followed: a skill with a symlink anywhere in it is skipped whole, and
//!   so is one with a hard link (a regular file with more than one name), which can be
//!   a file from anywhere else on the filesystem under a name inside the folder.
//! - Hidden entries (a name starting with `.`), names that are not UTF-8 and anything
//!   but regular files and directories are left out, as if absent.
//! - Each file is opened non-blocking and must still be the file the walk saw (same
//!   device and inode, a regular file): one swapped for a link or a FIFO since is refused.
//! - A skill is read within the extension's limits (512 files, 16 MiB); one over them is
//!   skipped, and a file that grew past them while being read is caught.

use std::collections::BTreeMap;
use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The extension's limits per skill.
pub(super) const MAX_FILES: usize = 512;
pub(super) const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// How deep and how wide a walk goes before it stops: a folder is a catalog, not a disk.
const MAX_DEPTH: usize = 16;
const MAX_ENTRIES: usize = 100_000;

/// One skill found in a folder: its path below the folder (`/`-separated) and its files
/// by path below the skill's directory, `SKILL.md` among them.
pub(crate) struct Found {
    pub(crate) path: String,
    pub(crate) files: BTreeMap<String, Vec<u8>>,
}

/// A regular file the walk saw.
struct Seen {
    path: PathBuf,
    identity: (u64, u64),
}

/// What the walk saw: regular files and the places that hold a link (symbolic, or a
/// file with another name elsewhere), by their path below the root.
#[derive(Default)]
struct Walk {
    files: BTreeMap<String, Seen>,
    links: Vec<String>,
    entries: usize,
}

/// The skills under `root`; a skill that breaks a rule is skipped and logged.
pub(crate) fn read(root: &Path) -> io::Result<Vec<Found>> {
    let meta = fs::symlink_metadata(root)?;
    if !meta.is_dir() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a directory", root.display())));
    }
    let mut walk = Walk::default();
    walk.dir(root, "", 0)?;
    let roots: Vec<&str> = walk.files.keys().filter_map(|file| file.strip_suffix("/SKILL.md")).collect();
    let mut found = Vec::new();
    for skill in roots {
        let prefix = format!("{skill}/");
        if walk.links.iter().any(|link| link.starts_with(&prefix)) {
            tracing::warn!(skill, "skipped a skill that holds a link (symbolic, or a hard link)");
            continue;
        }
        match read_skill(&walk, &prefix) {
            Ok(files) => found.push(Found { path: skill.to_owned(), files }),
            Err(why) => tracing::warn!(skill, %why, "skipped a skill"),
        }
    }
    Ok(found)
}

impl Walk {
    fn dir(&mut self, dir: &Path, below: &str, depth: usize) -> io::Result<()> {
        if depth > MAX_DEPTH {
            tracing::warn!(dir = %dir.display(), "skills folder nested too deep; the rest is left out");
            return Ok(());
        }
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            self.entries += 1;
            if self.entries > MAX_ENTRIES {
                return Err(io::Error::other(format!("the skills folder holds more than {MAX_ENTRIES} entries")));
            }
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            if name.starts_with('.') {
                continue;
            }
            let at = if below.is_empty() { name.clone() } else { format!("{below}/{name}") };
            // `DirEntry::metadata` does not follow a symlink.
            let meta = entry.metadata()?;
            if meta.file_type().is_symlink() || (meta.is_file() && names(&meta) > 1) {
                self.links.push(at);
            } else if meta.is_dir() {
                self.dir(&entry.path(), &at, depth + 1)?;
            } else if meta.is_file() {
                self.files.insert(at, Seen { path: entry.path(), identity: identity(&meta) });
            }
        }
        Ok(())
    }
}

/// The files of the skill whose directory is `prefix` (ending in `/`), read.
fn read_skill(walk: &Walk, prefix: &str) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let files: Vec<(&String, &Seen)> =
        walk.files.range(prefix.to_owned()..).take_while(|(k, _)| k.starts_with(prefix)).collect();
    if files.len() > MAX_FILES {
        return Err(format!("{} files, more than the {MAX_FILES} a skill may have", files.len()));
    }
    let mut budget = MAX_BYTES;
    let mut read = BTreeMap::new();
    for (at, seen) in files {
        let bytes = read_file(seen, budget).map_err(|e| format!("{at}: {e}"))?;
        budget -= bytes.len() as u64;
        read.insert(at[prefix.len()..].to_owned(), bytes);
    }
    Ok(read)
}

/// The file `seen` as it is now, if it is still that regular file and fits in `budget`.
fn read_file(seen: &Seen, budget: u64) -> io::Result<Vec<u8>> {
    let file = open(&seen.path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || identity(&meta) != seen.identity || names(&meta) > 1 {
        return Err(io::Error::other("changed since the folder was read"));
    }
    let mut bytes = Vec::new();
    file.take(budget + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > budget {
        return Err(io::Error::other(format!("the skill takes more than {MAX_BYTES} bytes")));
    }
    Ok(bytes)
}

#[cfg(unix)]
fn open(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW).open(path)
}

#[cfg(not(unix))]
fn open(path: &Path) -> io::Result<File> {
    File::open(path)
}

#[cfg(unix)]
fn identity(meta: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn identity(meta: &Metadata) -> (u64, u64) {
    (meta.len(), 0)
}

/// How many names (hard links) the file has.
#[cfg(unix)]
fn names(meta: &Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

/// The standard library reads a file's link count on Unix only.
#[cfg(not(unix))]
fn names(_meta: &Metadata) -> u64 {
    1
}
