//! The fake GitHub answers plain HTTP as GitHub would.

use base64::Engine as _;
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "ghp_fake_token";

/// Sends one HTTP/1.1 request and returns the status and the JSON body.
async fn call(
    gh: &FakeGitHub,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let addr = gh.origin().trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/vnd.github+json\r\n"
    );
    if let Some(token) = token {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if !body.is_empty() {
        request.push_str("Content-Type: application/json\r\n");
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap())
}

async fn get(gh: &FakeGitHub, path: &str) -> (u16, Value) {
    call(gh, "GET", path, Some(TOKEN), None).await
}

fn decode(content: &Value) -> Vec<u8> {
    let compact: String = content
        .as_str()
        .unwrap()
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn refuses_requests_without_the_token() {
    let gh = FakeGitHub::start(TOKEN).await;
    let (status, body) = call(&gh, "GET", "/repos/octo/hello", None, None).await;
    assert_eq!(status, 401);
    assert_eq!(body["message"], "Bad credentials");
    let (status, _) = call(&gh, "GET", "/repos/octo/hello", Some("wrong"), None).await;
    assert_eq!(status, 401);
    let (status, body) = get(&gh, "/repos/octo/hello").await;
    assert_eq!(status, 200);
    assert_eq!(body["default_branch"], "main");

    let requests = gh.requests();
    assert_eq!(
        requests.len(),
        3,
        "every request is recorded, refused ones too"
    );
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].path, "/repos/octo/hello");
    assert_eq!(requests[0].header("authorization"), None);
    assert_eq!(
        requests[2].header("authorization"),
        Some("Bearer ghp_fake_token")
    );
    assert!(
        requests[2]
            .headers
            .iter()
            .all(|(n, _)| *n == n.to_ascii_lowercase())
    );
    gh.clear_requests();
    assert!(gh.requests().is_empty());

    let (status, body) = get(&gh, "/repos/octo/nope").await;
    assert_eq!((status, body["message"].as_str()), (404, Some("Not Found")));
}

