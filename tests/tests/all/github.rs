//! Every GitHub tool end to end: the real component, through the real host,
//! over loopback HTTP to a server speaking GitHub's REST wire format.

use scout_host::capabilities::http::REDACTED;
use scout_host::{
    CallOutcome, Capabilities, CredentialScheme, HttpCapability, HttpConfig, LoadedComponent,
    Runtime, RuntimeConfig, SecretSource,
};
use scout_tests::components;
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::path::Path;

const TOKEN: &str = "ghp_e2e_0123456789abcdefTOKEN";

struct Env {
    github: FakeGitHub,
    component: LoadedComponent,
    caps: Capabilities,
    outcomes: std::sync::Mutex<Vec<CallOutcome>>,
}

impl Env {
    async fn new() -> Env {
        let github = FakeGitHub::start(TOKEN).await;
        let runtime = Runtime::new(RuntimeConfig {
            max_concurrent_calls: 4,
            ..Default::default()
        })
        .unwrap();
        let component = runtime.load_file(Path::new(components::GITHUB)).unwrap();
        let http = HttpCapability::new(
            HttpConfig::new(github.origin())
                .credential(
                    CredentialScheme::Bearer,
                    SecretSource::Value(TOKEN.to_string()),
                )
                .allow_private_network(true),
        )
        .unwrap();
        Env {
            github,
            component,
            caps: Capabilities::with_http(http),
            outcomes: Default::default(),
        }
    }

    async fn call(&self, tool: &str, args: Value) -> Result<Value, Value> {
        let outcome = self
            .component
            .call(tool, &args, &self.caps)
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        let result = match &outcome.output {
            scout_host::ToolOutput::Ok(v) => Ok(v.clone()),
            scout_host::ToolOutput::Err(e) => Err(e.clone()),
        };
        self.outcomes.lock().unwrap().push(outcome);
        result
    }

    fn writes(&self) -> usize {
        self.github
            .requests()
            .iter()
            .filter(|r| r.method != "GET")
            .count()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        // Every request carried the host's token; nothing the guest returned did.
        for request in self.github.requests() {
            assert_eq!(
                request.header("authorization"),
                Some(format!("Bearer {TOKEN}").as_str()),
                "{} {}",
                request.method,
                request.path
            );
        }
        let seen = serde_json::to_string(&*self.outcomes.lock().unwrap()).unwrap();
        assert!(
            !seen.contains(TOKEN),
            "the token reached the guest's outputs"
        );
        let _ = REDACTED;
    }
}

const REPO: (&str, &str) = ("octo", "hello");

