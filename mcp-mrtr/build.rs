//! Copies the guide's chapters (`docs/*.md`) to `OUT_DIR` for rustdoc, with their links to
//! one another rewritten as intra-doc links. The chapters link as files (`replay.md`,
//! `replay.md#keys`, `../../README.md#guide`), which GitHub follows and rustdoc cannot;
//! rustdoc reads `crate::guide::replay#keys` and `crate::guide`, and checks each one.

use std::path::Path;
use std::{env, fs};

fn main() {
    let out = Path::new(&env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("guide");
    fs::create_dir_all(&out).expect("OUT_DIR is writable");
    println!("cargo:rerun-if-changed=docs");
    for entry in fs::read_dir("docs").expect("the guide is in docs/") {
        let path = entry.expect("a readable docs/").path();
        if path.extension().is_none_or(|extension| extension != "md") {
            continue;
        }
        println!("cargo:rerun-if-changed={}", path.display());
        let chapter = fs::read_to_string(&path).expect("a chapter is UTF-8");
        fs::write(out.join(path.file_name().expect("a file")), for_rustdoc(&chapter)).expect("OUT_DIR is writable");
    }
}

/// The chapter with `](name.md…` and `](../../README.md#guide)` pointing into `crate::guide`.
fn for_rustdoc(chapter: &str) -> String {
    let mut out = String::with_capacity(chapter.len());
    let mut rest = chapter;
    while let Some(at) = rest.find("](") {
        let (before, link) = rest.split_at(at + 2);
        out.push_str(before);
        let target = &link[..link.find(')').unwrap_or(link.len())];
        let (file, anchor) = target.split_once('#').map_or((target, ""), |(file, anchor)| (file, anchor));
        rest = link;
        if file == "../../README.md" && anchor == "guide" {
            out.push_str("crate::guide");
            rest = &link[target.len()..];
        } else if let Some(stem) = file.strip_suffix(".md").filter(|stem| is_chapter(stem)) {
            out.push_str("crate::guide::");
            out.push_str(&stem.replace('-', "_"));
            if !anchor.is_empty() {
                out.push('#');
                out.push_str(anchor);
            }
            rest = &link[target.len()..];
        }
    }
    out.push_str(rest);
    out
}

/// A chapter's file name: lower-case words joined by `-`, and nothing else.
fn is_chapter(stem: &str) -> bool {
    !stem.is_empty() && stem.bytes().all(|byte| byte.is_ascii_lowercase() || byte == b'-')
}
