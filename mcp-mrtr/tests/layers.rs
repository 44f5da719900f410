//! The runtime's layers (ARCHITECTURE.md): every top-level entry of `src/` (a folder per
//! layer, and `server.rs`) is a row of the layer table there, and may name only the rows
//! above it. This reads the table and the source: an edge is any `crate::folder` path, a
//! `use crate::{folder, …}` group, or a name the crate root re-exports (`crate::Server` is
//! an edge to `server`), outside comments and `#[cfg(test)]` modules.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level entry's rank, lowest first, from ARCHITECTURE.md's layer table: the
/// rows whose second cell names a folder (`` `mrtr/` ``) or a file (`` `server.rs` ``).
fn ranks() -> BTreeMap<String, usize> {
    let architecture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    let text = fs::read_to_string(architecture).unwrap();
    let table = text.split("| layer | folder |").nth(1).expect("ARCHITECTURE.md has the layer table");
    let rows = table.lines().skip(2).take_while(|line| line.starts_with('|'));
    let entries = rows.filter_map(|row| {
        let cell = row.split('|').nth(2)?.trim().trim_matches('`');
        Some(cell.trim_end_matches('/').trim_end_matches(".rs").to_owned())
    });
    entries.enumerate().map(|(rank, entry)| (entry, rank)).collect()
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Line comments and `#[cfg(test)] mod … { … }` blocks removed (the crate writes no
/// block comments). A `//` inside a string cuts the rest of its line too, which can only
/// hide an edge, never invent one.
fn strip(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line.find("//").map_or(line, |at| &line[..at]));
        out.push('\n');
    }
    while let Some(start) = out.find("#[cfg(test)]") {
        let after = &out[start..];
        let Some(open) = after.find('{') else { break };
        let header = &after[..open];
        if !header.contains("mod ") {
            out.replace_range(start..start + "#[cfg(test)]".len(), "");
            continue;
        }
        let mut depth = 0usize;
        let mut end = out.len();
        for (i, c) in after.char_indices().skip(open) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(start..end, "");
    }
    out
}

/// Names the crate root re-exports, and the module each comes from.
fn root_exports(modules: &BTreeMap<String, Vec<PathBuf>>) -> BTreeMap<String, String> {
    let lib = fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut exports = BTreeMap::new();
    for item in strip(&lib).split(';') {
        let Some(path) = item.trim().strip_prefix("pub use ") else { continue };
        let Some((module, names)) = path.split_once("::") else { continue };
        if !modules.contains_key(module) {
            continue;
        }
        // `mrtr::context::Ctx`, `base::error::{Declined, Error}`: the names are the last segments.
        let names = names.rsplit_once('{').map_or(names, |(_, group)| group).trim_end_matches('}');
        for name in names.split(',') {
            let name = name.rsplit(" as ").next().unwrap().rsplit("::").next().unwrap().trim();
            if !name.is_empty() {
                exports.insert(name.to_owned(), module.to_owned());
            }
        }
    }
    exports
}

fn modules() -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" {
            continue;
        }
        let files = modules.entry(name).or_default();
        if path.is_dir() {
            let mut stack = vec![path];
            while let Some(dir) = stack.pop() {
                for entry in fs::read_dir(dir).unwrap() {
                    let path = entry.unwrap().path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("tests.rs") {
                        files.push(path);
                    }
                }
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    modules
}

/// Every name used as `crate::NAME`, or inside a `use crate::{…}` group.
fn crate_names(text: &str) -> Vec<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut names = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find("};").or_else(|| group.find('}')).unwrap_or(group.len())];
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && depth == 0 && !c.is_whitespace() => {
                        names.push(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(ident(rest));
        }
    }
    names
}

