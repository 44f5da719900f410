//! Skills (SEP-2640) over real HTTP: from a folder and from code, listed, fetched and
//! browsed, every digest matching the bytes `resources/read` serves, and the folder a
//! security boundary (no traversal, no symlink out, no hidden files), refreshed whole.

use std::path::PathBuf;

use base64::Engine as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mcp_mrtr::{catalog::Item, protocol::Tool, skills::Skill, skills::Skills, Server};
use mcp_mrtr_tests::harness::{Rpc, TestServer};
use mcp_mrtr_tests::DropFlag;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// A folder of its own under the system's temp dir, removed when dropped.
struct Folder(PathBuf);

impl Folder {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("mcp-mrtr-skills-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    fn write(&self, at: &str, text: &str) -> PathBuf {
        let path = self.0.join(at);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n")
}

fn read_rpc(uri: &str) -> Rpc {
    Rpc::new("resources/read").param("uri", json!(uri))
}

/// The bytes `resources/read` serves at `uri`, or the error.
async fn read(server: &TestServer, uri: &str) -> Result<Vec<u8>, Value> {
    let reply = server.call(&read_rpc(uri)).await;
    let Some(content) = reply["result"]["contents"].get(0) else { return Err(reply["error"].clone()) };
    Ok(match content.get("text") {
        Some(text) => text.as_str().unwrap().as_bytes().to_vec(),
        None => base64::engine::general_purpose::STANDARD.decode(content["blob"].as_str().unwrap()).unwrap(),
    })
}

async fn list(server: &TestServer) -> Vec<Value> {
    let reply = server.call(&Rpc::new("skills/list")).await;
    reply["result"]["skills"].as_array().cloned().unwrap_or_else(|| panic!("{reply}"))
}

#[tokio::test]
async fn a_folder_is_listed_fetched_and_browsed_with_digests_of_the_bytes_served() {
    let folder = Folder::new("served");
    folder.write("team/deploy/SKILL.md", &skill_md("deploy", "Deploy by the runbook."));
    folder.write("team/deploy/runbook/steps.md", "1. build\n2. ship\n");
    folder.write("team/deploy/bin/tool.dat", "\u{0}\u{1}binary");
    folder.write("team/deploy/.env", "SECRET=1");
    let server = TestServer::start(Server::new("skills", "1").skills(Skills::from_dir(&folder.0).unwrap())).await;

    let discover = server.call(&Rpc::new("server/discover")).await;
    let capabilities = &discover["result"]["capabilities"];
    assert_eq!(capabilities["extensions"]["io.modelcontextprotocol/skills"], json!({ "directoryRead": true }));
    assert!(capabilities["resources"].is_object(), "{capabilities}");

    let listed = server.call(&Rpc::new("skills/list")).await["result"].clone();
    assert_eq!((listed["ttlMs"].clone(), listed["cacheScope"].clone()), (json!(0), json!("private")));
    let skill = &listed["skills"][0];
    assert_eq!(skill["uri"], "skill://team/deploy/SKILL.md");
    assert_eq!(skill["frontmatter"], json!({ "name": "deploy", "description": "Deploy by the runbook." }));
    let manifest = skill["resources"].as_array().unwrap();
    let uris: Vec<&str> = manifest.iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(
        uris,
        ["skill://team/deploy/SKILL.md", "skill://team/deploy/bin/tool.dat", "skill://team/deploy/runbook/steps.md"],
        "every file once, the hidden one left out"
    );
    for entry in manifest {
        let bytes = read(&server, entry["uri"].as_str().unwrap()).await.unwrap();
        assert_eq!(entry["size"], bytes.len(), "{entry}");
        assert_eq!(entry["digest"], format!("sha256:{:x}", Sha256::digest(&bytes)), "{entry}");
    }
    assert!(read(&server, "skill://team/deploy/.env").await.is_err());

    let got = server.call(&Rpc::new("skills/get").param("uri", json!("skill://team/deploy/SKILL.md"))).await;
    assert_eq!(got["result"]["skill"], *skill);
    assert!(got["result"].get("nextCursor").is_none());
    let unknown = server.call(&Rpc::new("skills/get").param("uri", json!("skill://nope/SKILL.md"))).await;
    assert_eq!(unknown["error"]["code"], -32602);

    let root = server.call(&Rpc::new("resources/directory/read").param("uri", json!("skill://team/deploy"))).await;
    assert_eq!(
        root["result"]["resources"],
        json!([
            { "uri": "skill://team/deploy/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown", "size": manifest[0]["size"] },
            { "uri": "skill://team/deploy/bin", "name": "bin", "mimeType": "inode/directory" },
            { "uri": "skill://team/deploy/runbook", "name": "runbook", "mimeType": "inode/directory" },
        ])
    );
    let file =
        server.call(&Rpc::new("resources/directory/read").param("uri", json!("skill://team/deploy/SKILL.md"))).await;
    assert_eq!(file["error"]["code"], -32602);

    // The SKILL.md is a listed resource, named and described by its frontmatter.
    let resources = server.call(&Rpc::new("resources/list")).await;
    assert!(resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["uri"] == "skill://team/deploy/SKILL.md"
            && r["name"] == "deploy"
            && r["mimeType"] == "text/markdown"));
}

