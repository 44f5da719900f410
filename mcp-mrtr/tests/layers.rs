//! The runtime's layers (ARCHITECTURE.md): every top-level module of `src/` has a rank,
//! and a module may name only modules of a lower rank. This reads the source: an edge
//! is any `crate::module` path, a `use crate::{module, …}` group, or a name the crate
//! root re-exports (`crate::Server` is an edge to `server`), outside comments and
//! `#[cfg(test)]` modules. A new module must be given its place here.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Lowest first. A module may use the ones above it in this list, never those below.
const LAYERS: &[(&str, &[&str])] = &[
    ("wire types", &["protocol"]),
    (
        "foundations",
        &["error", "hex", "uri_template", "form_schema", "kept_arguments", "inflight", "caller", "deadline"],
    ),
    ("bounds and lifecycle", &["fair", "shutdown"]),
    (
        "sealed state, envelope, capabilities",
        &["request_state", "capability", "envelope", "param_headers", "app_state", "telemetry"],
    ),
    ("the MRTR core", &["ask", "replay", "context", "extract"]),
    ("handlers and the catalog", &["handler", "catalog", "private"]),
    ("dispatch", &["dispatch"]),
    ("extensions", &["tasks", "auth", "redis", "skills"]),
    ("the builder", &["server"]),
    // `fuzzing` (only with `--cfg fuzzing`) drives parsers of every layer, transports included.
    ("transports", &["legacy", "transport", "testing", "fuzzing"]),
];

fn ranks() -> BTreeMap<&'static str, usize> {
    LAYERS.iter().flat_map(|(_, modules)| modules.iter()).enumerate().map(|(rank, m)| (*m, rank)).collect()
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
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.rsplit(" as ").next().unwrap().trim();
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
    assert!(unplaced.is_empty(), "modules without a layer (add them to LAYERS and ARCHITECTURE.md): {unplaced:?}");
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
    assert_eq!(root_exports(&modules).get("Ctx").map(String::as_str), Some("context"));
}
