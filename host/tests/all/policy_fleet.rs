//! Operators' policies as fleet data (issue 56, DESIGN D22), through real
//! `serve` processes:
//!
//! - Two hosts on one PostgreSQL database: a `forbid` stored through host
//!   A's admin API is acknowledged only once B applies it, so the very
//!   next call on B (no wait, the official MCP client's) is refused with
//!   the new revision in its trace row, and nothing reaches the upstream; a document naming an
//!   argument the tool does not have answers 422 with its line and stores
//!   nothing; `DELETE` restores the call on B.
//! - One host on SQLite: a change applied and answered at once; a name the
//!   configuration's file owns is refused (409, naming the file); a viewer
//!   cannot change policies; every change is a trace row with its actor
//!   and revision.

use super::admin_identity::{Issuer, keys, oidc_table};
use super::crash_safety::{ADMIN_TOKEN, Admin, GITHUB_TOKEN, Mcp, ok_text};
use crate::common;
use reqwest::Method;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Refuses reading README.md only: a rule over one argument's value.
const NO_README: &str = r#"// Nobody reads the README through an agent.
@id("no_readme")
forbid (
    principal,
    action == Scout::Action::"mcp__github__github_read_file",
    resource
)
when { context.args.path == "README.md" };
"#;

/// Names an argument `github_read_file` does not have (line 4).
const UNKNOWN_ARGUMENT: &str = r#"@id("no_branch")
forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when {
    context.args.branch == "main"
};
"#;

fn read_args(path: &str) -> Value {
    json!({"owner": "octo", "repo": "hello", "path": path})
}

/// `serve`'s configuration in `dir`: GitHub against `github`, then `more`.
fn write_config(dir: &Path, name: &str, github: &FakeGitHub, more: &str) -> PathBuf {
    let component = Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .expect("the GitHub component was built");
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "listen = \"127.0.0.1:0\"\nrequire_review = false\ndatabase = \"{name}.db\"\n{more}\n\n\
             [connectors.github]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n",
            component.display().to_string(),
            github.origin(),
        ),
    )
    .unwrap();
    path
}