/// Audit C6: a hard link is a regular file with the inode of a file elsewhere, so a skill
/// could serve a file from outside the folder under a name inside it.
#[cfg(unix)]
#[tokio::test]
async fn a_skill_holding_a_hard_link_is_skipped_whole() {
    let folder = Folder::new("hardlink");
    let outside = Folder::new("hardlink-outside");
    let secret = outside.write("secret.txt", "top secret");
    folder.write("safe/SKILL.md", &skill_md("safe", "A safe skill."));
    folder.write("leaky/SKILL.md", &skill_md("leaky", "Links out."));
    std::fs::hard_link(&secret, folder.0.join("leaky/notes.txt")).unwrap();
    let server = TestServer::start(Server::new("skills", "1").skills(Skills::from_dir(&folder.0).unwrap())).await;

    let uris: Vec<Value> = list(&server).await.iter().map(|s| s["uri"].clone()).collect();
    assert_eq!(uris, [json!("skill://safe/SKILL.md")], "a skill holding a hard link is skipped whole");
    for attempt in ["skill://leaky/notes.txt", "skill://leaky/SKILL.md"] {
        let error = read(&server, attempt).await.expect_err(attempt);
        assert_eq!(error["code"], -32602, "{attempt}: {error}");
    }
}

#[tokio::test]
async fn nothing_outside_the_folder_is_reachable() {
    let folder = Folder::new("boundary");
    let outside = Folder::new("outside");
    let secret = outside.write("secret.txt", "top secret");
    folder.write("safe/SKILL.md", &skill_md("safe", "A safe skill."));
    folder.write("leaky/SKILL.md", &skill_md("leaky", "Links out."));
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, folder.0.join("leaky/secret.txt")).unwrap();
    let server = TestServer::start(Server::new("skills", "1").skills(Skills::from_dir(&folder.0).unwrap())).await;

    let uris: Vec<Value> = list(&server).await.iter().map(|s| s["uri"].clone()).collect();
    #[cfg(unix)]
    assert_eq!(uris, [json!("skill://safe/SKILL.md")], "a skill holding a symlink is skipped whole");
    for attempt in [
        "skill://leaky/secret.txt",
        "skill://safe/../leaky/SKILL.md",
        "skill://safe/%2e%2e/%2e%2e/secret.txt",
        "skill://safe/..%2F..%2Fsecret.txt",
        &format!("skill://{}", secret.display()),
        "skill:///etc/passwd",
    ] {
        let error = read(&server, attempt).await.expect_err(attempt);
        assert_eq!(error["code"], -32602, "{attempt}: {error}");
    }
}

