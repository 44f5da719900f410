//! Copies the guide's chapters (`docs/*.md`) to `OUT_DIR` for rustdoc, with their links
//! rewritten as intra-doc links, which rustdoc resolves and checks. The chapters are read as
//! Markdown too (on GitHub), so they link as files and as docs.rs pages:
//!
//! - `replay.md`, `replay.md#keys` become `crate::guide::replay`, `crate::guide::replay#keys`,
//!   and `../../README.md#guide` becomes `crate::guide`;
//! - `https://docs.rs/mcp-mrtr/latest/mcp_mrtr/http/struct.HttpConfig.html#method.limits`
//!   becomes `method@crate::http::HttpConfig::limits`. The page's kind becomes the link's
//!   disambiguator, so a URL that names an item of the wrong kind fails the docs build, as
//!   one naming no item does. A docs.rs URL of this crate that is not an item's page is
//!   left as written, with a cargo warning: a user's build never stops over a link
//!   (`tests/guide_links.rs` fails on one instead).

use std::path::Path;
use std::{env, fs};

/// Where the chapters link an item of this crate (the newest release's docs).
const DOCS_RS: &str = "https://docs.rs/mcp-mrtr/latest/mcp_mrtr/";

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
        let rewritten = for_rustdoc(&chapter, |url| {
            println!("cargo:warning={}: {url} is not the docs.rs page of an item of mcp_mrtr", path.display());
        });
        fs::write(out.join(path.file_name().expect("a file")), rewritten).expect("OUT_DIR is writable");
    }
}

/// The chapter with each `](target)` that [`intra_doc`] knows rewritten; `unknown` hears of
/// each docs.rs URL of this crate that it cannot rewrite, which stays as written.
fn for_rustdoc(chapter: &str, mut unknown: impl FnMut(&str)) -> String {
    let mut out = String::with_capacity(chapter.len());
    let mut rest = chapter;
    while let Some(at) = rest.find("](") {
        let (before, link) = rest.split_at(at + 2);
        out.push_str(before);
        let target = &link[..link.find(')').unwrap_or(link.len())];
        rest = link;
        match intra_doc(target) {
            Ok(Some(path)) => {
                out.push_str(&path);
                rest = &link[target.len()..];
            }
            Ok(None) => {}
            Err(url) => unknown(url),
        }
    }
    out.push_str(rest);
    out
}

/// The intra-doc link for a link to a chapter, to the guide, or to an item's docs.rs page;
/// `None` for any other link, which stays as written.
fn intra_doc(target: &str) -> Result<Option<String>, &str> {
    if let Some(page) = target.strip_prefix(DOCS_RS) {
        return item(page).map(Some).ok_or(target);
    }
    let (file, anchor) = target.split_once('#').map_or((target, None), |(file, anchor)| (file, Some(anchor)));
    if file == "../../README.md" && anchor == Some("guide") {
        return Ok(Some("crate::guide".to_owned()));
    }
    let Some(stem) = file.strip_suffix(".md").filter(|stem| is_chapter(stem)) else { return Ok(None) };
    let module = format!("crate::guide::{}", stem.replace('-', "_"));
    Ok(Some(anchor.map_or_else(|| module.clone(), |anchor| format!("{module}#{anchor}"))))
}

/// A chapter's file name: lower-case words joined by `-`, and nothing else.
fn is_chapter(stem: &str) -> bool {
    !stem.is_empty() && stem.bytes().all(|byte| byte.is_ascii_lowercase() || byte == b'-')
}

/// The intra-doc link for a page under [`DOCS_RS`] (`tests/guide_links.rs` asks it too), as
/// rustdoc names its files:
/// `a/b/index.html` or `a/b/` (a module), `a/kind.Name.html` (an item), each with an optional
/// `#fragment` (`method.x`, `variant.X`, … for a member; anything else for a section).
pub(crate) fn item(page: &str) -> Option<String> {
    let (file, fragment) = page.split_once('#').map_or((page, None), |(file, fragment)| (file, Some(fragment)));
    let (modules, name) = file.rsplit_once('/').unwrap_or(("", file));
    let mut path = String::from("crate");
    for module in modules.split('/').filter(|module| !module.is_empty()) {
        path = format!("{path}::{module}");
    }
    if name.is_empty() || name == "index.html" {
        return Some(section(&format!("mod@{path}"), fragment));
    }
    let (kind, name) = name.strip_suffix(".html")?.split_once('.')?;
    path = format!("{path}::{name}");
    // A member of the item: `method@` also covers a trait's required methods.
    if let Some((member_kind, member)) = fragment.and_then(|fragment| fragment.split_once('.')) {
        let disambiguator = match member_kind {
            "method" | "tymethod" => "method",
            "variant" => "variant",
            "structfield" => "field",
            "associatedtype" => "type",
            "associatedconstant" => "const",
            _ => return None,
        };
        return (!member.contains('.')).then(|| format!("{disambiguator}@{path}::{member}"));
    }
    let link = match kind {
        "struct" | "enum" | "union" | "trait" | "fn" | "static" | "derive" => format!("{kind}@{path}"),
        "constant" => format!("const@{path}"),
        "type" => format!("type@{path}"),
        // `name!` is a function-like macro only; rustdoc has no disambiguator for attributes.
        "macro" => format!("{path}!"),
        "attr" => format!("macro@{path}"),
        _ => return None,
    };
    Some(section(&link, fragment))
}

/// `link`, and `#fragment` when the page's section is named.
fn section(link: &str, fragment: Option<&str>) -> String {
    fragment.map_or_else(|| link.to_owned(), |fragment| format!("{link}#{fragment}"))
}
