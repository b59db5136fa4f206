//! A loopback fake of the parts of the GitHub REST API the GitHub connector
//! uses, with an in-memory git model (commits → trees of path → content) so
//! that writes can be checked afterwards.
//!
//! Every request is recorded (including refused ones) before the
//! `Authorization: Bearer {token}` check. Answers use GitHub's documented field
//! names and status codes: 401 `Bad credentials`, 404 `Not Found`, 422 for
//! failed validations (existing ref, non-fast-forward update, missing head
//! branch...).
//!
//! Seeded repository `octo/hello` (default branch `main`):
//!
//! - `main`: one commit "Initial commit" with `README.md` (`# Hello\n`),
//!   `src/lib.rs`, `.github/workflows/ci.yml` and the binary `logo.png`
//!   (`89 50 4E 47 FF FE`, not UTF-8).
//! - `feature`: one commit "Add feature" on top of `main` changing
//!   `src/lib.rs` (+3 −1).
//! - Issues: #1 open "Crash on start" by `alice`, label `bug`, one comment by
//!   `bob`; #2 closed "Old request" by `carol` (null body); #3 is the open pull
//!   request "Add feature" by `dave`, `feature` → `main`, not a draft, not
//!   merged.
//!
//! Shas are 40 hex characters derived from content (blobs, trees) or from a
//! counter (commits); read them with [`FakeGitHub::branch_sha`].