fn args(extra: Value) -> Value {
    let mut base = json!({"owner": REPO.0, "repo": REPO.1});
    base.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    base
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_returns_text_binary_and_not_found() {
    let env = Env::new().await;
    let file = env
        .call("github_read_file", args(json!({"path": "README.md"})))
        .await
        .unwrap();
    assert_eq!(file["text"], "# Hello\n");
    assert_eq!(file["path"], "README.md");
    assert_eq!(file["size"], 8);
    let logo = env
        .call("github_read_file", args(json!({"path": "logo.png"})))
        .await
        .unwrap();
    assert_eq!(logo["text"], Value::Null, "binary content has no text");
    let feature = env
        .call(
            "github_read_file",
            args(json!({"path": "src/lib.rs", "git-ref": "feature"})),
        )
        .await
        .unwrap();
    let main = env
        .call("github_read_file", args(json!({"path": "src/lib.rs"})))
        .await
        .unwrap();
    assert_ne!(feature["text"], main["text"], "git-ref selects the branch");
    let missing = env
        .call("github_read_file", args(json!({"path": "nope.txt"})))
        .await
        .unwrap_err();
    assert!(missing["not-found"].is_string(), "{missing}");
    let dir = env
        .call("github_read_file", args(json!({"path": "src"})))
        .await
        .unwrap_err();
    assert!(dir["invalid-input"].is_string(), "{dir}");
    let escape = env
        .call(
            "github_read_file",
            args(json!({"path": "../../etc/passwd"})),
        )
        .await
        .unwrap_err();
    assert!(escape["invalid-input"].is_string(), "{escape}");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_path_lists_the_root_and_a_directory() {
    let env = Env::new().await;
    let root = env.call("github_list_path", args(json!({}))).await.unwrap();
    let names: Vec<(&str, &str)> = root
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["kind"].as_str().unwrap()))
        .collect();
    assert!(names.contains(&("README.md", "file")), "{names:?}");
    assert!(names.contains(&("src", "dir")), "{names:?}");
    assert!(names.contains(&(".github", "dir")), "{names:?}");
    let src = env
        .call("github_list_path", args(json!({"path": "src"})))
        .await
        .unwrap();
    assert_eq!(src[0]["path"], "src/lib.rs");
    let file = env
        .call("github_list_path", args(json!({"path": "README.md"})))
        .await
        .unwrap_err();
    assert!(file["invalid-input"].is_string(), "{file}");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_branches_lists_main_and_feature() {
    let env = Env::new().await;
    let branches = env
        .call("github_list_branches", args(json!({})))
        .await
        .unwrap();
    let names: Vec<&str> = branches
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"main") && names.contains(&"feature"),
        "{names:?}"
    );
    let main = branches
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "main")
        .unwrap();
    assert_eq!(
        main["sha"].as_str(),
        env.github.branch_sha("octo", "hello", "main").as_deref()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn list_issues_leaves_pull_requests_out_and_honours_state() {
    let env = Env::new().await;
    let open = env
        .call("github_list_issues", args(json!({})))
        .await
        .unwrap();
    let numbers: Vec<u64> = open
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1], "pull request #3 is not an issue");
    assert_eq!(open[0]["author"], "alice");
    assert_eq!(open[0]["labels"], json!(["bug"]));
    let all = env
        .call("github_list_issues", args(json!({"state": "all"})))
        .await
        .unwrap();
    let mut numbers: Vec<u64> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["number"].as_u64().unwrap())
        .collect();
    numbers.sort();
    assert_eq!(numbers, [1, 2]);
    let zero = env
        .call("github_list_issues", args(json!({"limit": 0})))
        .await
        .unwrap_err();
    assert!(zero["invalid-input"].is_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn read_issue_returns_body_and_comments() {
    let env = Env::new().await;
    let issue = env
        .call("github_read_issue", args(json!({"number": 1})))
        .await
        .unwrap();
    assert_eq!(issue["title"], "Crash on start");
    assert_eq!(issue["comments"][0]["author"], "bob");
    let closed = env
        .call("github_read_issue", args(json!({"number": 2})))
        .await
        .unwrap();
    assert_eq!(closed["body"], "", "a null body reads as empty");
    let pr = env
        .call("github_read_issue", args(json!({"number": 3})))
        .await
        .unwrap_err();
    assert!(
        pr["invalid-input"].is_string(),
        "#3 is a pull request: {pr}"
    );
    let missing = env
        .call("github_read_issue", args(json!({"number": 99})))
        .await
        .unwrap_err();
    assert!(missing["not-found"].is_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn pull_requests_are_listed_and_read_with_their_files() {
    let env = Env::new().await;
    let pulls = env
        .call("github_list_pull_requests", args(json!({})))
        .await
        .unwrap();
    assert_eq!(pulls[0]["number"], 3);
    assert_eq!(pulls[0]["head"], "feature");
    assert_eq!(pulls[0]["base"], "main");
    let pr = env
        .call("github_read_pull_request", args(json!({"number": 3})))
        .await
        .unwrap();
    assert_eq!(pr["author"], "dave");
    assert_eq!(pr["merged"], false);
    assert_eq!(pr["files"][0]["path"], "src/lib.rs");
    assert_eq!(pr["files"][0]["additions"], 3);
    let closed = env
        .call(
            "github_list_pull_requests",
            args(json!({"state": "closed"})),
        )
        .await
        .unwrap();
    assert_eq!(closed, json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn create_branch_then_commit_then_open_a_pull_request_then_comment() {
    let env = Env::new().await;
    let main_sha = env.github.branch_sha("octo", "hello", "main").unwrap();
    let branch = env
        .call(
            "github_create_branch",
            args(json!({"branch": "scout/docs"})),
        )
        .await
        .unwrap();
    assert_eq!(branch["name"], "scout/docs");
    assert_eq!(
        env.github.branch_sha("octo", "hello", "scout/docs"),
        Some(main_sha.clone())
    );

    let again = env
        .call(
            "github_create_branch",
            args(json!({"branch": "scout/docs"})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        again["upstream"]["status"], 422,
        "an existing branch is never moved: {again}"
    );

    let commit = env
        .call(
            "github_commit_files",
            args(
                json!({"branch": "scout/docs", "message": "Document the API", "files": [
                    {"path": "docs/api.md", "content": "# API\n"},
                    {"path": "README.md", "content": "# Hello, world\n"},
                ]}),
            ),
        )
        .await
        .unwrap();
    let sha = commit["sha"].as_str().unwrap();
    assert_eq!(
        env.github
            .branch_sha("octo", "hello", "scout/docs")
            .as_deref(),
        Some(sha)
    );
    assert_eq!(
        env.github.commit_message("octo", "hello", sha).as_deref(),
        Some("Document the API")
    );
    assert_eq!(
        env.github
            .file_text("octo", "hello", "scout/docs", "docs/api.md")
            .as_deref(),
        Some("# API\n")
    );
    assert_eq!(
        env.github
            .file_text("octo", "hello", "scout/docs", "README.md")
            .as_deref(),
        Some("# Hello, world\n")
    );
    assert_eq!(
        env.github.branch_sha("octo", "hello", "main"),
        Some(main_sha),
        "main did not move"
    );
    assert_eq!(
        env.github
            .file_text("octo", "hello", "main", "README.md")
            .as_deref(),
        Some("# Hello\n")
    );

    let pr = env
        .call("github_open_pull_request", args(json!({"title": "Document the API", "head": "scout/docs", "body": "Proposed by Scout"})))
        .await
        .unwrap();
    assert_eq!(pr["base"], "main", "defaults to the default branch");
    assert!(
        env.github
            .pull_titles("octo", "hello")
            .contains(&"Document the API".to_string())
    );

    let comment = env
        .call(
            "github_comment",
            args(json!({"number": 1, "body": "Looking into it."})),
        )
        .await
        .unwrap();
    assert!(comment["id"].as_u64().is_some());
    assert_eq!(
        env.github
            .comments("octo", "hello", 1)
            .last()
            .map(String::as_str),
        Some("Looking into it.")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commit_to_the_default_branch_is_refused_before_any_write() {
    let env = Env::new().await;
    let main_sha = env.github.branch_sha("octo", "hello", "main");
    let refused = env
        .call("github_commit_files", args(json!({"branch": "main", "message": "m", "files": [{"path": "README.md", "content": "x"}]})))
        .await
        .unwrap_err();
    assert!(
        refused["refused"]
            .as_str()
            .unwrap()
            .contains("default branch"),
        "{refused}"
    );
    assert_eq!(env.writes(), 0, "no write request reached GitHub");
    assert_eq!(env.github.branch_sha("octo", "hello", "main"), main_sha);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commit_to_github_workflows_is_refused_before_any_request() {
    let env = Env::new().await;
    env.call("github_create_branch", args(json!({"branch": "scout/ci"})))
        .await
        .unwrap();
    env.github.clear_requests();
    for path in [
        ".github/workflows/ci.yml",
        ".GitHub/Workflows/evil.yml",
        "/.github/workflows/x.yml",
    ] {
        let refused = env
            .call("github_commit_files", args(json!({"branch": "scout/ci", "message": "m", "files": [{"path": "ok.txt", "content": "x"}, {"path": path, "content": "on: push"}]})))
            .await
            .unwrap_err();
        assert!(
            refused["refused"].is_string() || refused["invalid-input"].is_string(),
            "{path}: {refused}"
        );
    }
    assert!(
        env.github.requests().is_empty(),
        "not even a read was sent: {:?}",
        env.github.requests()
    );
    assert_eq!(
        env.github.file_text("octo", "hello", "scout/ci", "ok.txt"),
        None
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_names_are_refused_before_any_request() {
    let env = Env::new().await;
    for (tool, extra) in [
        ("github_create_branch", json!({"branch": "bad..name"})),
        ("github_create_branch", json!({"branch": "-rf"})),
        ("github_create_branch", json!({"branch": "a b"})),
        ("github_list_branches", json!({"owner": "../octo"})),
        ("github_list_branches", json!({"repo": "hello/../../x"})),
    ] {
        let err = env.call(tool, args(extra.clone())).await.unwrap_err();
        assert!(err["invalid-input"].is_string(), "{tool} {extra}: {err}");
    }
    assert!(env.github.requests().is_empty());
}