#[tokio::test]
async fn a_refresh_swaps_the_whole_snapshot_in() {
    let folder = Folder::new("refresh");
    folder.write("notes/SKILL.md", &skill_md("notes", "Take notes."));
    let skills = Skills::from_dir(&folder.0).unwrap();
    let server = TestServer::start(Server::new("skills", "1").skills(skills.clone())).await;
    let before = list(&server).await[0]["resources"][0]["digest"].clone();

    assert!(!skills.refresh().unwrap(), "nothing changed yet");
    folder.write("notes/SKILL.md", &skill_md("notes", "Take better notes."));
    folder.write("todo/SKILL.md", &skill_md("todo", "Keep a list."));
    assert!(skills.refresh().unwrap());
    let after = list(&server).await;
    assert_eq!(after.len(), 2);
    assert_ne!(after[0]["resources"][0]["digest"], before);
    assert_eq!(after[0]["frontmatter"]["description"], "Take better notes.");
    let bytes = read(&server, "skill://notes/SKILL.md").await.unwrap();
    assert!(String::from_utf8(bytes).unwrap().contains("better"));
    let resources = server.call(&Rpc::new("resources/list")).await;
    let names: Vec<&str> =
        resources["result"]["resources"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert!(names.contains(&"todo") && names.contains(&"notes"), "{names:?}");

    std::fs::remove_dir_all(folder.0.join("todo")).unwrap();
    assert!(skills.refresh().unwrap());
    assert_eq!(list(&server).await.len(), 1);
    assert!(read(&server, "skill://todo/SKILL.md").await.is_err());
}

#[tokio::test]
async fn skills_built_in_code_are_served_alike_and_bad_ones_left_out() {
    let skills = Skills::new()
        .skill(Skill::new("acme/refunds", skill_md("refunds", "Refund by the book.")).file("POLICY.md", "30 days.\n"))
        .skill(Skill::new("acme/Bad", skill_md("Bad", "An invalid name.")))
        .skill(Skill::new("acme/other", skill_md("mismatch", "A name that is not its directory's.")))
        .directory_read(false);
    let server = TestServer::start(Server::new("skills", "1").skills(skills)).await;
    let discover = server.call(&Rpc::new("server/discover")).await;
    assert_eq!(discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"], json!({}));
    let listed = list(&server).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["uri"], "skill://acme/refunds/SKILL.md");
    assert_eq!(read(&server, "skill://acme/refunds/POLICY.md").await.unwrap(), b"30 days.\n");
    let browse = server.send(&Rpc::new("resources/directory/read").param("uri", json!("skill://acme/refunds"))).await;
    assert_eq!(browse.reply()["error"]["code"], -32601, "not declared, not served");
}

/// Audit C7: `skills/list` and `skills/get` showed every skill, even one whose `SKILL.md`
/// the visibility filter hides from `resources/list`. They decide as for that resource
/// now. (A skill's other files are served by the one `skill://{+path}` template, which a
/// filter hides for every skill or none: the guide says so.)
#[tokio::test]
async fn skills_hidden_by_the_visibility_filter_are_neither_listed_nor_got() {
    let skills = Skills::new()
        .skill(Skill::new("public", skill_md("public", "For everyone.")).file("NOTES.md", "hi\n"))
        .skill(Skill::new("internal", skill_md("internal", "Staff only.")));
    let server = Server::new("skills", "1").skills(skills).visible(|_view, item| match item {
        Item::Resource(resource) => !resource.uri.starts_with("skill://internal/"),
        _ => true,
    });
    let server = TestServer::start(server).await;
    let uris: Vec<Value> = list(&server).await.iter().map(|s| s["uri"].clone()).collect();
    assert_eq!(uris, [json!("skill://public/SKILL.md")]);
    let get = |uri: &str| Rpc::new("skills/get").param("uri", json!(uri));
    assert_eq!(server.call(&get("skill://public/SKILL.md")).await["result"]["skill"]["frontmatter"]["name"], "public");
    let hidden = server.call(&get("skill://internal/SKILL.md")).await;
    assert_eq!(hidden["error"]["code"], -32602, "answered as a skill that is not served: {hidden}");
    let missing = server.call(&get("skill://nowhere/SKILL.md")).await;
    assert_eq!(
        missing["error"]["message"].as_str().map(|m| m.replace("nowhere", "internal")),
        hidden["error"]["message"].as_str().map(str::to_owned)
    );
    // The lists say the same: the hidden SKILL.md is not among the resources either.
    let listed = server.call(&Rpc::new("resources/list")).await;
    let resources = listed["result"]["resources"].as_array().unwrap();
    assert!(resources.iter().all(|r| r["uri"] != "skill://internal/SKILL.md"), "{listed}");
}

/// Found by LeakSanitizer through the `stdio` fuzz target: the skills held the server's
/// catalog, whose routes held the skills, so a server with skills was never freed.
#[tokio::test]
async fn a_server_with_skills_is_freed_when_dropped() {
    let skills = Skills::new().skill(Skill::new("public", skill_md("public", "For everyone.")));
    let server = |freed: &Arc<AtomicBool>| {
        let flag = DropFlag(freed.clone());
        let tool = Tool::new("hold").handler(move |_ctx, _: Map<String, Value>| {
            let _held = &flag;
            async { Ok::<_, mcp_mrtr::ToolError>("held") }
        });
        mcp_mrtr::testing::with_own_keys(Server::new("skills", "1").tool(tool).skills(skills.clone()))
    };
    let built = Arc::new(AtomicBool::new(false));
    drop(server(&built));
    assert!(built.load(Ordering::SeqCst), "a server built with skills outlived its last handle");

    // The skills the application kept still refresh, with nothing to announce to.
    assert!(!skills.refresh().unwrap());
}

#[tokio::test]
async fn the_fixture_serves_its_skills_on_both_revisions() {
    let server = TestServer::everything().await;
    let listed = list(&server).await;
    let uris: Vec<&str> = listed.iter().map(|s| s["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["skill://acme/billing/refunds/SKILL.md", "skill://git-workflow/SKILL.md"]);
    let (session, init) = mcp_mrtr_tests::legacy::Legacy::connect(server.addr, json!({})).await;
    assert_eq!(init["capabilities"]["extensions"]["io.modelcontextprotocol/skills"], json!({ "directoryRead": true }));
    let legacy = session.call(2, "skills/list", json!({})).await;
    assert_eq!(legacy["result"]["skills"].as_array().unwrap().len(), 2, "{legacy}");
}