use axum::Router;
use axum::body::to_bytes;
use axum::extract::{Query, Request, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Largest request body read.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// The login of the token's user: the author of everything created through the API.
const BOT: &str = "scout-bot";
/// Every timestamp the fake answers.
const TIMESTAMP: &str = "2024-01-01T00:00:00Z";

/// One request as the fake received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// `GET`, `POST`...
    pub method: String,
    /// The path as sent, still percent-encoded.
    pub path: String,
    /// The raw query string, if any.
    pub query: Option<String>,
    /// Headers in order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first value of a header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A running fake GitHub API server on 127.0.0.1. Dropping it shuts the server down.
pub struct FakeGitHub {
    origin: String,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl FakeGitHub {
    /// Starts on 127.0.0.1:0 with the seeded repository; requests must carry
    /// `Authorization: Bearer {token}`, else 401 {"message":"Bad credentials"}.
    ///
    /// Must be called inside a tokio runtime.
    pub async fn start(token: &str) -> FakeGitHub {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind 127.0.0.1:0");
        FakeGitHub::serve(listener, token)
    }

    /// Starts on 127.0.0.1:`port` (for `scout-host fake-github`, which a
    /// configuration file names by its origin).
    pub async fn start_on(port: u16, token: &str) -> std::io::Result<FakeGitHub> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        Ok(FakeGitHub::serve(listener, token))
    }

    fn serve(listener: tokio::net::TcpListener, token: &str) -> FakeGitHub {
        let addr = listener.local_addr().expect("local address");
        let origin = format!("http://{addr}");
        let shared = Arc::new(Shared {
            token: token.to_string(),
            origin: origin.clone(),
            requests: Mutex::new(Vec::new()),
            world: Mutex::new(World::seeded()),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        FakeGitHub {
            origin,
            shared,
            shutdown: Some(tx),
        }
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn origin(&self) -> String {
        self.origin.clone()
    }

    /// Every request received, in order, including 401s and 404s.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The `ref` of every branch-creation request (`POST /repos/O/R/git/refs`)
    /// received, in arrival order, refused ones included (an existing ref,
    /// bad credentials): a branch asked for twice appears twice. Cheaper to
    /// poll than [`FakeGitHub::requests`], which copies every body.
    pub fn ref_creations(&self) -> Vec<String> {
        let requests = self.shared.requests.lock().unwrap();
        requests
            .iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/git/refs"))
            .map(|r| {
                serde_json::from_slice::<Value>(&r.body)
                    .ok()
                    .and_then(|b| b.get("ref").and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_default()
            })
            .collect()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.shared.requests.lock().unwrap().clear();
    }

    /// The commit sha a branch points at.
    pub fn branch_sha(&self, owner: &str, repo: &str, branch: &str) -> Option<String> {
        let world = self.shared.world.lock().unwrap();
        world.repo(owner, repo)?.branches.get(branch).cloned()
    }

    /// A file's content at a branch head, if it exists and is UTF-8.
    pub fn file_text(&self, owner: &str, repo: &str, branch: &str, path: &str) -> Option<String> {
        let world = self.shared.world.lock().unwrap();
        let repo = world.repo(owner, repo)?;
        let head = repo.branches.get(branch)?;
        let bytes = repo.files_at(head)?.get(path)?;
        String::from_utf8(bytes.clone()).ok()
    }

    /// The message of a commit.
    pub fn commit_message(&self, owner: &str, repo: &str, sha: &str) -> Option<String> {
        let world = self.shared.world.lock().unwrap();
        Some(world.repo(owner, repo)?.commits.get(sha)?.message.clone())
    }

    /// The bodies of the comments on an issue or pull request, oldest first.
    pub fn comments(&self, owner: &str, repo: &str, number: u64) -> Vec<String> {
        let world = self.shared.world.lock().unwrap();
        world
            .repo(owner, repo)
            .and_then(|r| r.issues.get(&number))
            .map(|i| i.comments.iter().map(|c| c.body.clone()).collect())
            .unwrap_or_default()
    }

    /// The titles of all pull requests, in number order.
    pub fn pull_titles(&self, owner: &str, repo: &str) -> Vec<String> {
        let world = self.shared.world.lock().unwrap();
        world
            .repo(owner, repo)
            .map(|r| {
                r.issues
                    .values()
                    .filter(|i| i.pull.is_some())
                    .map(|i| i.title.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

// ---------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------

struct Shared {
    token: String,
    origin: String,
    requests: Mutex<Vec<RecordedRequest>>,
    world: Mutex<World>,
}

/// A snapshot of a repository's files: path → content.
type Files = BTreeMap<String, Vec<u8>>;

struct World {
    /// Keyed by lowercased `owner/repo`: GitHub names are case-insensitive.
    repos: BTreeMap<String, Repo>,
    next_comment_id: u64,
    commit_counter: u64,
}

struct Repo {
    id: u64,
    owner: String,
    name: String,
    default_branch: String,
    branches: BTreeMap<String, String>,
    commits: BTreeMap<String, CommitObject>,
    trees: BTreeMap<String, Files>,
    blobs: BTreeMap<String, Vec<u8>>,
    issues: BTreeMap<u64, Issue>,
    next_number: u64,
}

struct CommitObject {
    tree: String,
    parents: Vec<String>,
    message: String,
}

struct Issue {
    number: u64,
    title: String,
    body: Option<String>,
    open: bool,
    author: String,
    labels: Vec<String>,
    comments: Vec<IssueComment>,
    pull: Option<Pull>,
}

struct IssueComment {
    id: u64,
    author: String,
    body: String,
}

struct Pull {
    head: String,
    base: String,
    draft: bool,
    merged: bool,
}

impl World {
    fn seeded() -> World {
        let mut world = World {
            repos: BTreeMap::new(),
            next_comment_id: 1001,
            commit_counter: 0,
        };
        let mut repo = Repo {
            id: 1296269,
            owner: "octo".into(),
            name: "hello".into(),
            default_branch: "main".into(),
            branches: BTreeMap::new(),
            commits: BTreeMap::new(),
            trees: BTreeMap::new(),
            blobs: BTreeMap::new(),
            issues: BTreeMap::new(),
            next_number: 4,
        };
        let mut files = Files::new();
        files.insert("README.md".into(), b"# Hello\n".to_vec());
        files.insert(
            "src/lib.rs".into(),
            b"pub fn hello() -> &'static str {\n    \"hello\"\n}\n".to_vec(),
        );
        files.insert(
            ".github/workflows/ci.yml".into(),
            b"name: CI\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: cargo test\n"
                .to_vec(),
        );
        files.insert("logo.png".into(), vec![0x89, 0x50, 0x4E, 0x47, 0xFF, 0xFE]);
        let tree = repo.store_tree(files.clone());
        let main = world.new_commit(&mut repo, tree, vec![], "Initial commit");
        repo.branches.insert("main".into(), main.clone());

        files.insert(
            "src/lib.rs".into(),
            b"pub fn hello() -> &'static str {\n    \"hello, world\"\n}\n\npub fn feature() -> bool { true }\n".to_vec(),
        );
        let tree = repo.store_tree(files);
        let feature = world.new_commit(&mut repo, tree, vec![main], "Add feature");
        repo.branches.insert("feature".into(), feature);

        repo.issues.insert(
            1,
            Issue {
                number: 1,
                title: "Crash on start".into(),
                body: Some("The app crashes right after it starts.".into()),
                open: true,
                author: "alice".into(),
                labels: vec!["bug".into()],
                comments: vec![IssueComment {
                    id: 1000,
                    author: "bob".into(),
                    body: "I can reproduce this on Linux.".into(),
                }],
                pull: None,
            },
        );
        repo.issues.insert(
            2,
            Issue {
                number: 2,
                title: "Old request".into(),
                body: None,
                open: false,
                author: "carol".into(),
                labels: vec![],
                comments: vec![],
                pull: None,
            },
        );
        repo.issues.insert(
            3,
            Issue {
                number: 3,
                title: "Add feature".into(),
                body: Some("Adds `feature()`.".into()),
                open: true,
                author: "dave".into(),
                labels: vec![],
                comments: vec![],
                pull: Some(Pull {
                    head: "feature".into(),
                    base: "main".into(),
                    draft: false,
                    merged: false,
                }),
            },
        );
        world.repos.insert("octo/hello".into(), repo);
        world
    }

    fn repo(&self, owner: &str, repo: &str) -> Option<&Repo> {
        self.repos
            .get(&format!("{owner}/{repo}").to_ascii_lowercase())
    }

    fn new_commit(
        &mut self,
        repo: &mut Repo,
        tree: String,
        parents: Vec<String>,
        message: &str,
    ) -> String {
        self.commit_counter += 1;
        let sha = fake_sha(
            format!(
                "commit {} {tree} {parents:?} {message}",
                self.commit_counter
            )
            .as_bytes(),
        );
        repo.commits.insert(
            sha.clone(),
            CommitObject {
                tree,
                parents,
                message: message.to_string(),
            },
        );
        sha
    }
}

impl Repo {
    fn store_tree(&mut self, files: Files) -> String {
        let sha = tree_sha(&files, "");
        for content in files.values() {
            self.blobs.insert(blob_sha(content), content.clone());
        }
        self.trees.insert(sha.clone(), files);
        sha
    }

    fn files_at(&self, commit: &str) -> Option<&Files> {
        self.trees.get(&self.commits.get(commit)?.tree)
    }

    /// A branch name (optionally `refs/heads/` or `heads/`), a full commit sha
    /// or a unique prefix of at least 7 characters.
    fn resolve(&self, git_ref: &str) -> Option<String> {
        let name = git_ref
            .strip_prefix("refs/heads/")
            .or_else(|| git_ref.strip_prefix("heads/"))
            .unwrap_or(git_ref);
        if let Some(sha) = self.branches.get(name) {
            return Some(sha.clone());
        }
        if git_ref.len() >= 7 && git_ref.bytes().all(|b| b.is_ascii_hexdigit()) {
            let lower = git_ref.to_ascii_lowercase();
            let mut matches = self.commits.keys().filter(|k| k.starts_with(&lower));
            if let (Some(sha), None) = (matches.next(), matches.next()) {
                return Some(sha.clone());
            }
        }
        None
    }

    fn is_ancestor(&self, ancestor: &str, of: &str) -> bool {
        self.ancestors(of).contains(ancestor)
    }

    fn ancestors(&self, of: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::from([of.to_string()]);
        while let Some(sha) = queue.pop_front() {
            if seen.insert(sha.clone())
                && let Some(c) = self.commits.get(&sha)
            {
                queue.extend(c.parents.iter().cloned());
            }
        }
        seen
    }

    fn merge_base(&self, a: &str, b: &str) -> Option<String> {
        let of_a = self.ancestors(a);
        let mut queue = VecDeque::from([b.to_string()]);
        let mut seen = BTreeSet::new();
        while let Some(sha) = queue.pop_front() {
            if of_a.contains(&sha) {
                return Some(sha);
            }
            if seen.insert(sha.clone())
                && let Some(c) = self.commits.get(&sha)
            {
                queue.extend(c.parents.iter().cloned());
            }
        }
        None
    }
}

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------

type Reply = (StatusCode, Value);

fn message(status: StatusCode, message: &str) -> Reply {
    (
        status,
        json!({ "message": message, "documentation_url": "https://docs.github.com/rest", "status": status.as_u16().to_string() }),
    )
}

fn not_found() -> Reply {
    message(StatusCode::NOT_FOUND, "Not Found")
}

fn unprocessable(msg: &str) -> Reply {
    message(StatusCode::UNPROCESSABLE_ENTITY, msg)
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = to_bytes(body, MAX_BODY)
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default();
    shared.requests.lock().unwrap().push(RecordedRequest {
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(str::to_string),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.clone(),
    });

    let expected = format!("Bearer {}", shared.token);
    let authorized = parts.headers.get_all("authorization").iter().count() == 1
        && parts
            .headers
            .get("authorization")
            .is_some_and(|v| v.as_bytes() == expected.as_bytes());
    let (status, value) = if authorized {
        let mut world = shared.world.lock().unwrap();
        route(
            &mut world,
            &shared.origin,
            parts.method.as_str(),
            &parts.uri,
            &body,
        )
    } else {
        message(StatusCode::UNAUTHORIZED, "Bad credentials")
    };
    let mut response = (status, axum::Json(value)).into_response();
    response.headers_mut().insert(
        "x-github-media-type",
        "github.v3; format=json".parse().unwrap(),
    );
    response
}

fn route(world: &mut World, origin: &str, method: &str, uri: &Uri, body: &[u8]) -> Reply {
    let Some(segments) = uri
        .path()
        .strip_prefix('/')
        .unwrap_or(uri.path())
        .split('/')
        .map(percent_decode)
        .collect::<Option<Vec<String>>>()
    else {
        return not_found();
    };
    let query: BTreeMap<String, String> = match Query::<Vec<(String, String)>>::try_from_uri(uri) {
        Ok(Query(pairs)) => pairs.into_iter().collect(),
        Err(_) => BTreeMap::new(),
    };
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let ["repos", owner, name, rest @ ..] = segs.as_slice() else {
        return not_found();
    };
    let key = format!("{owner}/{name}").to_ascii_lowercase();
    let mut ctx = Ctx {
        world,
        key,
        origin,
        query,
    };
    let json_body = || -> Result<Value, Reply> {
        serde_json::from_slice(body)
            .map_err(|_| message(StatusCode::BAD_REQUEST, "Problems parsing JSON"))
    };
    if !ctx.world.repos.contains_key(&ctx.key) {
        return not_found();
    }
    let result = match (method, rest) {
        ("GET", []) => Ok(ctx.repository()),
        ("GET", ["contents"]) => ctx.contents(""),
        ("GET", ["contents", path @ ..]) => ctx.contents(&path.join("/")),
        ("GET", ["branches"]) => Ok(ctx.branches()),
        ("GET", ["issues"]) => Ok(ctx.list_issues()),
        ("GET", ["issues", n]) => ctx.issue(n),
        ("GET", ["issues", n, "comments"]) => ctx.issue_comments(n),
        ("POST", ["issues", n, "comments"]) => json_body().and_then(|b| ctx.create_comment(n, &b)),
        ("GET", ["pulls"]) => Ok(ctx.list_pulls()),
        ("POST", ["pulls"]) => json_body().and_then(|b| ctx.create_pull(&b)),
        ("GET", ["pulls", n]) => ctx.pull(n),
        ("GET", ["pulls", n, "files"]) => ctx.pull_files(n),
        ("GET", ["git", "ref", r @ ..]) | ("GET", ["git", "refs", r @ ..]) if !r.is_empty() => {
            ctx.get_ref(&r.join("/"))
        }
        ("POST", ["git", "refs"]) => json_body().and_then(|b| ctx.create_ref(&b)),
        ("PATCH", ["git", "refs", r @ ..]) if !r.is_empty() => {
            json_body().and_then(|b| ctx.update_ref(&r.join("/"), &b))
        }
        ("GET", ["git", "commits", sha]) => ctx.get_commit(sha),
        ("POST", ["git", "commits"]) => json_body().and_then(|b| ctx.create_commit(&b)),
        ("GET", ["git", "trees", sha]) => ctx.get_tree(sha),
        ("POST", ["git", "trees"]) => json_body().and_then(|b| ctx.create_tree(&b)),
        _ => Err(not_found()),
    };
    result.unwrap_or_else(|e| e)
}

/// Decodes `%XX` escapes in one path segment; `None` if the result is not UTF-8.
fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex_val(bytes[i + 1]), hex_val(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

fn hex_val(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

// ---------------------------------------------------------------------------
// Endpoints
// ---------------------------------------------------------------------------

struct Ctx<'a> {
    world: &'a mut World,
    key: String,
    origin: &'a str,
    query: BTreeMap<String, String>,
}

type Answer = Result<Reply, Reply>;

fn ok(value: Value) -> Reply {
    (StatusCode::OK, value)
}

fn created(value: Value) -> Reply {
    (StatusCode::CREATED, value)
}

impl Ctx<'_> {
    fn repo(&self) -> &Repo {
        &self.world.repos[&self.key]
    }

    fn repo_mut(&mut self) -> &mut Repo {
        self.world.repos.get_mut(&self.key).unwrap()
    }

    fn api(&self, rest: &str) -> String {
        let r = self.repo();
        format!("{}/repos/{}/{}{rest}", self.origin, r.owner, r.name)
    }

    fn html(&self, rest: &str) -> String {
        let r = self.repo();
        format!("https://github.com/{}/{}{rest}", r.owner, r.name)
    }

    /// `per_page` (default 30, at most 100) and `page` (from 1) applied to a list.
    fn paginate<T>(&self, items: Vec<T>) -> Vec<T> {
        let per_page = self
            .query
            .get("per_page")
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(30)
            .min(100);
        let page = self
            .query
            .get("page")
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(1);
        items
            .into_iter()
            .skip((page - 1) * per_page)
            .take(per_page)
            .collect()
    }

    /// The `state` filter of issue and pull lists (default `open`).
    fn state_matches(&self, open: bool) -> bool {
        match self
            .query
            .get("state")
            .map(String::as_str)
            .unwrap_or("open")
        {
            "closed" => !open,
            "all" => true,
            _ => open,
        }
    }

    fn repository(&self) -> Reply {
        let r = self.repo();
        ok(json!({
            "id": r.id,
            "node_id": "R_fake",
            "name": r.name,
            "full_name": format!("{}/{}", r.owner, r.name),
            "private": false,
            "owner": user(&r.owner),
            "html_url": self.html(""),
            "description": "A repository served by the fake GitHub.",
            "fork": false,
            "url": self.api(""),
            "default_branch": r.default_branch,
            "visibility": "public",
            "has_issues": true,
            "permissions": { "admin": false, "maintain": false, "push": true, "triage": true, "pull": true },
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
            "pushed_at": TIMESTAMP,
        }))
    }

    fn contents(&self, path: &str) -> Answer {
        let r = self.repo();
        let path = path.trim_matches('/');
        let commit = match self.query.get("ref").filter(|v| !v.is_empty()) {
            Some(git_ref) => r.resolve(git_ref).ok_or_else(not_found)?,
            None => r
                .branches
                .get(&r.default_branch)
                .cloned()
                .ok_or_else(not_found)?,
        };
        let files = r.files_at(&commit).ok_or_else(not_found)?;
        if let Some(content) = files.get(path) {
            let encoded = base64::engine::general_purpose::STANDARD.encode(content);
            let mut wrapped = String::with_capacity(encoded.len() + encoded.len() / 60 + 1);
            for chunk in encoded.as_bytes().chunks(60) {
                wrapped.push_str(std::str::from_utf8(chunk).unwrap());
                wrapped.push('\n');
            }
            let mut value = self.content_entry(path, "file", content.len(), &blob_sha(content));
            value["encoding"] = json!("base64");
            value["content"] = json!(wrapped);
            return Ok(ok(value));
        }
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}/")
        };
        let mut entries: BTreeMap<String, Value> = BTreeMap::new();
        for (file, content) in files.range(prefix.clone()..) {
            let Some(rel) = file.strip_prefix(&prefix) else {
                break;
            };
            let full = |name: &str| format!("{prefix}{name}");
            match rel.split_once('/') {
                None => {
                    entries.insert(
                        rel.to_string(),
                        self.content_entry(&full(rel), "file", content.len(), &blob_sha(content)),
                    );
                }
                Some((dir, _)) => {
                    if !entries.contains_key(dir) {
                        let sha = tree_sha(files, &full(dir));
                        entries.insert(
                            dir.to_string(),
                            self.content_entry(&full(dir), "dir", 0, &sha),
                        );
                    }
                }
            }
        }
        if entries.is_empty() {
            return Err(not_found());
        }
        Ok(ok(Value::Array(entries.into_values().collect())))
    }

    fn content_entry(&self, path: &str, kind: &str, size: usize, sha: &str) -> Value {
        let name = path.rsplit('/').next().unwrap_or(path);
        let url = self.api(&format!("/contents/{path}"));
        let git_url = self.api(&format!(
            "/git/{}/{sha}",
            if kind == "dir" { "trees" } else { "blobs" }
        ));
        let html_url = self.html(&format!(
            "/{}/{}/{path}",
            if kind == "dir" { "tree" } else { "blob" },
            self.repo().default_branch
        ));
        let download_url = if kind == "file" {
            Value::String(format!(
                "https://raw.githubusercontent.com/{}/{}/{}/{path}",
                self.repo().owner,
                self.repo().name,
                self.repo().default_branch
            ))
        } else {
            Value::Null
        };
        json!({
            "type": kind,
            "size": size,
            "name": name,
            "path": path,
            "sha": sha,
            "url": url,
            "git_url": git_url,
            "html_url": html_url,
            "download_url": download_url,
            "_links": { "self": url, "git": git_url, "html": html_url },
        })
    }

    fn branches(&self) -> Reply {
        let r = self.repo();
        let list: Vec<Value> = r
            .branches
            .iter()
            .map(|(name, sha)| {
                json!({
                    "name": name,
                    "commit": { "sha": sha, "url": self.api(&format!("/commits/{sha}")) },
                    "protected": false,
                })
            })
            .collect();
        ok(Value::Array(self.paginate(list)))
    }

    fn number(&self, n: &str) -> Result<u64, Reply> {
        let n: u64 = n.parse().map_err(|_| not_found())?;
        if self.repo().issues.contains_key(&n) {
            Ok(n)
        } else {
            Err(not_found())
        }
    }

    fn issue_json(&self, issue: &Issue) -> Value {
        let kind = if issue.pull.is_some() {
            "pull"
        } else {
            "issues"
        };
        let mut value = json!({
            "id": 10_000 + issue.number,
            "node_id": format!("I_fake{}", issue.number),
            "url": self.api(&format!("/issues/{}", issue.number)),
            "html_url": self.html(&format!("/{kind}/{}", issue.number)),
            "number": issue.number,
            "state": if issue.open { "open" } else { "closed" },
            "state_reason": if issue.open { Value::Null } else { json!("completed") },
            "title": issue.title,
            "body": issue.body,
            "user": user(&issue.author),
            "labels": issue.labels.iter().enumerate().map(|(i, l)| json!({
                "id": 208_045_946 + i as u64, "name": l, "color": "d73a4a", "default": true, "description": Value::Null,
            })).collect::<Vec<_>>(),
            "assignee": Value::Null,
            "assignees": [],
            "locked": false,
            "comments": issue.comments.len(),
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
            "closed_at": if issue.open { Value::Null } else { json!(TIMESTAMP) },
            "author_association": "CONTRIBUTOR",
        });
        if let Some(pull) = &issue.pull {
            value["draft"] = json!(pull.draft);
            value["pull_request"] = json!({
                "url": self.api(&format!("/pulls/{}", issue.number)),
                "html_url": self.html(&format!("/pull/{}", issue.number)),
                "diff_url": self.html(&format!("/pull/{}.diff", issue.number)),
                "patch_url": self.html(&format!("/pull/{}.patch", issue.number)),
                "merged_at": Value::Null,
            });
        }
        value
    }

    fn list_issues(&self) -> Reply {
        let r = self.repo();
        let list: Vec<Value> = r
            .issues
            .values()
            .rev()
            .filter(|i| self.state_matches(i.open))
            .map(|i| self.issue_json(i))
            .collect();
        ok(Value::Array(self.paginate(list)))
    }

    fn issue(&self, n: &str) -> Answer {
        let n = self.number(n)?;
        Ok(ok(self.issue_json(&self.repo().issues[&n])))
    }

    fn comment_json(&self, number: u64, comment: &IssueComment) -> Value {
        let kind = if self.repo().issues[&number].pull.is_some() {
            "pull"
        } else {
            "issues"
        };
        json!({
            "id": comment.id,
            "node_id": format!("IC_fake{}", comment.id),
            "url": self.api(&format!("/issues/comments/{}", comment.id)),
            "html_url": self.html(&format!("/{kind}/{number}#issuecomment-{}", comment.id)),
            "issue_url": self.api(&format!("/issues/{number}")),
            "body": comment.body,
            "user": user(&comment.author),
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
            "author_association": "CONTRIBUTOR",
        })
    }

    fn issue_comments(&self, n: &str) -> Answer {
        let n = self.number(n)?;
        let list: Vec<Value> = self.repo().issues[&n]
            .comments
            .iter()
            .map(|c| self.comment_json(n, c))
            .collect();
        Ok(ok(Value::Array(self.paginate(list))))
    }

    fn create_comment(&mut self, n: &str, body: &Value) -> Answer {
        let n = self.number(n)?;
        let text = body
            .get("body")
            .and_then(Value::as_str)
            .filter(|b| !b.is_empty());
        let Some(text) = text else {
            return Err(unprocessable("Validation Failed: body is missing"));
        };
        let id = self.world.next_comment_id;
        self.world.next_comment_id += 1;
        let comment = IssueComment {
            id,
            author: BOT.to_string(),
            body: text.to_string(),
        };
        let value = self.comment_json(n, &comment);
        self.repo_mut()
            .issues
            .get_mut(&n)
            .unwrap()
            .comments
            .push(comment);
        Ok(created(value))
    }

    fn pull_json(&self, issue: &Issue, full: bool) -> Value {
        let r = self.repo();
        let pull = issue.pull.as_ref().expect("a pull request");
        let side = |branch: &str| {
            json!({
                "label": format!("{}:{branch}", r.owner),
                "ref": branch,
                "sha": r.branches.get(branch).cloned().unwrap_or_default(),
                "user": user(&r.owner),
                "repo": { "id": r.id, "name": r.name, "full_name": format!("{}/{}", r.owner, r.name) },
            })
        };
        let mut value = json!({
            "id": 20_000 + issue.number,
            "node_id": format!("PR_fake{}", issue.number),
            "url": self.api(&format!("/pulls/{}", issue.number)),
            "html_url": self.html(&format!("/pull/{}", issue.number)),
            "number": issue.number,
            "state": if issue.open { "open" } else { "closed" },
            "locked": false,
            "title": issue.title,
            "body": issue.body,
            "user": user(&issue.author),
            "labels": [],
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
            "closed_at": if issue.open { Value::Null } else { json!(TIMESTAMP) },
            "merged_at": if pull.merged { json!(TIMESTAMP) } else { Value::Null },
            "head": side(&pull.head),
            "base": side(&pull.base),
            "draft": pull.draft,
            "author_association": "CONTRIBUTOR",
        });
        if full {
            let files = self.diff(pull);
            value["merged"] = json!(pull.merged);
            value["mergeable"] = json!(true);
            value["comments"] = json!(issue.comments.len());
            value["commits"] = json!(1);
            value["additions"] = json!(files.iter().map(|f| f.additions).sum::<usize>());
            value["deletions"] = json!(files.iter().map(|f| f.deletions).sum::<usize>());
            value["changed_files"] = json!(files.len());
        }
        value
    }

    fn list_pulls(&self) -> Reply {
        let r = self.repo();
        let list: Vec<Value> = r
            .issues
            .values()
            .rev()
            .filter(|i| i.pull.is_some() && self.state_matches(i.open))
            .map(|i| self.pull_json(i, false))
            .collect();
        ok(Value::Array(self.paginate(list)))
    }

    fn pull_number(&self, n: &str) -> Result<u64, Reply> {
        let n = self.number(n)?;
        if self.repo().issues[&n].pull.is_some() {
            Ok(n)
        } else {
            Err(not_found())
        }
    }

    fn pull(&self, n: &str) -> Answer {
        let n = self.pull_number(n)?;
        Ok(ok(self.pull_json(&self.repo().issues[&n], true)))
    }

    /// Files changed between the merge base of the pull request's branches and its head.
    fn diff(&self, pull: &Pull) -> Vec<FileDiff> {
        let r = self.repo();
        let (Some(head), Some(base)) = (r.branches.get(&pull.head), r.branches.get(&pull.base))
        else {
            return Vec::new();
        };
        let empty = Files::new();
        let from = r
            .merge_base(base, head)
            .and_then(|c| r.files_at(&c))
            .unwrap_or(&empty);
        let to = r.files_at(head).unwrap_or(&empty);
        let paths: BTreeSet<&String> = from.keys().chain(to.keys()).collect();
        paths
            .into_iter()
            .filter_map(|path| {
                let (old, new) = (from.get(path), to.get(path));
                let status = match (old, new) {
                    (None, Some(_)) => "added",
                    (Some(_), None) => "removed",
                    (Some(a), Some(b)) if a != b => "modified",
                    _ => return None,
                };
                let (additions, deletions) = line_changes(
                    old.map(Vec::as_slice).unwrap_or(b""),
                    new.map(Vec::as_slice).unwrap_or(b""),
                );
                Some(FileDiff {
                    path: path.clone(),
                    status,
                    sha: new.map(|c| blob_sha(c)),
                    additions,
                    deletions,
                })
            })
            .collect()
    }

    fn pull_files(&self, n: &str) -> Answer {
        let n = self.pull_number(n)?;
        let pull = self.repo().issues[&n].pull.as_ref().unwrap();
        let list: Vec<Value> = self
            .diff(pull)
            .into_iter()
            .map(|f| {
                json!({
                    "sha": f.sha,
                    "filename": f.path,
                    "status": f.status,
                    "additions": f.additions,
                    "deletions": f.deletions,
                    "changes": f.additions + f.deletions,
                    "blob_url": self.html(&format!("/blob/{}/{}", pull.head, f.path)),
                    "raw_url": self.html(&format!("/raw/{}/{}", pull.head, f.path)),
                    "contents_url": self.api(&format!("/contents/{}?ref={}", f.path, pull.head)),
                })
            })
            .collect();
        Ok(ok(Value::Array(self.paginate(list))))
    }

    fn create_pull(&mut self, body: &Value) -> Answer {
        let title = body
            .get("title")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty());
        let head = body.get("head").and_then(Value::as_str);
        let base = body.get("base").and_then(Value::as_str);
        let (Some(title), Some(head), Some(base)) = (title, head, base) else {
            return Err(unprocessable(
                "Validation Failed: title, head and base are required",
            ));
        };
        // `owner:branch` names a branch of this repository when the owner is its own.
        let head_branch = match head.split_once(':') {
            Some((owner, branch)) if owner.eq_ignore_ascii_case(&self.repo().owner) => branch,
            Some(_) => {
                return Err(unprocessable(
                    "Validation Failed: head is not a branch of this repository",
                ));
            }
            None => head,
        };
        if !self.repo().branches.contains_key(head_branch) {
            return Err(unprocessable(&format!(
                "Validation Failed: head `{head}` does not exist"
            )));
        }
        if !self.repo().branches.contains_key(base) {
            return Err(unprocessable(&format!(
                "Validation Failed: base `{base}` does not exist"
            )));
        }
        let repo = self.repo_mut();
        let number = repo.next_number;
        repo.next_number += 1;
        repo.issues.insert(
            number,
            Issue {
                number,
                title: title.to_string(),
                body: body.get("body").and_then(Value::as_str).map(str::to_string),
                open: true,
                author: BOT.to_string(),
                labels: vec![],
                comments: vec![],
                pull: Some(Pull {
                    head: head_branch.to_string(),
                    base: base.to_string(),
                    draft: body.get("draft").and_then(Value::as_bool).unwrap_or(false),
                    merged: false,
                }),
            },
        );
        Ok(created(self.pull_json(&self.repo().issues[&number], true)))
    }

    fn ref_json(&self, branch: &str, sha: &str) -> Value {
        json!({
            "ref": format!("refs/heads/{branch}"),
            "node_id": "REF_fake",
            "url": self.api(&format!("/git/refs/heads/{branch}")),
            "object": { "type": "commit", "sha": sha, "url": self.api(&format!("/git/commits/{sha}")) },
        })
    }

    fn get_ref(&self, name: &str) -> Answer {
        let branch = name.strip_prefix("heads/").ok_or_else(not_found)?;
        let sha = self.repo().branches.get(branch).ok_or_else(not_found)?;
        Ok(ok(self.ref_json(branch, sha)))
    }

    fn create_ref(&mut self, body: &Value) -> Answer {
        let (Some(name), Some(sha)) = (
            body.get("ref").and_then(Value::as_str),
            body.get("sha").and_then(Value::as_str),
        ) else {
            return Err(unprocessable("Invalid request: ref and sha are required"));
        };
        let Some(branch) = name
            .strip_prefix("refs/heads/")
            .filter(|b| valid_ref_name(b))
        else {
            return Err(unprocessable(&format!("{name} is not a valid ref name.")));
        };
        if !self.repo().commits.contains_key(sha) {
            return Err(unprocessable("Object does not exist"));
        }
        if self.repo().branches.contains_key(branch) {
            return Err(unprocessable("Reference already exists"));
        }
        self.repo_mut()
            .branches
            .insert(branch.to_string(), sha.to_string());
        Ok(created(self.ref_json(branch, sha)))
    }

    fn update_ref(&mut self, name: &str, body: &Value) -> Answer {
        let Some(sha) = body.get("sha").and_then(Value::as_str) else {
            return Err(unprocessable("Invalid request: sha is required"));
        };
        let force = body.get("force").and_then(Value::as_bool).unwrap_or(false);
        let Some(branch) = name.strip_prefix("heads/") else {
            return Err(unprocessable("Reference does not exist"));
        };
        let Some(current) = self.repo().branches.get(branch).cloned() else {
            return Err(unprocessable("Reference does not exist"));
        };
        if !self.repo().commits.contains_key(sha) {
            return Err(unprocessable("Object does not exist"));
        }
        if !force && !self.repo().is_ancestor(&current, sha) {
            return Err(unprocessable("Update is not a fast forward"));
        }
        self.repo_mut()
            .branches
            .insert(branch.to_string(), sha.to_string());
        Ok(ok(self.ref_json(branch, sha)))
    }

    fn commit_json(&self, sha: &str, commit: &CommitObject) -> Value {
        let person = json!({ "name": "Scout", "email": "scout@example.com", "date": TIMESTAMP });
        json!({
            "sha": sha,
            "node_id": "C_fake",
            "url": self.api(&format!("/git/commits/{sha}")),
            "html_url": self.html(&format!("/commit/{sha}")),
            "author": person,
            "committer": person,
            "message": commit.message,
            "tree": { "sha": commit.tree, "url": self.api(&format!("/git/trees/{}", commit.tree)) },
            "parents": commit.parents.iter().map(|p| json!({
                "sha": p, "url": self.api(&format!("/git/commits/{p}")), "html_url": self.html(&format!("/commit/{p}")),
            })).collect::<Vec<_>>(),
            "verification": { "verified": false, "reason": "unsigned", "signature": Value::Null, "payload": Value::Null },
        })
    }

    fn get_commit(&self, sha: &str) -> Answer {
        let commit = self.repo().commits.get(sha).ok_or_else(not_found)?;
        Ok(ok(self.commit_json(sha, commit)))
    }

    fn create_commit(&mut self, body: &Value) -> Answer {
        let message = body.get("message").and_then(Value::as_str);
        let tree = body.get("tree").and_then(Value::as_str);
        let (Some(message), Some(tree)) = (message, tree) else {
            return Err(unprocessable(
                "Invalid request: message and tree are required",
            ));
        };
        let parents: Vec<String> = match body.get("parents") {
            None | Some(Value::Null) => vec![],
            Some(Value::Array(list)) => {
                let parents: Option<Vec<String>> = list
                    .iter()
                    .map(|p| p.as_str().map(str::to_string))
                    .collect();
                parents.ok_or_else(|| unprocessable("Invalid request: parents must be shas"))?
            }
            Some(_) => return Err(unprocessable("Invalid request: parents must be an array")),
        };
        if !self.repo().trees.contains_key(tree) {
            return Err(unprocessable("Tree SHA does not exist"));
        }
        if parents.iter().any(|p| !self.repo().commits.contains_key(p)) {
            return Err(unprocessable(
                "Parent SHA does not exist or is not a commit object",
            ));
        }
        let key = self.key.clone();
        let world = &mut *self.world;
        let mut repo = world.repos.remove(&key).unwrap();
        let sha = world.new_commit(&mut repo, tree.to_string(), parents, message);
        world.repos.insert(key, repo);
        let commit = &self.repo().commits[&sha];
        Ok(created(self.commit_json(&sha, commit)))
    }

    fn tree_json(&self, sha: &str, files: &Files) -> Value {
        let recursive = self
            .query
            .get("recursive")
            .is_some_and(|v| !v.is_empty() && v != "0" && v != "false");
        let mut entries: BTreeMap<String, Value> = BTreeMap::new();
        for (path, content) in files {
            let parts: Vec<&str> = path.split('/').collect();
            let depth = if recursive { parts.len() } else { 1 };
            for d in 1..=depth {
                let sub = parts[..d].join("/");
                if d < parts.len() {
                    entries.entry(sub.clone()).or_insert_with(|| {
                        let sha = tree_sha(files, &sub);
                        json!({ "path": sub, "mode": "040000", "type": "tree", "sha": sha, "url": self.api(&format!("/git/trees/{sha}")) })
                    });
                } else {
                    let sha = blob_sha(content);
                    entries.insert(
                        sub.clone(),
                        json!({ "path": sub, "mode": "100644", "type": "blob", "sha": sha, "size": content.len(), "url": self.api(&format!("/git/blobs/{sha}")) }),
                    );
                }
            }
        }
        json!({ "sha": sha, "url": self.api(&format!("/git/trees/{sha}")), "tree": entries.into_values().collect::<Vec<_>>(), "truncated": false })
    }

    fn get_tree(&self, sha: &str) -> Answer {
        let files = self.repo().trees.get(sha).ok_or_else(not_found)?;
        Ok(ok(self.tree_json(sha, files)))
    }

    fn create_tree(&mut self, body: &Value) -> Answer {
        let mut files = match body.get("base_tree") {
            None | Some(Value::Null) => Files::new(),
            Some(Value::String(base)) => self
                .repo()
                .trees
                .get(base)
                .cloned()
                .ok_or_else(|| unprocessable("base_tree is not a valid tree"))?,
            Some(_) => return Err(unprocessable("Invalid request: base_tree must be a sha")),
        };
        let Some(entries) = body.get("tree").and_then(Value::as_array) else {
            return Err(unprocessable("Invalid request: tree is required"));
        };
        for entry in entries {
            let path = entry.get("path").and_then(Value::as_str).unwrap_or("");
            if path.is_empty()
                || path.split('/').any(|s| {
                    s.is_empty() || s == "." || s == ".." || s.eq_ignore_ascii_case(".git")
                })
            {
                return Err(unprocessable(&format!(
                    "tree.path contains a malformed path component: {path:?}"
                )));
            }
            let mode = entry.get("mode").and_then(Value::as_str).unwrap_or("");
            let kind = entry.get("type").and_then(Value::as_str).unwrap_or("");
            if !matches!(mode, "100644" | "100755") || kind != "blob" {
                return Err(unprocessable(
                    "the fake only supports blob entries with mode 100644 or 100755",
                ));
            }
            let content = match (entry.get("content"), entry.get("sha")) {
                (Some(Value::String(c)), None) => Some(c.as_bytes().to_vec()),
                (None, Some(Value::String(sha))) => Some(
                    self.repo()
                        .blobs
                        .get(sha)
                        .cloned()
                        .ok_or_else(|| unprocessable("tree.sha is not a valid blob"))?,
                ),
                (None, Some(Value::Null)) => None,
                _ => {
                    return Err(unprocessable(
                        "Invalid request: give exactly one of content or sha",
                    ));
                }
            };
            match content {
                Some(content) => {
                    let as_dir = format!("{path}/");
                    let file_under_dir = files
                        .range(as_dir.clone()..)
                        .next()
                        .is_some_and(|(k, _)| k.starts_with(&as_dir));
                    let parent_is_file = path
                        .match_indices('/')
                        .any(|(i, _)| files.contains_key(&path[..i]));
                    if file_under_dir || parent_is_file {
                        return Err(unprocessable(&format!(
                            "tree.path {path:?} conflicts with an existing entry"
                        )));
                    }
                    files.insert(path.to_string(), content);
                }
                None => {
                    files.remove(path);
                }
            }
        }
        let sha = self.repo_mut().store_tree(files);
        let files = &self.repo().trees[&sha];
        Ok(created(self.tree_json(&sha, files)))
    }
}

struct FileDiff {
    path: String,
    status: &'static str,
    sha: Option<String>,
    additions: usize,
    deletions: usize,
}

fn user(login: &str) -> Value {
    json!({
        "login": login,
        "id": 100 + (fnv(login.as_bytes(), 0) % 100_000),
        "node_id": format!("U_{login}"),
        "type": if login.ends_with("-bot") { "Bot" } else { "User" },
        "site_admin": false,
        "html_url": format!("https://github.com/{login}"),
    })
}

/// Lines added and removed between two texts (a longest-common-subsequence
/// line diff); binary content counts as no lines.
fn line_changes(old: &[u8], new: &[u8]) -> (usize, usize) {
    let (Ok(old), Ok(new)) = (std::str::from_utf8(old), std::str::from_utf8(new)) else {
        return (0, 0);
    };
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let common = lcs[0][0];
    (b.len() - common, a.len() - common)
}

/// Whether a branch name would pass git's basic ref-name rules.
fn valid_ref_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("..")
        && !name.contains("//")
        && !name.contains("@{")
        && !name.starts_with('/')
        && !name.ends_with('/')
        && !name.ends_with('.')
        && !name.ends_with(".lock")
        && !name.starts_with('-')
        && !name
            .chars()
            .any(|c| c.is_ascii_control() || " ~^:?*[\\".contains(c))
        && !name.split('/').any(|c| c.starts_with('.'))
}

fn fnv(bytes: &[u8], seed: u64) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &b in bytes {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// 40 hex characters derived from `bytes` (not SHA-1; stable and good enough for a fake).
fn fake_sha(bytes: &[u8]) -> String {
    let hex: String = (1..=3)
        .map(|seed| format!("{:016x}", fnv(bytes, seed)))
        .collect();
    hex[..40].to_string()
}

fn blob_sha(content: &[u8]) -> String {
    let mut bytes = b"blob\0".to_vec();
    bytes.extend_from_slice(content);
    fake_sha(&bytes)
}

/// The sha of the tree at directory `dir` ("" for the root) of a snapshot.
fn tree_sha(files: &Files, dir: &str) -> String {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut bytes = b"tree\0".to_vec();
    for (path, content) in files.iter().filter(|(p, _)| p.starts_with(&prefix)) {
        bytes.extend_from_slice(&path.as_bytes()[prefix.len()..]);
        bytes.push(0);
        bytes.extend_from_slice(blob_sha(content).as_bytes());
        bytes.push(b'\n');
    }
    fake_sha(&bytes)
}
