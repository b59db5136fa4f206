//! The GitHub connector: seven read tools and four write tools over the
//! GitHub REST API.
//!
//! Every request goes through the host's HTTP capability, which is bound to
//! the GitHub API origin and adds the token; this code never sees a secret.
//!
//! The write tools only *propose* changes: they create branches, add commits
//! to them, open pull requests and comment. A person reviews and merges. To
//! keep it that way the connector refuses, in its own code and before any
//! write request is sent:
//!
//! - commits to the repository's default branch: changes reach it only
//!   through a pull request a person merges;
//! - commits touching `.github/workflows/` (compared case-insensitively):
//!   a workflow file runs on push with the repository's secrets and compute,
//!   so writing one would let the agent run code the owner never reviewed;
//! - moving a ref other than fast-forward: `create-branch` never overwrites an
//!   existing branch and `commit-files` updates its branch with
//!   `force: false`, so no commit is ever lost.
//!
//! Arguments are validated before they are put in a URL (owner and repository
//! names, git branch names, file paths), and every path segment is
//! percent-encoded with the SDK's helpers.

scout_sdk::bindings!();

use base64::Engine as _;
use bindings::exports::scout::github::read_tools::{
    self, Branch, ChangedFile, Comment, Entry, EntryKind, FileContent, IssueSummary, ItemState,
    PullRequest, PullSummary,
};
use bindings::exports::scout::github::write_tools::{self, CommentRef, FileChange};
use scout_sdk::{Http, ToolError, encode_path, encode_segment};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Longest owner or repository name accepted.
const MAX_NAME: usize = 100;
/// Longest branch name accepted.
const MAX_BRANCH: usize = 200;
/// Most files in one `commit-files` call.
const MAX_FILES: usize = 100;
/// Items listed when no limit is given.
const DEFAULT_LIMIT: u8 = 30;
/// Most items listed; also GitHub's largest page.
const MAX_LIMIT: u8 = 100;

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// Checks an owner (user or organization) or repository name: 1 to 100
/// ASCII letters, digits, `-`, `_` or `.`, and not `.` or `..`.
fn validate_name(what: &str, name: &str) -> Result<(), ToolError> {
    if name.is_empty() {
        return Err(ToolError::invalid(format!("{what} is empty")));
    }
    if name.len() > MAX_NAME {
        return Err(ToolError::invalid(format!(
            "{what} is longer than {MAX_NAME} characters"
        )));
    }
    if name == "." || name == ".." {
        return Err(ToolError::invalid(format!("{what} `{name}` is not a name")));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(ToolError::invalid(format!(
            "{what} `{name}` may contain only ASCII letters, digits, `-`, `_` and `.`"
        )));
    }
    Ok(())
}