#[tokio::test(flavor = "multi_thread")]
async fn serves_contents_like_github() {
    let gh = FakeGitHub::start(TOKEN).await;

    let (status, file) = get(&gh, "/repos/octo/hello/contents/README.md").await;
    assert_eq!(status, 200);
    assert_eq!(file["type"], "file");
    assert_eq!(file["encoding"], "base64");
    assert_eq!(file["path"], "README.md");
    assert_eq!(file["size"], 8);
    assert_eq!(file["sha"].as_str().unwrap().len(), 40);
    assert_eq!(decode(&file["content"]), b"# Hello\n");

    // Per-segment percent-encoding, and `ref` selecting a branch.
    let (status, main_lib) = get(&gh, "/repos/octo/hello/contents/src%2Flib.rs").await;
    assert_eq!(status, 200);
    let (_, feature_lib) = get(&gh, "/repos/octo/hello/contents/src/lib.rs?ref=feature").await;
    assert_ne!(
        decode(&main_lib["content"]),
        decode(&feature_lib["content"])
    );
    let feature_sha = gh.branch_sha("octo", "hello", "feature").unwrap();
    let (_, by_sha) = get(
        &gh,
        &format!("/repos/octo/hello/contents/src/lib.rs?ref={feature_sha}"),
    )
    .await;
    assert_eq!(by_sha["sha"], feature_lib["sha"]);

    // Long content is wrapped every 60 characters.
    let (_, ci) = get(&gh, "/repos/octo/hello/contents/.github/workflows/ci.yml").await;
    let content = ci["content"].as_str().unwrap();
    assert!(content.lines().all(|l| l.len() <= 60) && content.lines().count() > 1);

    let (_, logo) = get(&gh, "/repos/octo/hello/contents/logo.png").await;
    assert_eq!(
        decode(&logo["content"]),
        [0x89, 0x50, 0x4E, 0x47, 0xFF, 0xFE]
    );

    let (status, root) = get(&gh, "/repos/octo/hello/contents").await;
    assert_eq!(status, 200);
    let names: Vec<(&str, &str)> = root
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            (".github", "dir"),
            ("README.md", "file"),
            ("logo.png", "file"),
            ("src", "dir")
        ]
    );
    let (_, src) = get(&gh, "/repos/octo/hello/contents/src").await;
    assert_eq!(src[0]["path"], "src/lib.rs");

    for missing in [
        "/repos/octo/hello/contents/nope.txt",
        "/repos/octo/hello/contents/README.md?ref=nope",
    ] {
        let (status, body) = get(&gh, missing).await;
        assert_eq!(
            (status, body["message"].as_str()),
            (404, Some("Not Found")),
            "{missing}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_issues_and_pulls_like_github() {
    let gh = FakeGitHub::start(TOKEN).await;
    let (_, open) = get(&gh, "/repos/octo/hello/issues?state=open&per_page=30").await;
    let numbers: Vec<u64> = open
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [3, 1]);
    assert!(
        open[0].get("pull_request").is_some(),
        "#3 is a pull request"
    );
    assert!(open[1].get("pull_request").is_none());
    assert_eq!(open[1]["labels"][0]["name"], "bug");
    assert_eq!(open[1]["comments"], 1);

    let (_, closed) = get(&gh, "/repos/octo/hello/issues?state=closed").await;
    assert_eq!(closed[0]["number"], 2);
    assert_eq!(closed[0]["body"], Value::Null);
    let (_, one) = get(&gh, "/repos/octo/hello/issues?state=all&per_page=1").await;
    assert_eq!(one.as_array().unwrap().len(), 1);

    let (_, comments) = get(&gh, "/repos/octo/hello/issues/1/comments").await;
    assert_eq!(comments[0]["user"]["login"], "bob");

    let (_, pull) = get(&gh, "/repos/octo/hello/pulls/3").await;
    assert_eq!(
        (pull["head"]["ref"].as_str(), pull["base"]["ref"].as_str()),
        (Some("feature"), Some("main"))
    );
    assert_eq!(
        (pull["merged"].as_bool(), pull["draft"].as_bool()),
        (Some(false), Some(false))
    );
    let (_, files) = get(&gh, "/repos/octo/hello/pulls/3/files").await;
    assert_eq!(files, json!([files[0].clone()]));
    assert_eq!(
        (
            files[0]["filename"].as_str(),
            files[0]["status"].as_str(),
            files[0]["additions"].as_u64(),
            files[0]["deletions"].as_u64()
        ),
        (Some("src/lib.rs"), Some("modified"), Some(3), Some(1))
    );
    assert_eq!(
        get(&gh, "/repos/octo/hello/pulls/1").await.0,
        404,
        "an issue is not a pull request"
    );
    assert_eq!(get(&gh, "/repos/octo/hello/issues/99").await.0, 404);

    let (status, comment) = call(
        &gh,
        "POST",
        "/repos/octo/hello/issues/1/comments",
        Some(TOKEN),
        Some(json!({"body": "Looking."})),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(comment["user"]["login"], "scout-bot");
    assert!(
        comment["html_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("#issuecomment-{}", comment["id"]))
    );
    assert_eq!(
        gh.comments("octo", "hello", 1),
        ["I can reproduce this on Linux.", "Looking."]
    );

    let new_pull = json!({"title": "T", "head": "nope", "base": "main"});
    assert_eq!(
        call(
            &gh,
            "POST",
            "/repos/octo/hello/pulls",
            Some(TOKEN),
            Some(new_pull)
        )
        .await
        .0,
        422
    );
    let new_pull = json!({"title": "Second", "head": "feature", "base": "main", "draft": true});
    let (status, created) = call(
        &gh,
        "POST",
        "/repos/octo/hello/pulls",
        Some(TOKEN),
        Some(new_pull),
    )
    .await;
    assert_eq!(
        (
            status,
            created["number"].as_u64(),
            created["draft"].as_bool()
        ),
        (201, Some(4), Some(true))
    );
    assert_eq!(gh.pull_titles("octo", "hello"), ["Add feature", "Second"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn moves_refs_fast_forward_only() {
    let gh = FakeGitHub::start(TOKEN).await;
    let main = gh.branch_sha("octo", "hello", "main").unwrap();
    let post = |path: &'static str, body: Value| {
        let gh = &gh;
        async move { call(gh, "POST", path, Some(TOKEN), Some(body)).await }
    };

    // Create `scout/work` from main; creating it again is refused.
    let new_ref = json!({"ref": "refs/heads/scout/work", "sha": main});
    let (status, created) = post("/repos/octo/hello/git/refs", new_ref.clone()).await;
    assert_eq!(
        (status, created["object"]["sha"].as_str()),
        (201, Some(main.as_str()))
    );
    let (status, body) = post("/repos/octo/hello/git/refs", new_ref).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (422, Some("Reference already exists"))
    );

    // Branch names with `/` are read back raw or percent-encoded.
    let (_, read) = get(&gh, "/repos/octo/hello/git/ref/heads/scout%2Fwork").await;
    assert_eq!(read["object"]["sha"], main.as_str());
    let (_, read) = get(&gh, "/repos/octo/hello/git/ref/heads/scout/work").await;
    assert_eq!(read["ref"], "refs/heads/scout/work");

    // parent -> tree -> new tree -> new commit -> fast-forward.
    let (_, parent) = get(&gh, &format!("/repos/octo/hello/git/commits/{main}")).await;
    let base_tree = parent["tree"]["sha"].as_str().unwrap().to_string();
    let tree = json!({"base_tree": base_tree, "tree": [{"path": "docs/notes.md", "mode": "100644", "type": "blob", "content": "notes\n"}]});
    let (status, tree) = post("/repos/octo/hello/git/trees", tree).await;
    assert_eq!(status, 201);
    let commit = json!({"message": "Add notes", "tree": tree["sha"], "parents": [main]});
    let (status, commit) = post("/repos/octo/hello/git/commits", commit).await;
    assert_eq!(status, 201);
    let new = commit["sha"].as_str().unwrap().to_string();
    assert_eq!(new.len(), 40);
    assert!(new.bytes().all(|b| b.is_ascii_hexdigit()));

    let (status, _) = call(
        &gh,
        "PATCH",
        "/repos/octo/hello/git/refs/heads/scout%2Fwork",
        Some(TOKEN),
        Some(json!({"sha": new, "force": false})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        gh.branch_sha("octo", "hello", "scout/work").as_deref(),
        Some(new.as_str())
    );
    assert_eq!(
        gh.file_text("octo", "hello", "scout/work", "docs/notes.md")
            .as_deref(),
        Some("notes\n")
    );
    assert_eq!(
        gh.file_text("octo", "hello", "scout/work", "README.md")
            .as_deref(),
        Some("# Hello\n")
    );
    assert_eq!(gh.file_text("octo", "hello", "main", "docs/notes.md"), None);
    assert_eq!(
        gh.commit_message("octo", "hello", &new).as_deref(),
        Some("Add notes")
    );

    // A sibling commit (parent: the old head) is not a fast-forward of the new head.
    let sibling = json!({"message": "Sibling", "tree": base_tree, "parents": [main]});
    let (_, sibling) = post("/repos/octo/hello/git/commits", sibling).await;
    let sibling = sibling["sha"].as_str().unwrap().to_string();
    let (status, body) = call(
        &gh,
        "PATCH",
        "/repos/octo/hello/git/refs/heads/scout/work",
        Some(TOKEN),
        Some(json!({"sha": sibling, "force": false})),
    )
    .await;
    assert_eq!(
        (status, body["message"].as_str()),
        (422, Some("Update is not a fast forward"))
    );
    assert_eq!(
        gh.branch_sha("octo", "hello", "scout/work").as_deref(),
        Some(new.as_str())
    );
    // Moving back to an ancestor is not a fast-forward either.
    let (status, _) = call(
        &gh,
        "PATCH",
        "/repos/octo/hello/git/refs/heads/scout/work",
        Some(TOKEN),
        Some(json!({"sha": main})),
    )
    .await;
    assert_eq!(status, 422);
    // Only force moves it.
    let (status, _) = call(
        &gh,
        "PATCH",
        "/repos/octo/hello/git/refs/heads/scout/work",
        Some(TOKEN),
        Some(json!({"sha": sibling, "force": true})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        gh.branch_sha("octo", "hello", "scout/work").as_deref(),
        Some(sibling.as_str())
    );

    let (status, _) = call(
        &gh,
        "PATCH",
        "/repos/octo/hello/git/refs/heads/nope",
        Some(TOKEN),
        Some(json!({"sha": new})),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        get(&gh, "/repos/octo/hello/git/ref/heads/nope").await.0,
        404
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn shuts_down_when_dropped() {
    let gh = FakeGitHub::start(TOKEN).await;
    let addr = gh.origin().trim_start_matches("http://").to_string();
    drop(gh);
    let mut refused = false;
    for _ in 0..50 {
        if TcpStream::connect(&addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(refused, "the listener is closed after drop");
}