/// One admin API request with a text body (a policy document), as `token`.
async fn send(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    method: Method,
    path: &str,
    text: Option<&str>,
) -> (u16, Value) {
    let mut request = http
        .request(method.clone(), format!("{base}{path}"))
        .header(AUTHORIZATION, format!("Bearer {token}"));
    if let Some(text) = text {
        request = request
            .header(CONTENT_TYPE, "text/plain")
            .body(text.to_string());
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// Reads `path` in the session `mcp` speaks for: the text, or the refusal.
async fn read(mcp: &Mcp, path: &str) -> Result<String, Value> {
    let reply = mcp
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments": read_args(path)}),
        )
        .await
        .unwrap();
    ok_text(&reply).ok_or(reply)
}

/// Reads each of `paths` in `view`'s session with the official MCP client,
/// in order: each answer's `is_error` and `text`.
async fn official_reads(view: &Value, paths: &[&str]) -> Vec<Value> {
    let summary = common::client_story(
        "policy_fleet.py",
        vec![
            "--url".into(),
            view["mcp"]["github"].as_str().unwrap().into(),
            "--token".into(),
            view["token"].as_str().unwrap().into(),
            "--paths".into(),
            json!(paths).to_string(),
        ],
    )
    .await;
    summary["answers"].as_array().unwrap().clone()
}

/// The call rows whose detail names `revision` (the policy revision a
/// decision was made under).
async fn rows_naming(admin: &Admin, revision: &str) -> Vec<scout_host::store::TraceEvent> {
    admin
        .trace("acme")
        .await
        .into_iter()
        .filter(|e| e.detail.to_string().contains(revision))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_stored_on_one_host_is_in_force_on_the_other_before_it_is_acknowledged() {
    let Some(db) = scout_tests::pg::database_or_skip("policy_fleet") else {
        return;
    };
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let store = "\n[store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\n";
    let env = [("SCOUT_PG_URL", db.url())];
    let a = common::serve(&write_config(dir.path(), "a", &github, store))
        .envs(&env)
        .start();
    let b = common::serve(&write_config(dir.path(), "b", &github, store))
        .envs(&env)
        .start();
    let http = reqwest::Client::new();
    let admin_a = Admin {
        http: http.clone(),
        base: a.base.clone(),
    };
    let admin_b = Admin {
        http: http.clone(),
        base: b.base.clone(),
    };
    admin_a.set_up().await;
    // A session served by B.
    let view = admin_b.session().await;
    assert!(
        view["mcp"]["github"].as_str().unwrap().starts_with(&b.base),
        "{view}"
    );
    let mcp = Mcp::new(&http, &view).connect().await;
    assert!(read(&mcp, "README.md").await.unwrap().contains("# Hello"));

    // Stored through A: acknowledged once B applies it.
    let (status, stored) = send(
        &http,
        &a.base,
        ADMIN_TOKEN,
        Method::PUT,
        "/v1/policies/readme",
        Some(NO_README),
    )
    .await;
    assert_eq!(status, 200, "{stored}");
    let revision = stored["revision"].as_str().unwrap().to_string();
    assert!(revision.starts_with("r1-"), "{stored}");
    assert_eq!(stored["policy"]["source"], "api");
    assert_eq!(stored["policy"]["changed_by"], "admin-token");

    // The very next call on B (the official client's) is refused, naming
    // the policy; nothing sent. Another path is no business of the policy.
    github.clear_requests();
    let answers = official_reads(&view, &["README.md", "docs/guide.md"]).await;
    assert_eq!(answers[0]["is_error"], true, "{answers:?}");
    assert!(
        answers[0]["text"].as_str().unwrap().contains("no_readme"),
        "{answers:?}"
    );
    assert_eq!(
        github.requests().len(),
        1,
        "only the other path reached GitHub: {:?}",
        github.requests()
    );
    github.clear_requests();
    let refused = read(&mcp, "README.md").await.unwrap_err();
    assert!(refused.to_string().contains("no_readme"), "{refused}");
    assert!(github.requests().is_empty(), "nothing reached GitHub");
    let rows = rows_naming(&admin_b, &revision).await;
    assert!(
        rows.iter()
            .any(|e| e.state == scout_host::store::TraceState::Denied
                && e.detail.to_string().contains("no_readme")),
        "the refusal names the policy and revision {revision}: {rows:#?}"
    );

    // Both hosts say the same revision is in force, and nobody is behind.
    for base in [&a.base, &b.base] {
        let (status, listed) =
            send(&http, base, ADMIN_TOKEN, Method::GET, "/v1/policies", None).await;
        assert_eq!(status, 200, "{listed}");
        assert_eq!(listed["revision"], revision.as_str(), "{listed}");
        assert_eq!(listed["hosts_behind"], json!([]), "{listed}");
        let docs = listed["policies"].as_array().unwrap();
        assert!(
            docs.iter()
                .any(|d| d["name"] == "readme" && d["text"] == NO_README),
            "{listed}"
        );
    }
    assert_eq!(
        db.psql("SELECT count(*) FROM hosts WHERE recovered_by IS NULL AND policy_applied = 1"),
        "2",
        "each host recorded applying change 1"
    );

    // A document naming an argument the tool does not have: 422 with its
    // line, and nothing stored.
    let (status, refused) = send(
        &http,
        &a.base,
        ADMIN_TOKEN,
        Method::PUT,
        "/v1/policies/branches",
        Some(UNKNOWN_ARGUMENT),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_policy", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("branches:4:"), "the line: {message}");
    assert!(message.contains("nothing was stored"), "{message}");
    assert_eq!(db.psql("SELECT count(*) FROM policies"), "1");
    assert_eq!(
        db.psql("SELECT count FROM policy_changes"),
        "1",
        "the change count did not move"
    );

    // DELETE on A: B reads the README again at once.
    let (status, deleted) = send(
        &http,
        &a.base,
        ADMIN_TOKEN,
        Method::DELETE,
        "/v1/policies/readme",
        None,
    )
    .await;
    assert_eq!(status, 200, "{deleted}");
    assert!(
        deleted["revision"].as_str().unwrap().starts_with("r2-"),
        "{deleted}"
    );
    assert_eq!(deleted["policy"]["retired"], true);
    github.clear_requests();
    let answers = official_reads(&view, &["README.md"]).await;
    assert_eq!(answers[0]["is_error"], false, "{answers:?}");
    assert!(answers[0]["text"].as_str().unwrap().contains("# Hello"));
    assert_eq!(github.requests().len(), 1);
    // Each change is a trace row with its actor and revision.
    assert_eq!(
        db.psql(
            "SELECT string_agg(rule || ' ' || (detail::json->>'policy_revision') || ' ' || (detail::json->'actor'->>'subject'), ',' ORDER BY seq) FROM trace WHERE state = 'deployed'"
        ),
        format!(
            "policy_stored {revision} admin-token,policy_retired {} admin-token",
            deleted["revision"].as_str().unwrap()
        )
    );
    // A second DELETE finds nothing to delete.
    let (status, _) = send(
        &http,
        &b.base,
        ADMIN_TOKEN,
        Method::DELETE,
        "/v1/policies/readme",
        None,
    )
    .await;
    assert_eq!(status, 404);

    // B paused (SIGSTOP, within its lease): A stores the change, applies
    // it, and after 10 s answers naming B, the one host behind.
    b.signal("STOP");
    let (status, late) = send(
        &http,
        &a.base,
        ADMIN_TOKEN,
        Method::PUT,
        "/v1/policies/readme",
        Some(NO_README),
    )
    .await;
    let behind = db.psql(
        "SELECT string_agg(host_id, ',') FROM hosts WHERE recovered_by IS NULL AND policy_applied < 3",
    );
    b.signal("CONT");
    assert_eq!(status, 504, "{late}");
    assert_eq!(late["error"]["code"], "not_applied", "{late}");
    let message = late["error"]["message"].as_str().unwrap();
    assert!(
        !behind.contains(',') && message.contains(&format!("host {behind} has not applied")),
        "names B ({behind}) alone: {message}"
    );
    assert!(
        message.contains("stored as policy revision r3-"),
        "{message}"
    );
    // The change stays stored; B applies it once it runs again.
    super::crash_safety::wait_for("B to apply change 3", common::EVENTUALLY, async || {
        (db.psql("SELECT count(*) FROM hosts WHERE recovered_by IS NULL AND policy_applied = 3")
            == "2")
            .then_some(())
    })
    .await;
    assert!(read(&mcp, "README.md").await.is_err(), "refused on B again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_host_applies_and_answers_and_only_an_admin_changes_policies() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let issuer = Issuer::start(vec![keys().issuer.jwk.clone()]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("base.cedar"),
        "@id(\"base_no_secrets\")\nforbid (principal, action, resource)\nwhen { context.args has path && context.args.path == \"secrets.txt\" };\n",
    )
    .unwrap();
    let config = write_config(
        dir.path(),
        "one",
        &github,
        &format!(
            "\n[policy]\nfiles = [\"base.cedar\"]\n{}",
            oidc_table(&issuer)
        ),
    );
    let serve = common::serve(&config).start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    admin.set_up().await;
    let view = admin.session().await;
    let mcp = Mcp::new(&http, &view).connect().await;
    assert!(read(&mcp, "README.md").await.is_ok());

    // A viewer reads the policies, and cannot change them.
    let viewer = keys()
        .issuer
        .sign(&issuer.claims("vera@example.com", json!("viewer"), json!({})));
    let (status, listed) = send(
        &http,
        &serve.base,
        &viewer,
        Method::GET,
        "/v1/policies",
        None,
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    assert!(listed["revision"].as_str().unwrap().starts_with("r0-"));
    assert_eq!(listed["policies"][0]["source"], "file", "{listed}");
    let (status, refused) = send(
        &http,
        &serve.base,
        &viewer,
        Method::PUT,
        "/v1/policies/readme",
        Some(NO_README),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    // An admin of the issuer may.
    let root = keys()
        .issuer
        .sign(&issuer.claims("root@example.com", json!("admin"), json!({})));
    let (status, stored) = send(
        &http,
        &serve.base,
        &root,
        Method::PUT,
        "/v1/policies/readme",
        Some(NO_README),
    )
    .await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["policy"]["changed_by"], "root@example.com");
    let revision = stored["revision"].as_str().unwrap().to_string();
    assert!(revision.starts_with("r1-"), "{stored}");
    github.clear_requests();
    assert!(read(&mcp, "README.md").await.is_err());
    assert!(github.requests().is_empty(), "nothing reached GitHub");
    assert!(!rows_naming(&admin, &revision).await.is_empty());

    // The file's name is the file's.
    let (status, refused) = send(
        &http,
        &serve.base,
        ADMIN_TOKEN,
        Method::PUT,
        "/v1/policies/base.cedar",
        Some(NO_README),
    )
    .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "file_owned");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("base.cedar"),
        "{refused}"
    );
    let (status, _) = send(
        &http,
        &serve.base,
        ADMIN_TOKEN,
        Method::DELETE,
        "/v1/policies/base.cedar",
        None,
    )
    .await;
    assert_eq!(status, 409);

    // A document whose id another already uses: 422, nothing stored.
    let (status, refused) = send(
        &http,
        &serve.base,
        ADMIN_TOKEN,
        Method::PUT,
        "/v1/policies/again",
        Some(NO_README),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    let (_, listed) = send(
        &http,
        &serve.base,
        ADMIN_TOKEN,
        Method::GET,
        "/v1/policies",
        None,
    )
    .await;
    assert_eq!(listed["revision"], revision.as_str(), "{listed}");
    assert!(
        !listed["policies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["name"] == "again"),
        "{listed}"
    );

    // Deleted by the admin: the README is read again.
    let (status, deleted) = send(
        &http,
        &serve.base,
        &root,
        Method::DELETE,
        "/v1/policies/readme",
        None,
    )
    .await;
    assert_eq!(status, 200, "{deleted}");
    assert!(read(&mcp, "README.md").await.is_ok());
}

/// The store's side, on both backends: a change lands only against the
/// count it was validated at; a deletion keeps the row, retired; each
/// change bumps the one count; on PostgreSQL each host records the count
/// it applied and the live hosts behind are listed.
fn the_store_counts_changes_and_hosts_behind(
    stores: [std::sync::Arc<dyn scout_host::store::Store>; 2],
    fleet: bool,
) {
    use scout_host::store::{PolicyChange, block};
    let [one, two] = stores;
    assert_eq!(block(one.policy_change_count()).unwrap(), 0);
    let made = block(one.put_policy("readme", NO_README, "alice", 0)).unwrap();
    let PolicyChange::Made(doc) = made else {
        panic!("{made:?}")
    };
    assert_eq!((doc.revision, doc.change, doc.retired), (1, 1, false));
    assert_eq!(doc.changed_by, "alice");
    // Validated at 0, but the count is 1 now: not made.
    assert_eq!(
        block(two.put_policy("other", NO_README, "bob", 0)).unwrap(),
        PolicyChange::Stale { change: 1 }
    );
    let PolicyChange::Made(doc) = block(two.put_policy("readme", "// v2", "bob", 1)).unwrap()
    else {
        panic!("stored at 1")
    };
    assert_eq!(
        (doc.revision, doc.change, doc.text.as_str()),
        (2, 2, "// v2")
    );
    let PolicyChange::Made(doc) = block(one.retire_policy("readme", "carol")).unwrap() else {
        panic!("retired")
    };
    assert_eq!((doc.revision, doc.change, doc.retired), (3, 3, true));
    assert_eq!(
        block(one.retire_policy("readme", "carol")).unwrap(),
        PolicyChange::NotFound
    );
    let stored = block(two.stored_policies()).unwrap();
    assert_eq!(stored.change, 3);
    assert_eq!(stored.docs.len(), 1);
    assert_eq!(stored.live().count(), 0);
    // Hosts behind: every host until each records the count.
    let behind = block(one.hosts_behind_policy(3)).unwrap();
    if fleet {
        assert_eq!(behind.len(), 2, "{behind:?}");
        block(one.policy_applied(3)).unwrap();
        assert_eq!(
            block(two.hosts_behind_policy(3)).unwrap(),
            vec![two.host().unwrap()]
        );
        block(two.policy_applied(3)).unwrap();
        // An older count recorded late never moves a host back.
        block(two.policy_applied(2)).unwrap();
    }
    assert!(block(one.hosts_behind_policy(3)).unwrap().is_empty());
}

#[test]
fn the_store_counts_changes_on_sqlite() {
    let db = scout_tests::TempDb::new("policy-store");
    let open = || -> std::sync::Arc<dyn scout_host::store::Store> {
        std::sync::Arc::new(scout_host::store::SqliteStore::open(db.path()).unwrap())
    };
    the_store_counts_changes_and_hosts_behind([open(), open()], false);
}

#[test]
fn the_store_counts_changes_and_hosts_behind_on_postgres() {
    let Some(db) = scout_tests::pg::database_or_skip("policy_store") else {
        return;
    };
    let open = || -> std::sync::Arc<dyn scout_host::store::Store> {
        std::sync::Arc::new(
            scout_host::store::PgStore::connect(scout_host::store::PgOptions::new(db.url()))
                .unwrap(),
        )
    };
    the_store_counts_changes_and_hosts_behind([open(), open()], true);
}

/// Fail-closed: a stored document that no longer validates against a
/// host's schema (here the connector it names is gone after a restart)
/// is never skipped. The host starts, so its admin API can fix it, but
/// applies nothing of the stored set: it refuses every call under
/// `stored_policies_unapplied` and says every error; the document deleted,
/// it decides under the rest again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_policy_that_no_longer_validates_refuses_every_call_until_it_is_fixed() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    {
        let serve = common::serve(&write_config(dir.path(), "one", &github, "")).start();
        let (status, stored) = send(
            &http,
            &serve.base,
            ADMIN_TOKEN,
            Method::PUT,
            "/v1/policies/readme",
            Some(NO_README),
        )
        .await;
        assert_eq!(status, 200, "{stored}");
    }
    // The same store, GitHub no longer served.
    let config = dir.path().join("one.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let without = &text[..text.find("[connectors.github]").unwrap()];
    std::fs::write(&config, without).unwrap();
    let serve = common::serve(&config).start();
    let (status, listed) = send(
        &http,
        &serve.base,
        ADMIN_TOKEN,
        Method::GET,
        "/v1/policies",
        None,
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["applied_change"], Value::Null, "{listed}");
    assert_eq!(listed["stored_change"], 1, "{listed}");
    let refused = listed["refused"].as_array().expect("the errors are shown");
    assert!(
        refused
            .iter()
            .any(|line| line.as_str().unwrap().starts_with("readme:")),
        "each error names its document and line: {listed}"
    );
    // Deleted through the API: nothing refused any more.
    let (status, deleted) = send(
        &http,
        &serve.base,
        ADMIN_TOKEN,
        Method::DELETE,
        "/v1/policies/readme",
        None,
    )
    .await;
    assert_eq!(status, 200, "{deleted}");
    let (_, listed) = send(
        &http,
        &serve.base,
        ADMIN_TOKEN,
        Method::GET,
        "/v1/policies",
        None,
    )
    .await;
    assert_eq!(listed["applied_change"], 2, "{listed}");
    assert!(listed.get("refused").is_none(), "{listed}");
}
