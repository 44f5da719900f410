//! The guide read as Markdown (on GitHub, from the README's links) works as it does on
//! docs.rs: every relative link in the README, the CHANGELOG, ARCHITECTURE.md and the
//! chapters names a file that exists and, with `#anchor`, a heading in it; and every chapter
//! ends with a previous/next line in the order `lib.rs`'s `guide` module gives. A chapter
//! links an item by its docs.rs page, never by a rustdoc path (dead text on GitHub).
//! (rustdoc checks the same links after `build.rs` rewrites them, the docs.rs pages as
//! intra-doc paths; this checks them as files.)

use std::fs;
use std::path::{Path, PathBuf};

/// The build script, for the rewrite it does (`item`): what it cannot rewrite fails here,
/// not in a user's build.
#[allow(dead_code, reason = "only `item` is asked")]
#[path = "../build.rs"]
mod build;

/// Where a chapter links an item of the crate: `build.rs` turns these pages into intra-doc
/// paths, which rustdoc checks.
const DOCS_RS: &str = "https://docs.rs/mcp-mrtr/latest/mcp_mrtr/";

/// The workspace root: the runtime crate's parent.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the crate is in the workspace").to_path_buf()
}

/// The chapters' file stems in reading order, as `pub mod guide` includes them.
fn chapter_order() -> Vec<String> {
    let lib = fs::read_to_string(root().join("mcp-mrtr/src/lib.rs")).expect("lib.rs");
    let guide = &lib[lib.find("pub mod guide {").expect("a guide module")..];
    let guide = &guide[..guide.find("\n}\n").expect("the guide module ends")];
    guide.split("/guide/").skip(1).map(|rest| rest[..rest.find(".md").expect("a chapter file")].to_owned()).collect()
}

/// The text outside fenced code blocks, with inline code spans blanked: links there are code.
fn prose(markdown: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            let mut in_code = false;
            out.extend(line.chars().map(|c| {
                if c == '`' {
                    in_code = !in_code;
                }
                if in_code {
                    ' '
                } else {
                    c
                }
            }));
            out.push('\n');
        }
    }
    out
}

/// Every `[text](target)` link's target.
fn links(markdown: &str) -> Vec<String> {
    let text = prose(markdown);
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            rest.find(')').map(|end| rest[..end].to_owned())
        })
        .collect()
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.push(slug(line.trim_start_matches('#')));
        }
    }
    found
}

/// Why `target`, linked from `from`, does not resolve; `None` when it does.
fn broken(from: &Path, target: &str) -> Option<String> {
    if ["http://", "https://", "mailto:"].iter().any(|scheme| target.starts_with(scheme)) {
        return None;
    }
    if target.contains("::") || target.contains('@') {
        return Some(format!("{target}: a rustdoc path, dead text on GitHub (link the item's page under {DOCS_RS})"));
    }
    let (file, anchor) = target.split_once('#').map_or((target, None), |(file, anchor)| (file, Some(anchor)));
    let path = if file.is_empty() { from.to_path_buf() } else { from.parent().expect("a folder").join(file) };
    if !path.exists() {
        return Some(format!("{target}: no file {}", path.display()));
    }
    let anchor = anchor.filter(|_| path.extension().is_some_and(|extension| extension == "md"))?;
    let text = fs::read_to_string(&path).expect("a readable file");
    (!anchors(&text).iter().any(|found| found == anchor)).then(|| format!("{target}: no heading #{anchor}"))
}

fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut documents: Vec<PathBuf> =
        ["README.md", "CHANGELOG.md", "ARCHITECTURE.md"].iter().map(|name| root.join(name)).collect();
    for chapter in chapter_order() {
        documents.push(root.join(format!("mcp-mrtr/docs/{chapter}.md")));
    }
    documents
}

#[test]
fn every_relative_link_names_a_file_and_a_heading_that_exist() {
    let mut problems = Vec::new();
    for document in documents() {
        let text = fs::read_to_string(&document).unwrap_or_else(|_| panic!("{} is missing", document.display()));
        for target in links(&text) {
            if let Some(problem) = broken(&document, &target) {
                problems.push(format!("{}: {problem}", document.display()));
            }
        }
    }
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

#[test]
fn every_docs_rs_link_of_a_chapter_is_one_rustdoc_checks() {
    let mut unchecked = Vec::new();
    for chapter in chapter_order() {
        let text = fs::read_to_string(root().join(format!("mcp-mrtr/docs/{chapter}.md"))).expect("a chapter");
        for target in links(&text) {
            let ours = ["docs.rs/mcp-mrtr", "docs.rs/mcp_mrtr", "docs.rs/crate/mcp-mrtr"];
            let rewritten = target.strip_prefix(DOCS_RS).is_some_and(|page| build::item(page).is_some());
            if ours.iter().any(|page| target.contains(page)) && !rewritten {
                unchecked.push(format!("{chapter}.md: {target}"));
            }
        }
    }
    assert!(
        unchecked.is_empty(),
        "link an item's page under {DOCS_RS}, which build.rs rewrites (a module's index.html, kind.Name.html, \
         with #method.x and the like for a member):\n{}",
        unchecked.join("\n")
    );
}

#[test]
fn every_chapter_is_in_the_guide_module_and_ends_with_its_neighbours() {
    let order = chapter_order();
    let on_disk = fs::read_dir(root().join("mcp-mrtr/docs")).expect("docs/").count();
    assert_eq!(order.len(), on_disk, "every file in docs/ is a chapter of the guide module: {order:?}");
    for (at, chapter) in order.iter().enumerate() {
        let text = fs::read_to_string(root().join(format!("mcp-mrtr/docs/{chapter}.md"))).expect("a chapter");
        let last = text.trim_end().lines().last().expect("a chapter has lines");
        let targets = links(last);
        let mut expected = Vec::new();
        if at > 0 {
            expected.push(format!("{}.md", order[at - 1]));
        }
        expected.push("../../README.md#guide".to_owned());
        if let Some(next) = order.get(at + 1) {
            expected.push(format!("{next}.md"));
        }
        assert_eq!(targets, expected, "{chapter}.md's last line: {last}");
    }
}

#[test]
fn a_broken_link_or_anchor_is_found() {
    let readme = root().join("README.md");
    assert_eq!(broken(&readme, "mcp-mrtr/docs/replay.md"), None);
    assert_eq!(broken(&readme, "CHANGELOG.md#changelog"), None);
    assert!(broken(&readme, "mcp-mrtr/docs/no-such-chapter.md").is_some());
    assert!(broken(&readme, "mcp-mrtr/docs/replay.md#no-such-heading").is_some());
    assert!(broken(&readme, "crate::Server").is_some());
    assert_eq!(broken(&readme, "https://docs.rs/mcp-mrtr/latest/mcp_mrtr/struct.Server.html"), None);
    assert_eq!(links("see [a](a.md) and `[b](b.md)`\n```\n[c](c.md)\n```\n"), ["a.md"]);
    assert_eq!(slug(" `ask!` in a helper, and keys"), "ask-in-a-helper-and-keys");
}