#[test]
fn every_module_names_only_lower_layers() {
    let ranks = ranks();
    let modules = modules();
    let exports = root_exports(&modules);
    let unplaced: Vec<_> = modules.keys().filter(|m| !ranks.contains_key(m.as_str())).collect();
    assert!(
        unplaced.is_empty(),
        "top-level entries of src/ without a row in ARCHITECTURE.md's layer table: {unplaced:?}"
    );
    let stale: Vec<_> = ranks.keys().filter(|entry| !modules.contains_key(entry.as_str())).collect();
    assert!(stale.is_empty(), "rows of ARCHITECTURE.md's layer table with no entry in src/: {stale:?}");
    let mut upward = Vec::new();
    for (module, files) in &modules {
        let rank = ranks[module.as_str()];
        for file in files {
            let text = strip(&fs::read_to_string(file).unwrap());
            for name in crate_names(&text) {
                let target = if modules.contains_key(&name) { Some(&name) } else { exports.get(&name) };
                let Some(target) = target.filter(|t| *t != module) else { continue };
                if ranks[target.as_str()] > rank {
                    let file = file.strip_prefix(src()).unwrap().display();
                    upward.push(format!("{file}: {module} names {target} (`crate::{name}`)"));
                }
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(upward.is_empty(), "names that point up a layer:\n{}", upward.join("\n"));
}

/// Each row's modules column (ARCHITECTURE.md) names exactly the modules of its folder,
/// so the map cannot drift from the code (issue 59 found `ask` listed for `question`). A
/// row that names only its own folder (`dispatch`) is one flat layer and is not compared.
#[test]
fn architecture_md_names_each_layer_s_modules() {
    let architecture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    let text = fs::read_to_string(architecture).unwrap();
    let table = text.split("| layer | folder |").nth(1).unwrap();
    let mut drift = Vec::new();
    for row in table.lines().skip(2).take_while(|line| line.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let folder = cells[2].trim_matches('`').trim_end_matches('/');
        let listed: std::collections::BTreeSet<String> =
            cells[3].split(',').map(|m| m.trim().trim_matches('`').to_owned()).collect();
        let dir = src().join(folder);
        if !dir.is_dir() || listed.len() == 1 && listed.contains(folder) {
            continue;
        }
        let actual: std::collections::BTreeSet<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_dir() || path.extension().is_some_and(|e| e == "rs"))
            .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
            .filter(|name| name != "mod" && name != "tests")
            .collect();
        if listed != actual {
            drift.push(format!("{folder}/: the table lists {listed:?}, the folder holds {actual:?}"));
        }
    }
    assert!(drift.is_empty(), "ARCHITECTURE.md's modules column is out of date:\n{}", drift.join("\n"));
}

/// The crate root only hands names on: a module that took `crate::Error` or `crate::http`
/// from it would import the root, which imports every layer, so an import would run back
/// up through it. Inside the crate every name is taken from the module that defines it.
#[test]
fn no_module_takes_a_name_through_the_crate_root() {
    let modules = modules();
    let exports = root_exports(&modules);
    let lib = strip(&fs::read_to_string(src().join("lib.rs")).unwrap());
    // `pub mod http { pub use … }`: modules of re-exports written in lib.rs itself.
    let facades: Vec<String> = lib
        .match_indices("pub mod ")
        .filter_map(|(at, _)| {
            let rest = &lib[at + "pub mod ".len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            rest[name.len()..].trim_start().starts_with('{').then_some(name)
        })
        .collect();
    let mut through_root = Vec::new();
    for files in modules.values() {
        for file in files {
            let text = strip(&fs::read_to_string(file).unwrap());
            for name in crate_names(&text) {
                if exports.contains_key(&name) || facades.contains(&name) {
                    let file = file.strip_prefix(src()).unwrap().display();
                    through_root.push(format!("{file}: `crate::{name}`"));
                }
            }
        }
    }
    through_root.sort();
    through_root.dedup();
    assert!(through_root.is_empty(), "names taken through the crate root:\n{}", through_root.join("\n"));
}

#[test]
fn the_check_sees_paths_groups_and_root_exports() {
    let text = strip(
        "use crate::{dispatch::Engine, Server, tasks::{Tasks, Host}};\n\
         // crate::transport is a comment\n\
         fn f() { crate::catalog::x(); }\n\
         #[cfg(test)]\nmod tests { use crate::testing; }\n",
    );
    assert_eq!(crate_names(&text), ["dispatch", "Server", "tasks", "catalog"]);
    let modules = modules();
    assert_eq!(root_exports(&modules).get("Server").map(String::as_str), Some("server"));
    assert_eq!(root_exports(&modules).get("Ctx").map(String::as_str), Some("mrtr"));
    assert_eq!(ranks().get("protocol"), Some(&0));
    assert_eq!(ranks().get("transport"), Some(&(ranks().len() - 1)));
}

/// Every source path ARCHITECTURE.md names in backticks exists (issue 50: it named files
/// that had moved). A path with a folder is read from the repository, the runtime's `src/`
/// or the runtime's crate; a bare file name must be some file of the runtime's.
#[test]
fn every_file_architecture_md_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut files = Vec::new();
    collect_files(&src(), &mut files);
    let names: Vec<String> =
        files.iter().filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned())).collect();
    let mut missing = Vec::new();
    let is_source = |span: &&str| Path::new(span).extension().is_some_and(|e| e == "rs") && !span.contains(' ');
    for path in text.split('`').skip(1).step_by(2).filter(is_source) {
        let found = if path.contains('/') {
            [root.clone(), src(), root.join("mcp-mrtr")].iter().any(|base| base.join(path).is_file())
        } else {
            names.iter().any(|name| name == path)
        };
        if !found {
            missing.push(path.to_owned());
        }
    }
    assert!(missing.is_empty(), "ARCHITECTURE.md names files that do not exist: {missing:?}");
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, files);
        } else {
            files.push(path);
        }
    }
}