/// Checks a branch name against git's ref-name rules (`git check-ref-format`)
/// and a length limit.
fn validate_branch(what: &str, name: &str) -> Result<(), ToolError> {
    let bad = |why: &str| {
        Err(ToolError::invalid(format!(
            "{what} `{name}` is not a valid branch name: {why}"
        )))
    };
    if name.is_empty() {
        return Err(ToolError::invalid(format!("{what} is empty")));
    }
    if name.len() > MAX_BRANCH {
        return Err(ToolError::invalid(format!(
            "{what} is longer than {MAX_BRANCH} bytes"
        )));
    }
    if let Some(c) = name.chars().find(|c| c.is_ascii_control() || *c == ' ') {
        return bad(&format!("it contains the character {c:?}"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
    {
        return bad(&format!("it contains `{c}`"));
    }
    if name.contains("..") {
        return bad("it contains `..`");
    }
    if name.contains("@{") {
        return bad("it contains `@{`");
    }
    if name == "@" {
        return bad("`@` alone is not a branch name");
    }
    if name.contains("//") {
        return bad("it contains `//`");
    }
    if name.starts_with('-') || name.starts_with('/') {
        return bad("it starts with `-` or `/`");
    }
    if name.ends_with('/') || name.ends_with('.') {
        return bad("it ends with `/` or `.`");
    }
    for component in name.split('/') {
        if component.starts_with('.') {
            return bad("a `/`-separated part starts with `.`");
        }
        if component.ends_with(".lock") {
            return bad("a `/`-separated part ends with `.lock`");
        }
    }
    Ok(())
}

/// Checks a file path given to `commit-files`: relative, `/`-separated, with
/// no empty, `.` or `..` segment and no control character.
fn validate_file_path(path: &str) -> Result<(), ToolError> {
    if path.is_empty() {
        return Err(ToolError::invalid("a file path is empty"));
    }
    if path.starts_with('/') {
        return Err(ToolError::invalid(format!(
            "file path `{path}` must be relative (no leading `/`)"
        )));
    }
    if path.chars().any(|c| c.is_control()) {
        return Err(ToolError::invalid(format!(
            "file path {path:?} contains a control character"
        )));
    }
    if path
        .split('/')
        .any(|seg| seg.is_empty() || seg == "." || seg == "..")
    {
        return Err(ToolError::invalid(format!(
            "file path `{path}` has an empty, `.` or `..` segment"
        )));
    }
    Ok(())
}

/// Whether a (validated) path is inside `.github/workflows/`, compared
/// ASCII-case-insensitively as some clients and filesystems would.
fn is_workflow_path(path: &str) -> bool {
    let mut segments = path.split('/');
    matches!(
        (segments.next(), segments.next()),
        (Some(a), Some(b)) if a.eq_ignore_ascii_case(".github") && b.eq_ignore_ascii_case("workflows")
    )
}

/// The `per_page` for a list tool: 30 by default, at most 100, not 0.
fn page_size(limit: Option<u8>) -> Result<u8, ToolError> {
    match limit {
        None => Ok(DEFAULT_LIMIT),
        Some(0) => Err(ToolError::invalid("limit must be at least 1")),
        Some(n) => Ok(n.min(MAX_LIMIT)),
    }
}

fn state_param(state: Option<ItemState>) -> &'static str {
    match state.unwrap_or(ItemState::Open) {
        ItemState::Open => "open",
        ItemState::Closed => "closed",
        ItemState::All => "all",
    }
}

fn validate_number(number: u64) -> Result<(), ToolError> {
    if number == 0 {
        return Err(ToolError::invalid(
            "issue and pull request numbers start at 1",
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// The client for the GitHub API origin the host granted.
fn github() -> Result<Http, ToolError> {
    Ok(Http::connect()?
        .with_header("accept", "application/vnd.github+json")
        .with_header("x-github-api-version", "2022-11-28")
        .with_header("user-agent", "scout-connector-github"))
}

/// `/repos/{owner}/{repo}`, after validating both names.
fn repo_path(owner: &str, repo: &str) -> Result<String, ToolError> {
    validate_name("owner", owner)?;
    validate_name("repo", repo)?;
    Ok(format!(
        "/repos/{}/{}",
        encode_segment(owner),
        encode_segment(repo)
    ))
}

/// Adds what was asked for to a `not-found` error, whose upstream message is
/// usually just "Not Found".
fn not_found(what: impl Into<String>) -> impl FnOnce(ToolError) -> ToolError {
    let what = what.into();
    move |e| match e {
        ToolError::NotFound(m) => ToolError::NotFound(format!("{what}: {m}")),
        other => other,
    }
}

/// The `ref` query parameter, if a non-empty git ref was given.
fn ref_query(git_ref: &Option<String>) -> Vec<(&str, &str)> {
    match git_ref.as_deref() {
        Some(r) if !r.is_empty() => vec![("ref", r)],
        _ => Vec::new(),
    }
}

fn default_branch(http: &Http, repo: &str, owner_repo: &str) -> Result<String, ToolError> {
    let info: Repository = http
        .get(repo, &[])
        .map_err(not_found(format!("repository {owner_repo}")))?;
    Ok(info.default_branch)
}

/// The SHA of the commit a branch points at.
fn branch_head(http: &Http, repo: &str, branch: &str) -> Result<String, ToolError> {
    let path = format!("{repo}/git/ref/heads/{}", encode_path(branch)?);
    let r: GitRef = http
        .get(&path, &[])
        .map_err(not_found(format!("branch `{branch}`")))?;
    Ok(r.object.sha)
}

// ---------------------------------------------------------------------------
// GitHub's wire format (only the fields used; extra fields are ignored)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct Repository {
    default_branch: String,
}

#[derive(Deserialize)]
struct User {
    login: String,
}

/// The login of a possibly missing user (GitHub shows deleted accounts as `ghost`).
fn login(user: Option<User>) -> String {
    user.map(|u| u.login).unwrap_or_else(|| "ghost".to_string())
}

/// `GET /contents/{path}` answers an array for a directory, an object otherwise.
#[derive(Deserialize)]
#[serde(untagged)]
enum Contents {
    Directory(Vec<ContentEntry>),
    Item(ContentItem),
}

#[derive(Deserialize)]
struct ContentEntry {
    name: String,
    path: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    size: u64,
    sha: String,
}

#[derive(Deserialize)]
struct ContentItem {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    sha: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct ApiBranch {
    name: String,
    commit: ObjectSha,
    #[serde(default)]
    protected: bool,
}

#[derive(Deserialize)]
struct ObjectSha {
    sha: String,
}

#[derive(Deserialize)]
struct Label {
    name: String,
}

#[derive(Deserialize)]
struct ApiIssue {
    number: u64,
    title: String,
    state: String,
    user: Option<User>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    labels: Vec<Label>,
    #[serde(default)]
    comments: u32,
    /// Present (and non-null) when the "issue" is a pull request.
    #[serde(default)]
    pull_request: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct ApiComment {
    id: u64,
    user: Option<User>,
    #[serde(default)]
    body: Option<String>,
}

#[derive(Deserialize)]
struct BranchRef {
    #[serde(rename = "ref")]
    name: String,
}

#[derive(Deserialize)]
struct ApiPull {
    number: u64,
    title: String,
    state: String,
    user: Option<User>,
    #[serde(default)]
    body: Option<String>,
    head: BranchRef,
    base: BranchRef,
    #[serde(default)]
    draft: Option<bool>,
    #[serde(default)]
    merged: Option<bool>,
}

impl ApiPull {
    fn summary(self) -> PullSummary {
        PullSummary {
            number: self.number,
            title: self.title,
            state: self.state,
            author: login(self.user),
            head: self.head.name,
            base: self.base.name,
            draft: self.draft.unwrap_or(false),
        }
    }
}

#[derive(Deserialize)]
struct ApiPullFile {
    filename: String,
    status: String,
    #[serde(default)]
    additions: u32,
    #[serde(default)]
    deletions: u32,
}

/// `git/ref/...` and `git/refs` answers.
#[derive(Deserialize)]
struct GitRef {
    object: ObjectSha,
}

#[derive(Deserialize)]
struct GitCommit {
    tree: ObjectSha,
}

#[derive(Serialize)]
struct NewRef<'a> {
    #[serde(rename = "ref")]
    name: String,
    sha: &'a str,
}

#[derive(Serialize)]
struct NewTree<'a> {
    base_tree: &'a str,
    tree: Vec<NewTreeEntry<'a>>,
}

#[derive(Serialize)]
struct NewTreeEntry<'a> {
    path: &'a str,
    mode: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct NewCommit<'a> {
    message: &'a str,
    tree: &'a str,
    parents: [&'a str; 1],
}

#[derive(Serialize)]
struct UpdateRef<'a> {
    sha: &'a str,
    force: bool,
}

#[derive(Serialize)]
struct NewPull<'a> {
    title: &'a str,
    head: &'a str,
    base: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<&'a str>,
    draft: bool,
}

#[derive(Serialize)]
struct NewComment<'a> {
    body: &'a str,
}

#[derive(Deserialize)]
struct CreatedComment {
    id: u64,
    html_url: String,
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct GitHub;

impl read_tools::Guest for GitHub {
    fn read_file(
        owner: String,
        repo: String,
        path: String,
        git_ref: Option<String>,
    ) -> Result<FileContent, ToolError> {
        let base = repo_path(&owner, &repo)?;
        if path.trim_matches('/').is_empty() {
            return Err(ToolError::invalid(
                "path is empty; use list-path to list the repository root",
            ));
        }
        let url = format!("{base}/contents/{}", encode_path(&path)?);
        let http = github()?;
        let contents: Contents = http
            .get(&url, &ref_query(&git_ref))
            .map_err(not_found(format!("`{path}` in {owner}/{repo}")))?;
        let item = match contents {
            Contents::Directory(_) => {
                return Err(ToolError::invalid(format!(
                    "`{path}` is a directory; use list-path"
                )));
            }
            Contents::Item(item) => item,
        };
        if item.kind != "file" {
            return Err(ToolError::invalid(format!(
                "`{path}` is a {}, not a file",
                item.kind
            )));
        }
        let bytes = match (item.encoding.as_deref(), item.content.as_deref()) {
            (Some("base64"), Some(content)) => {
                let compact: String = content
                    .chars()
                    .filter(|c| !c.is_ascii_whitespace())
                    .collect();
                base64::engine::general_purpose::STANDARD
                    .decode(compact)
                    .map_err(|e| {
                        ToolError::BadResponse(format!("file content is not valid base64: {e}"))
                    })?
            }
            // GitHub answers encoding "none" and no content for files over 1 MB.
            _ => {
                return Err(ToolError::invalid(format!(
                    "`{path}` ({} bytes) is too large to read through the contents API",
                    item.size
                )));
            }
        };
        Ok(FileContent {
            path: item.path,
            sha: item.sha,
            size: item.size,
            text: String::from_utf8(bytes).ok(),
        })
    }

    fn list_path(
        owner: String,
        repo: String,
        path: Option<String>,
        git_ref: Option<String>,
    ) -> Result<Vec<Entry>, ToolError> {
        let base = repo_path(&owner, &repo)?;
        let path = path.unwrap_or_default();
        let url = if path.trim_matches('/').is_empty() {
            format!("{base}/contents")
        } else {
            format!("{base}/contents/{}", encode_path(&path)?)
        };
        let http = github()?;
        let contents: Contents = http
            .get(&url, &ref_query(&git_ref))
            .map_err(not_found(format!("`{path}` in {owner}/{repo}")))?;
        let entries = match contents {
            Contents::Directory(entries) => entries,
            Contents::Item(item) => {
                return Err(ToolError::invalid(format!(
                    "`{path}` is a {}, not a directory; use read-file",
                    item.kind
                )));
            }
        };
        entries
            .into_iter()
            .map(|e| {
                let kind = match e.kind.as_str() {
                    "file" => EntryKind::File,
                    "dir" => EntryKind::Dir,
                    "symlink" => EntryKind::Symlink,
                    "submodule" => EntryKind::Submodule,
                    other => {
                        return Err(ToolError::BadResponse(format!(
                            "unknown entry type `{other}`"
                        )));
                    }
                };
                let size = if matches!(kind, EntryKind::Dir) {
                    0
                } else {
                    e.size
                };
                Ok(Entry {
                    name: e.name,
                    path: e.path,
                    kind,
                    size,
                    sha: e.sha,
                })
            })
            .collect()
    }

    fn list_branches(owner: String, repo: String) -> Result<Vec<Branch>, ToolError> {
        let base = repo_path(&owner, &repo)?;
        let branches: Vec<ApiBranch> = github()?
            .get(&format!("{base}/branches"), &[("per_page", "100")])
            .map_err(not_found(format!("repository {owner}/{repo}")))?;
        Ok(branches
            .into_iter()
            .map(|b| Branch {
                name: b.name,
                sha: b.commit.sha,
                protected: b.protected,
            })
            .collect())
    }

    fn list_issues(
        owner: String,
        repo: String,
        state: Option<ItemState>,
        limit: Option<u8>,
    ) -> Result<Vec<IssueSummary>, ToolError> {
        let base = repo_path(&owner, &repo)?;
        let per_page = page_size(limit)?.to_string();
        let issues: Vec<ApiIssue> = github()?
            .get(
                &format!("{base}/issues"),
                &[("state", state_param(state)), ("per_page", &per_page)],
            )
            .map_err(not_found(format!("repository {owner}/{repo}")))?;
        // The issues endpoint also lists pull requests; they carry a `pull_request` key.
        Ok(issues
            .into_iter()
            .filter(|i| i.pull_request.is_none())
            .map(|i| IssueSummary {
                number: i.number,
                title: i.title,
                state: i.state,
                author: login(i.user),
                comments: i.comments,
                labels: i.labels.into_iter().map(|l| l.name).collect(),
            })
            .collect())
    }

    fn read_issue(
        owner: String,
        repo: String,
        number: u64,
    ) -> Result<read_tools::Issue, ToolError> {
        let base = repo_path(&owner, &repo)?;
        validate_number(number)?;
        let http = github()?;
        let issue: ApiIssue = http
            .get(&format!("{base}/issues/{number}"), &[])
            .map_err(not_found(format!("issue #{number} in {owner}/{repo}")))?;
        if issue.pull_request.is_some() {
            return Err(ToolError::invalid(format!(
                "#{number} is a pull request; use read-pull-request"
            )));
        }
        let comments: Vec<ApiComment> = http.get(
            &format!("{base}/issues/{number}/comments"),
            &[("per_page", "100")],
        )?;
        Ok(read_tools::Issue {
            number: issue.number,
            title: issue.title,
            state: issue.state,
            author: login(issue.user),
            body: issue.body.unwrap_or_default(),
            labels: issue.labels.into_iter().map(|l| l.name).collect(),
            comments: comments
                .into_iter()
                .map(|c| Comment {
                    id: c.id,
                    author: login(c.user),
                    body: c.body.unwrap_or_default(),
                })
                .collect(),
        })
    }

    fn list_pull_requests(
        owner: String,
        repo: String,
        state: Option<ItemState>,
        limit: Option<u8>,
    ) -> Result<Vec<PullSummary>, ToolError> {
        let base = repo_path(&owner, &repo)?;
        let per_page = page_size(limit)?.to_string();
        let pulls: Vec<ApiPull> = github()?
            .get(
                &format!("{base}/pulls"),
                &[("state", state_param(state)), ("per_page", &per_page)],
            )
            .map_err(not_found(format!("repository {owner}/{repo}")))?;
        Ok(pulls.into_iter().map(ApiPull::summary).collect())
    }

    fn read_pull_request(
        owner: String,
        repo: String,
        number: u64,
    ) -> Result<PullRequest, ToolError> {
        let base = repo_path(&owner, &repo)?;
        validate_number(number)?;
        let http = github()?;
        let pull: ApiPull = http
            .get(&format!("{base}/pulls/{number}"), &[])
            .map_err(not_found(format!(
                "pull request #{number} in {owner}/{repo}"
            )))?;
        let files: Vec<ApiPullFile> = http.get(
            &format!("{base}/pulls/{number}/files"),
            &[("per_page", "100")],
        )?;
        Ok(PullRequest {
            number: pull.number,
            title: pull.title,
            state: pull.state,
            author: login(pull.user),
            body: pull.body.unwrap_or_default(),
            head: pull.head.name,
            base: pull.base.name,
            draft: pull.draft.unwrap_or(false),
            merged: pull.merged.unwrap_or(false),
            files: files
                .into_iter()
                .map(|f| ChangedFile {
                    path: f.filename,
                    status: f.status,
                    additions: f.additions,
                    deletions: f.deletions,
                })
                .collect(),
        })
    }
}

impl write_tools::Guest for GitHub {
    fn create_branch(
        owner: String,
        repo: String,
        branch: String,
        from: Option<String>,
    ) -> Result<Branch, ToolError> {
        let base = repo_path(&owner, &repo)?;
        validate_branch("branch", &branch)?;
        if let Some(from) = &from {
            validate_branch("from", from)?;
        }
        let http = github()?;
        let source = match from {
            Some(from) => from,
            None => default_branch(&http, &base, &format!("{owner}/{repo}"))?,
        };
        let sha = branch_head(&http, &base, &source)?;
        // Creating a ref that exists fails upstream (422); nothing is overwritten.
        let created: GitRef = http.post(
            &format!("{base}/git/refs"),
            &NewRef {
                name: format!("refs/heads/{branch}"),
                sha: &sha,
            },
        )?;
        Ok(Branch {
            name: branch,
            sha: created.object.sha,
            protected: false,
        })
    }

    fn commit_files(
        owner: String,
        repo: String,
        branch: String,
        message: String,
        files: Vec<FileChange>,
    ) -> Result<write_tools::Commit, ToolError> {
        let base = repo_path(&owner, &repo)?;
        validate_branch("branch", &branch)?;
        if message.trim().is_empty() {
            return Err(ToolError::invalid("commit message is empty"));
        }
        if files.is_empty() {
            return Err(ToolError::invalid("no files to commit"));
        }
        if files.len() > MAX_FILES {
            return Err(ToolError::invalid(format!(
                "at most {MAX_FILES} files per commit"
            )));
        }
        let mut seen = BTreeSet::new();
        for file in &files {
            validate_file_path(&file.path)?;
            if !seen.insert(file.path.as_str()) {
                return Err(ToolError::invalid(format!(
                    "file path `{}` appears twice",
                    file.path
                )));
            }
        }
        // Refusals come before any request that writes.
        if let Some(file) = files.iter().find(|f| is_workflow_path(&f.path)) {
            return Err(ToolError::refused(format!(
                "`{}` is a GitHub Actions workflow; workflows run with the repository's secrets, so this connector never writes under .github/workflows/",
                file.path
            )));
        }
        let http = github()?;
        let default = default_branch(&http, &base, &format!("{owner}/{repo}"))?;
        if branch == default {
            return Err(ToolError::refused(format!(
                "`{branch}` is the default branch of {owner}/{repo}; commit to another branch and open a pull request for a person to merge"
            )));
        }

        // Git Data API: parent commit -> its tree -> new tree -> new commit -> fast-forward the ref.
        let parent = branch_head(&http, &base, &branch)?;
        let parent_commit: GitCommit = http.get(
            &format!("{base}/git/commits/{}", encode_segment(&parent)),
            &[],
        )?;
        let tree = NewTree {
            base_tree: &parent_commit.tree.sha,
            tree: files
                .iter()
                .map(|f| NewTreeEntry {
                    path: &f.path,
                    mode: "100644",
                    kind: "blob",
                    content: &f.content,
                })
                .collect(),
        };
        let new_tree: ObjectSha = http.post(&format!("{base}/git/trees"), &tree)?;
        let commit: ObjectSha = http.post(
            &format!("{base}/git/commits"),
            &NewCommit {
                message: &message,
                tree: &new_tree.sha,
                parents: [&parent],
            },
        )?;
        let _: GitRef = http.patch(
            &format!("{base}/git/refs/heads/{}", encode_path(&branch)?),
            &UpdateRef {
                sha: &commit.sha,
                force: false,
            },
        )?;
        Ok(write_tools::Commit {
            sha: commit.sha,
            branch,
        })
    }

    fn open_pull_request(
        owner: String,
        repo: String,
        title: String,
        head: String,
        base: Option<String>,
        body: Option<String>,
        draft: Option<bool>,
    ) -> Result<PullSummary, ToolError> {
        let repo_url = repo_path(&owner, &repo)?;
        if title.trim().is_empty() {
            return Err(ToolError::invalid("title is empty"));
        }
        // `head` may name a branch in a fork as `owner:branch`.
        match head.split_once(':') {
            Some((fork_owner, branch)) => {
                validate_name("head owner", fork_owner)?;
                validate_branch("head", branch)?;
            }
            None => validate_branch("head", &head)?,
        }
        if let Some(base) = &base {
            validate_branch("base", base)?;
        }
        let http = github()?;
        let base = match base {
            Some(base) => base,
            None => default_branch(&http, &repo_url, &format!("{owner}/{repo}"))?,
        };
        let pull: ApiPull = http.post(
            &format!("{repo_url}/pulls"),
            &NewPull {
                title: &title,
                head: &head,
                base: &base,
                body: body.as_deref(),
                draft: draft.unwrap_or(false),
            },
        )?;
        Ok(pull.summary())
    }

    fn comment(
        owner: String,
        repo: String,
        number: u64,
        body: String,
    ) -> Result<CommentRef, ToolError> {
        let base = repo_path(&owner, &repo)?;
        validate_number(number)?;
        if body.trim().is_empty() {
            return Err(ToolError::invalid("comment body is empty"));
        }
        let created: CreatedComment = github()?
            .post(
                &format!("{base}/issues/{number}/comments"),
                &NewComment { body: &body },
            )
            .map_err(not_found(format!(
                "issue or pull request #{number} in {owner}/{repo}"
            )))?;
        Ok(CommentRef {
            id: created.id,
            url: created.html_url,
        })
    }
}

scout_sdk::export!(GitHub);

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_branch(name: &str) -> bool {
        validate_branch("branch", name).is_ok()
    }

    #[test]
    fn branch_names() {
        for good in [
            "main",
            "feature/x",
            "scout/fix-123",
            "release-1.2",
            "a_b",
            "user@host",
            "v1",
        ] {
            assert!(ok_branch(good), "{good} should be accepted");
        }
        let long = "a".repeat(201);
        for bad in [
            "",
            "a..b",
            "a b",
            "a\tb",
            "a\u{7f}",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[b",
            "a\\b",
            "-x",
            "/x",
            "x/",
            "x.lock",
            "x/y.lock/z",
            "x.",
            "a@{1}",
            "@",
            "a//b",
            ".hidden",
            "a/.b",
            long.as_str(),
        ] {
            assert!(!ok_branch(bad), "{bad:?} should be refused");
        }
        assert!(ok_branch(&"a".repeat(200)));
    }

    #[test]
    fn workflow_paths() {
        assert!(is_workflow_path(".github/workflows/ci.yml"));
        assert!(is_workflow_path(".GitHub/Workflows/x.yml"));
        assert!(is_workflow_path(".GITHUB/WORKFLOWS/deep/x.yml"));
        assert!(is_workflow_path(".github/workflows"));
        assert!(!is_workflow_path(".github/CODEOWNERS"));
        assert!(!is_workflow_path("docs/.github/workflows/x.yml"));
        assert!(!is_workflow_path("github/workflows/x.yml"));
        assert!(!is_workflow_path(".github/workflows.md"));
        // Forms that would dodge the prefix check are not valid paths at all.
        for dodge in [
            "./.github/workflows/x",
            "/.github/workflows/x",
            ".github//workflows/x",
            "a/../.github/workflows/x",
        ] {
            assert!(
                validate_file_path(dodge).is_err(),
                "{dodge} should be invalid"
            );
        }
    }

    #[test]
    fn file_paths() {
        assert!(validate_file_path("README.md").is_ok());
        assert!(validate_file_path("src/lib.rs").is_ok());
        assert!(validate_file_path("dir with space/é.txt").is_ok());
        for bad in [
            "", "/x", "x/", "a//b", ".", "..", "a/./b", "a/../b", "a\nb", "a\0b",
        ] {
            assert!(
                validate_file_path(bad).is_err(),
                "{bad:?} should be invalid"
            );
        }
    }

    #[test]
    fn owner_and_repo_names() {
        for good in [
            "octo", "hello", "my-repo", "my_repo", "repo.js", ".github", "a", "A1",
        ] {
            assert!(
                validate_name("repo", good).is_ok(),
                "{good} should be accepted"
            );
        }
        let long = "a".repeat(101);
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a b",
            "a%2F",
            "a@b",
            "ünï",
            "a\n",
            long.as_str(),
        ] {
            assert!(
                validate_name("repo", bad).is_err(),
                "{bad:?} should be refused"
            );
        }
        assert!(validate_name("repo", &"a".repeat(100)).is_ok());
        assert_eq!(repo_path("octo", "hello").unwrap(), "/repos/octo/hello");
    }

    #[test]
    fn limits() {
        assert_eq!(page_size(None).unwrap(), 30);
        assert_eq!(page_size(Some(1)).unwrap(), 1);
        assert_eq!(page_size(Some(100)).unwrap(), 100);
        assert_eq!(page_size(Some(255)).unwrap(), 100);
        assert!(page_size(Some(0)).is_err());
    }

    #[test]
    fn parses_contents_answers() {
        let dir: Contents = serde_json::from_str(
            r#"[{"name":"a","path":"a","type":"file","size":1,"sha":"x","url":"u"}]"#,
        )
        .unwrap();
        assert!(matches!(dir, Contents::Directory(ref v) if v.len() == 1));
        let file: Contents = serde_json::from_str(
            r#"{"type":"file","encoding":"base64","content":"SGVs\nbG8=\n","sha":"s","size":5,"path":"p","name":"p"}"#,
        )
        .unwrap();
        assert!(matches!(file, Contents::Item(ref i) if i.kind == "file"));
        let issue: ApiIssue = serde_json::from_str(
            r#"{"number":3,"title":"t","state":"open","user":{"login":"d"},"labels":[],"comments":0,"pull_request":{"url":"u"}}"#,
        )
        .unwrap();
        assert!(issue.pull_request.is_some());
        let issue: ApiIssue = serde_json::from_str(
            r#"{"number":1,"title":"t","state":"open","user":null,"body":null}"#,
        )
        .unwrap();
        assert!(issue.pull_request.is_none());
        assert_eq!(login(issue.user), "ghost");
    }
}
