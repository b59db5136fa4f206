//! `scout-host audit` and `GET /v1/audit` (issue 23 item 6, seed 003:
//! "least privilege was measured at executable consequence"): what a
//! session of a role could actually cause, per tool (gate, routes with
//! their destinations and origins, credential, folders, joint reads), run
//! as the real binary against components built from source; and each kind
//! of dead authority the store holds, seeded through the store, found when
//! it holds and not otherwise. Then the same over the admin API, and the
//! store's inventory on SQLite and PostgreSQL.

use crate::common;

use reqwest::Method;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use scout_host::policy::{Catalog, Switches};
use scout_host::serve::identity::{Role as ApiRole, permit};
use scout_host::serve::{ServeConfig, ServeHost};
use scout_host::store::prelude::*;
use scout_host::store::{
    PgOptions, PgStore, ProfileKind, SqliteStore, Store, TraceEvent, TraceState, args_digest,
};
use scout_tests::TempDb;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

const KEY_HEX: &str = "6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b";
const ADMIN_TOKEN: &str = "admin-token-for-the-authority-audit-0123";
const SECRET: &str = "ghp_authorityAuditSecret0123456789";
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

fn key() -> [u8; 32] {
    hex::decode(KEY_HEX).unwrap().try_into().unwrap()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `[connectors.NAME]` for a built component, with `origin` and more lines.
fn table(name: &str, component: &str, origin: Option<&str>, more: &str) -> String {
    let origin = origin
        .map(|o| format!("origin = {o:?}\nallow_private_network = true\n"))
        .unwrap_or_default();
    format!(
        "\n[connectors.{name}]\ncomponent = {:?}\n{origin}{more}",
        common::component(component)
    )
}

fn github(more: &str) -> String {
    table(
        "github",
        scout_tests::components::GITHUB,
        Some("https://api.github.com"),
        more,
    )
}

/// A SQLite store and a `serve` configuration naming it, beside each other.
struct Setup {
    db: TempDb,
    config: PathBuf,
}

impl Setup {
    fn new(name: &str, top: &str, connectors: &str) -> Setup {
        let db = TempDb::new(&format!("authority-{name}"));
        let config = db.path().with_extension("toml");
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:0\"\ndatabase = {:?}\n{top}\n{connectors}",
                db.path().display().to_string()
            ),
        )
        .unwrap();
        // Created now, so the store exists before the first audit reads it.
        SqliteStore::open(db.path()).unwrap();
        Setup { db, config }
    }

    fn store(&self) -> SqliteStore {
        SqliteStore::open(self.db.path()).unwrap()
    }

    fn config(&self) -> &str {
        self.config.to_str().unwrap()
    }

    /// Makes a stored connection look stored `days` ago.
    fn backdate_connection(&self, brand: &str, connection: &str, days: i64) {
        let conn = rusqlite::Connection::open(self.db.path()).unwrap();
        let changed = conn
            .execute(
                "UPDATE connections SET updated_at_ms = ?1 WHERE brand = ?2 AND connector = ?3",
                rusqlite::params![now_ms() - days * DAY_MS, brand, connection],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.config);
    }
}

/// Runs `scout-host audit ARGS` with only `env` (and what finds the
/// toolchain and the component cache) in its environment.
fn run(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scout-host"));
    command.arg("audit").args(args).env_clear();
    for var in ["PATH", "HOME", "SCOUT_CACHE_DIR", "XDG_CACHE_HOME"] {
        if let Ok(value) = std::env::var(var) {
            command.env(var, value);
        }
    }
    let output = command
        .envs(env.iter().copied())
        .output()
        .expect("run scout-host audit");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(
        !stderr.contains("panicked"),
        "a refusal, never a panic: {stderr}"
    );
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        stderr,
    )
}

/// The audit's JSON, the command having succeeded; the secret is never in it.
fn audit_json(args: &[&str], env: &[(&str, &str)]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let (ok, stdout, stderr) = run(&all, env);
    assert!(ok, "{stderr}");
    assert!(!stdout.contains(SECRET), "no secret in the audit");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn audit_text(args: &[&str], env: &[(&str, &str)]) -> String {
    let (ok, stdout, stderr) = run(args, env);
    assert!(ok, "{stderr}");
    assert!(!stdout.contains(SECRET), "no secret in the audit");
    stdout
}

/// A refusal: the command failed, and stderr says `says`.
fn refused(args: &[&str], env: &[(&str, &str)], says: &str) {
    let (ok, stdout, stderr) = run(args, env);
    assert!(!ok, "refused: {args:?}\n{stdout}");
    assert!(stderr.contains(says), "{args:?}: {says:?} in\n{stderr}");
}

fn tool<'a>(audit: &'a Value, name: &str) -> &'a Value {
    audit["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} in the audit: {}", names(audit).join(", ")))
}

fn names(audit: &Value) -> Vec<String> {
    audit["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn route<'a>(tool: &'a Value, method: &str, path: &str) -> &'a Value {
    tool["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["method"] == method && r["path"] == path)
        .unwrap_or_else(|| panic!("{method} {path} among {}", tool["routes"]))
}

fn findings<'a>(audit: &'a Value, kind: &str) -> Vec<&'a Value> {
    audit["dead_authority"]["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("dead authority read: {}", audit["dead_authority"]))
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect()
}

fn event(
    session: &str,
    brand: &str,
    tool: Option<&str>,
    state: TraceState,
    at_ms: i64,
) -> TraceEvent {
    TraceEvent {
        session: session.into(),
        brand: brand.into(),
        call_id: Some(format!("c-{session}-{at_ms}")),
        tool: tool.map(str::to_string),
        state,
        rule: None,
        detail: json!({}),
        at_ms,
        origin: Default::default(),
    }
}

/// A saved-profile body (the admin API's `PUT .../profiles/{name}`).
fn profile_body(name: &str, tools: &[&str], grant: Value) -> Value {
    json!({
        "kind": "coworker",
        "profile": {
            "name": name,
            "tools": tools,
            "grant": grant,
            "limits": {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 1}
        }
    })
}

fn save(store: &dyn Store, brand: &str, body: &Value) {
    let profile = serde_json::from_value(body["profile"].clone()).unwrap();
    scout_host::store::block(store.save_profile(
        brand,
        &profile,
        ProfileKind::Coworker,
        &Catalog::seed(),
    ))
    .unwrap();
}

#[test]
fn person_chat_with_github_shows_each_route_gate_and_credential() {
    let s = Setup::new("person", "", &github("host_env = \"GITHUB_TOKEN\"\n"));
    scout_host::store::block(s.store().put_connection("acme", "github", SECRET, &key())).unwrap();
    let writes_on = [
        ("SCOUT_STORE_KEY", KEY_HEX),
        ("GITHUB_ALLOW_WRITES", "true"),
    ];
    let args = [
        "--role",
        "person-chat",
        "--brand",
        "acme",
        "--config",
        s.config(),
    ];
    let audit = audit_json(&args, &writes_on);
    assert_eq!(audit["role"], "person-chat");
    assert_eq!(audit["role_label"], "person chat");
    assert_eq!(audit["brand"], "acme");

    // A write: it asks a person, and these are the requests it may send.
    let write = tool(&audit, "mcp__github__github_create_branch");
    assert_eq!(write["effect"], "write");
    assert_eq!(write["connector"], "github");
    assert_eq!(write["tool"], "github_create_branch");
    assert_eq!(write["gate"]["kind"], "asks_person");
    let paths: Vec<String> = write["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["method"].as_str().unwrap(),
                r["path"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        paths,
        [
            "GET /repos/{owner}/{repo}",
            "GET /repos/{owner}/{repo}/git/ref/heads/{*branch}",
            "POST /repos/{owner}/{repo}/git/refs"
        ]
    );
    let post = route(write, "POST", "/repos/{owner}/{repo}/git/refs");
    assert_eq!(post["origin"], "https://api.github.com");
    assert_eq!(post["via"], "github");
    assert_eq!(post["destination"], Value::Null);
    assert_eq!(post["sends_credential"], true);
    assert_eq!(post["read_only"], false);
    // Sent with the bearer credential of acme's own stored connection.
    let credential = &write["credential"];
    assert_eq!(credential["connection"], "github");
    assert_eq!(credential["scheme"], "bearer");
    assert!(
        credential["token_source"]
            .as_str()
            .unwrap()
            .contains("a stored secret"),
        "{credential}"
    );
    assert_eq!(credential["host_env"], "GITHUB_TOKEN");
    assert_eq!(credential["resolved"]["source"], "own");
    assert_eq!(credential["resolved"]["form"], "secret");
    // Review is required and nothing was reviewed: held, not offered.
    assert_eq!(write["review"], "new");
    assert_eq!(write["held"], true);
    assert_eq!(write["folders"], json!([]));
    assert_eq!(write["allowance"], Value::Null, "GitHub does not meter");

    let read = tool(&audit, "mcp__github__github_read_file");
    assert_eq!(read["effect"], "read");
    assert_eq!(read["gate"]["kind"], "open");
    assert_eq!(
        read["routes"],
        json!([{"method": "GET", "path": "/repos/{owner}/{repo}/contents/{*path}",
                "destination": null, "via": "github", "origin": "https://api.github.com",
                "sends_credential": true, "read_only": false, "graphql": null}])
    );
    // The orchestrator's tools are listed by name, not described.
    let other: Vec<&str> = audit["other_tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        other.contains(&"Bash") && other.contains(&"mcp__project__project_write"),
        "{other:?}"
    );
    // The store was read and holds no dead authority.
    assert_eq!(audit["dead_authority"]["stale_days"], 30);
    assert_eq!(audit["dead_authority"]["findings"], json!([]));

    // The text form says the same to a reviewer.
    let text = audit_text(&args, &writes_on);
    for line in [
        "What a person chat (role person-chat) could cause for brand acme",
        "credential: bearer, connection `github`; token source: a stored secret",
        "the deployment owner's brand may use GITHUB_TOKEN",
        "this brand's resolves: own (secret)",
        "  github_create_branch (write)\n    gate: asks a person before each call",
        "review: never reviewed — held, not offered until an operator reviews it",
        "    POST   /repos/{owner}/{repo}/git/refs -> https://api.github.com\n",
        "  github_read_file (read)\n    gate: open: runs without asking",
        "  Bash (orchestrator)",
        "== dead authority in the store (stale after 30 days): none found",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    let read_at = text.find("github_read_file (read)").unwrap();
    let write_at = text.find("github_create_branch (write)").unwrap();
    assert!(read_at < write_at, "reads first");

    // Without the operator switch the write stays registered and refuses.
    let off = audit_json(&args, &[("SCOUT_STORE_KEY", KEY_HEX)]);
    let gate = &tool(&off, "mcp__github__github_create_branch")["gate"];
    assert_eq!(gate["kind"], "refuses");
    assert_eq!(gate["rule"], "switch:GITHUB_ALLOW_WRITES");

    // Reviewed as they are now: no longer held.
    let runtime = scout_host::Runtime::new(Default::default()).unwrap();
    let component = runtime
        .load_file(Path::new(scout_tests::components::GITHUB))
        .unwrap();
    scout_host::review::approve_all(&s.store(), &component, "me").unwrap();
    let reviewed = audit_json(&args, &writes_on);
    let write = tool(&reviewed, "mcp__github__github_create_branch");
    assert_eq!(
        (&write["review"], &write["held"]),
        (&json!("reviewed"), &json!(false))
    );

    // A brand with no connection is served no GitHub tool at all.
    let globex = audit_json(
        &[
            "--role",
            "person-chat",
            "--brand",
            "globex",
            "--config",
            s.config(),
        ],
        &writes_on,
    );
    assert!(
        !names(&globex)
            .iter()
            .any(|n| n.starts_with("mcp__github__")),
        "{:?}",
        names(&globex)
    );
    assert!(!globex["other_tools"].as_array().unwrap().is_empty());
}

#[test]
fn components_alone_are_audited_without_a_store() {
    let github = common::component(scout_tests::components::GITHUB);
    let args = ["--role", "person-chat", "--component", github.as_str()];
    let audit = audit_json(&args, &[("GITHUB_ALLOW_WRITES", "true")]);
    let write = tool(&audit, "mcp__github__github_commit_files");
    assert_eq!(write["gate"]["kind"], "asks_person");
    let patch = route(
        write,
        "PATCH",
        "/repos/{owner}/{repo}/git/refs/heads/{*branch}",
    );
    assert_eq!(
        patch["origin"],
        Value::Null,
        "no configuration: no origin known"
    );
    assert_eq!(patch["sends_credential"], Value::Null);
    assert_eq!(write["credential"]["scheme"], Value::Null);
    assert_eq!(write["review"], Value::Null);
    assert_eq!(write["held"], false);
    assert_eq!(audit["brand"], Value::Null);
    assert_eq!(audit["dead_authority"], Value::Null);
    let text = audit_text(&args, &[("GITHUB_ALLOW_WRITES", "true")]);
    assert!(
        text.contains(
            "    PATCH  /repos/{owner}/{repo}/git/refs/heads/{*branch} -> github's origin"
        ),
        "{text}"
    );
    assert!(
        text.contains("dead authority: not checked (give --config"),
        "{text}"
    );
}

#[test]
fn a_named_destination_shows_its_origin_and_whether_the_credential_goes_there() {
    let cloudflare = table(
        "cloudflare",
        scout_tests::components::CLOUDFLARE,
        Some("https://api.cloudflare.com"),
        "[connectors.cloudflare.origins]\ndocs = { origin = \"https://docs.mcp.cloudflare.com\", credential = \"none\" }\n[connectors.cloudflare.deployment_headers]\nX-Account = \"CLOUDFLARE_ACCOUNT\"\n",
    );
    let s = Setup::new("destinations", "", &cloudflare);
    let env = [("SCOUT_STORE_KEY", KEY_HEX), ("CLOUDFLARE_ACCOUNT", "acct")];
    let args = ["--role", "person-chat", "--config", s.config()];
    let audit = audit_json(&args, &env);
    let docs = tool(&audit, "mcp__cloudflare__docs");
    let to_docs = route(docs, "POST", "/mcp");
    assert_eq!(to_docs["destination"], "docs");
    assert_eq!(to_docs["via"], "cloudflare");
    assert_eq!(to_docs["origin"], "https://docs.mcp.cloudflare.com");
    assert_eq!(
        to_docs["sends_credential"], false,
        "a public endpoint gets no secret"
    );
    assert_eq!(to_docs["read_only"], true);
    let execute = tool(&audit, "mcp__cloudflare__execute");
    assert_eq!(execute["gate"]["kind"], "asks_person");
    let delete = route(execute, "DELETE", "/client/v4/{*path}");
    assert_eq!(delete["origin"], "https://api.cloudflare.com");
    assert_eq!(delete["sends_credential"], true);
    assert_eq!(
        execute["credential"]["deployment_headers"],
        json!([{"header": "X-Account", "env": "CLOUDFLARE_ACCOUNT"}])
    );
    let text = audit_text(&args, &env);
    assert!(
        text.contains("    POST   /mcp -> cloudflare `docs` at https://docs.mcp.cloudflare.com, no credential [read-only POST]"),
        "{text}"
    );
    assert!(
        text.contains("; header X-Account from CLOUDFLARE_ACCOUNT"),
        "{text}"
    );
    // Without the variable its header needs, the deployment does not offer it.
    let unset = audit_json(&args, &[("SCOUT_STORE_KEY", KEY_HEX)]);
    assert!(
        !names(&unset)
            .iter()
            .any(|n| n.starts_with("mcp__cloudflare__")),
        "{:?}",
        names(&unset)
    );
}

/// The SEO analyst preset, as the admin API saves it.
fn seo_analyst() -> Value {
    profile_body(
        "seo",
        &[
            "Read",
            "Grep",
            "mcp__project__project_list",
            "mcp__project__project_read",
            "mcp__seo__seo_save_brief",
            "mcp__seo__seo_hand_off_brief",
            "mcp__dataforseo__seo_page_opportunities",
        ],
        json!({
            "connectors": ["dataforseo", "searchconsole", "analytics", "shopify"],
            "allowances": {"dataforseo": {"perRunUsd": 1.0, "perDayUsd": 3.0}},
            "skills": ["seo-method"]
        }),
    )
}

/// The audit admits connectors with `serve`'s own code: a configuration
/// `serve` refuses is refused here too, with the same words, rather than
/// audited as if it could run.
#[test]
fn the_audit_refuses_what_serve_refuses() {
    use scout_tests::components as c;
    let connectors = table(
        "analytics",
        c::ANALYTICS,
        Some("https://analyticsdata.googleapis.com"),
        "",
    );
    let s = Setup::new("refused", "require_review = false", &connectors);
    let (ok, _, stderr) = run(
        &["--role", "person-chat", "--config", s.config()],
        &[("SCOUT_STORE_KEY", KEY_HEX)],
    );
    assert!(!ok);
    let words = "connector `analytics`: its routes name destination `admin`: give its origin as `origins.admin`";
    assert!(stderr.contains(words), "{stderr}");
    let stderr = scout_tests::Serve::new(common::SCOUT_HOST, Path::new(s.config()))
        .admin_token("admin-token-0123456789abcdef")
        .store_key(KEY_HEX)
        .refused();
    assert!(stderr.contains(words), "{stderr}");
}

#[test]
fn a_specialists_grant_shows_its_allowance_joint_reads_and_folders() {
    use scout_tests::components as c;
    let connectors = [
        table("dataforseo", c::DATAFORSEO, Some("https://api.dataforseo.com"), "credential = \"basic:login\"\n"),
        table("searchconsole", c::SEARCHCONSOLE, Some("https://searchconsole.googleapis.com"), ""),
        // Its routes name the Admin API too: a configuration `serve` takes.
        table("analytics", c::ANALYTICS, Some("https://analyticsdata.googleapis.com"), "[connectors.analytics.origins]\nadmin = \"https://analyticsadmin.googleapis.com\"\n"),
        table("shopify", c::SHOPIFY, Some("https://acme.myshopify.com"), "credential = \"header:X-Shopify-Access-Token\"\n"),
        table("seo", c::SEO, None, "[connectors.seo.folders.project]\nroot = \"/srv/scout/{brand}/project\"\nwritable = true\n"),
        github(""),
    ]
    .concat();
    let s = Setup::new("specialist", "require_review = false", &connectors);
    let profile = s.db.path().with_extension("profile.json");
    std::fs::write(&profile, seo_analyst().to_string()).unwrap();
    let args = [
        "--role",
        "specialist",
        "--profile",
        profile.to_str().unwrap(),
        "--config",
        s.config(),
    ];
    let env = [
        ("SCOUT_STORE_KEY", KEY_HEX),
        ("GITHUB_ALLOW_WRITES", "true"),
    ];
    let audit = audit_json(&args, &env);
    assert_eq!(audit["profile"], "seo");
    // A specialist reads and proposes: no write of any connector, and
    // nothing of a connector its grant does not name.
    for t in audit["tools"].as_array().unwrap() {
        assert_eq!(t["effect"], "read", "{}", t["name"]);
        assert_ne!(t["connector"], "github", "{}", t["name"]);
    }
    // A billed read is charged to the grant's allowance, with its figures.
    let billed = tool(&audit, "mcp__dataforseo__dataforseo_keyword_ideas");
    assert_eq!(billed["gate"]["kind"], "allowance");
    assert!(
        billed["gate"]["text"]
            .as_str()
            .unwrap()
            .contains("$1 per run, $3 per day"),
        "{}",
        billed["gate"]
    );
    assert_eq!(
        billed["allowance"],
        json!({"source": "grant", "unit": "usd", "per_run": 1.0, "per_day": 3.0})
    );
    let post = route(
        billed,
        "POST",
        "/v3/dataforseo_labs/google/keyword_ideas/live",
    );
    assert_eq!(post["read_only"], true, "a read tool's POST is marked");
    assert_eq!(post["origin"], "https://api.dataforseo.com");
    assert_eq!(billed["credential"]["scheme"], "basic:login");
    // The joint tool reads its peers, each with its own origin and credential.
    let joint = tool(&audit, "mcp__dataforseo__seo_page_opportunities");
    let peers: Vec<(&str, bool)> = joint["reads_from"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["connector"].as_str().unwrap(),
                p["served"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(peers, [("searchconsole", true), ("shopify", true)]);
    let shopify = &joint["reads_from"][1]["credential"];
    assert_eq!(shopify["scheme"], "header:X-Shopify-Access-Token");
    let to_shopify = route(joint, "POST", "/admin/api/2026-10/graphql.json");
    assert_eq!(to_shopify["via"], "shopify");
    assert_eq!(to_shopify["destination"], "shopify");
    assert_eq!(to_shopify["origin"], "https://acme.myshopify.com");
    assert_eq!(to_shopify["graphql"], "queries_only");
    assert_eq!(
        to_shopify["graphql_fields"],
        json!(["productByIdentifier", "pages"]),
        "the root fields its query may select"
    );
    let to_gsc = route(
        joint,
        "POST",
        "/webmasters/v3/sites/{site:encoded}/searchAnalytics/query",
    );
    assert_eq!(to_gsc["origin"], "https://searchconsole.googleapis.com");
    assert_eq!(joint["reads_from"][0]["credential"]["connection"], "google");
    // The brief tools write their folder, and only that: the profile holds
    // the project folder without project_write.
    let brief = tool(&audit, "mcp__seo__seo_save_brief");
    assert_eq!(brief["credential"], Value::Null, "no origin of its own");
    assert_eq!(
        brief["folders"],
        json!([{"name": "project", "root": "/srv/scout/{brand}/project", "held": true, "writable": true}])
    );
    assert_eq!(brief["review"], Value::Null, "review is not required here");
    let text = audit_text(&args, &env);
    for line in [
        "What a specialist coworker run (role specialist) could cause, profile seo",
        "    gate: charged against the grant's allowance ($1 per run, $3 per day)",
        "    POST   /v3/dataforseo_labs/google/keyword_ideas/live -> https://api.dataforseo.com [read-only POST]",
        "    POST   /admin/api/2026-10/graphql.json -> shopify at https://acme.myshopify.com [GraphQL queries only, root fields productByIdentifier, pages]",
        "    reads shopify (served to this session): header:X-Shopify-Access-Token, connection `shopify`",
        "    folder project: /srv/scout/{brand}/project (read and write)",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }

    // The profile itself, without the API's wrapper, is read too.
    std::fs::write(&profile, seo_analyst()["profile"].to_string()).unwrap();
    let bare = audit_json(&args, &env);
    assert_eq!(bare["tools"], audit["tools"]);

    // A profile without a grant runs as a plain coworker, not a specialist.
    let writer = profile_body("writer", &["Read", "mcp__project__project_read"], json!({}));
    std::fs::write(&profile, writer.to_string()).unwrap();
    refused(&args, &env, "runs as a coworker run");
    let _ = std::fs::remove_file(&profile);
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let s = Setup::new("refusals", "", &github(""));
    let github = common::component(scout_tests::components::GITHUB);
    let with_key = [("SCOUT_STORE_KEY", KEY_HEX)];
    let config = s.config();
    refused(
        &["--role", "boss", "--config", config],
        &with_key,
        "unknown role `boss`: give one of person-chat, inbound-email, coworker",
    );
    refused(
        &[
            "--role",
            "specialist",
            "--profile",
            "/nonexistent/p.json",
            "--config",
            config,
        ],
        &with_key,
        "cannot read the profile /nonexistent/p.json",
    );
    let profile = s.db.path().with_extension("bad.json");
    std::fs::write(&profile, "{\"kind\": \"coworker\"").unwrap();
    let path = profile.to_str().unwrap();
    refused(
        &[
            "--role",
            "specialist",
            "--profile",
            path,
            "--config",
            config,
        ],
        &with_key,
        "give the body `PUT /v1/brands/{brand}/profiles/{name}` takes, or the profile itself",
    );
    // A profile the save rules refuse is refused here too, naming the rule.
    let writes = profile_body(
        "committer",
        &["mcp__github__github_create_branch"],
        json!({"connectors": ["github"]}),
    );
    std::fs::write(&profile, writes.to_string()).unwrap();
    refused(
        &[
            "--role",
            "specialist",
            "--profile",
            path,
            "--config",
            config,
        ],
        &with_key,
        "rule 2",
    );
    refused(
        &[
            "--role",
            "person-chat",
            "--profile",
            path,
            "--config",
            config,
        ],
        &with_key,
        "a person chat runs without a profile",
    );
    refused(
        &["--role", "specialist", "--config", config],
        &with_key,
        "a specialist coworker run runs from a profile",
    );
    refused(
        &["--role", "person-chat", "--config", config],
        &[],
        "SCOUT_STORE_KEY is not set",
    );
    refused(
        &[
            "--role",
            "person-chat",
            "--config",
            "/nonexistent/serve.toml",
        ],
        &with_key,
        "cannot read /nonexistent/serve.toml",
    );
    // A store that does not exist is not created: the audit only reads.
    let elsewhere = s.db.path().with_extension("elsewhere.toml");
    let missing = s.db.path().with_extension("missing.db");
    std::fs::write(
        &elsewhere,
        format!(
            "database = {:?}\n{}",
            missing.display().to_string(),
            self::github("")
        ),
    )
    .unwrap();
    refused(
        &[
            "--role",
            "person-chat",
            "--config",
            elsewhere.to_str().unwrap(),
        ],
        &with_key,
        "there is no store at",
    );
    assert!(!missing.exists(), "nothing was created");
    let _ = std::fs::remove_file(&elsewhere);
    refused(
        &[
            "--role",
            "person-chat",
            "--config",
            config,
            "--stale-days",
            "0",
        ],
        &with_key,
        "stale days must be from 1 to 3650",
    );
    refused(
        &[
            "--role",
            "person-chat",
            "--component",
            "/nonexistent/c.wasm",
        ],
        &[],
        "cannot load the component /nonexistent/c.wasm",
    );
    refused(&["--role", "person-chat"], &[], "--config");
    refused(
        &[
            "--role",
            "person-chat",
            "--brand",
            "acme",
            "--component",
            github.as_str(),
        ],
        &[],
        "--config",
    );
    let _ = std::fs::remove_file(&profile);
}

#[test]
fn a_connection_unused_for_the_stale_days_is_found() {
    let s = Setup::new("stale", "", &github(""));
    let store = s.store();
    for brand in ["acme", "globex", "initech", "umbrella"] {
        scout_host::store::block(store.put_connection(brand, "github", SECRET, &key())).unwrap();
    }
    for brand in ["acme", "globex", "umbrella"] {
        s.backdate_connection(brand, "github", 40);
    }
    // globex's sessions used it two days ago; umbrella's is disabled.
    scout_host::store::block(store.record(&event(
        "s-g",
        "globex",
        Some("mcp__github__github_read_file"),
        TraceState::Executed,
        now_ms() - 2 * DAY_MS,
    )))
    .unwrap();
    // A request that never ran is no use.
    scout_host::store::block(store.record(&event(
        "s-a",
        "acme",
        Some("mcp__github__github_read_file"),
        TraceState::Requested,
        now_ms(),
    )))
    .unwrap();
    assert!(scout_host::store::block(store.disable_connection("umbrella", "github")).unwrap());
    s.backdate_connection("umbrella", "github", 40);
    let env = [("SCOUT_STORE_KEY", KEY_HEX)];
    let args = ["--role", "read-only", "--config", s.config()];
    let audit = audit_json(&args, &env);
    let stale = findings(&audit, "stale_connection");
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert_eq!(stale[0]["brand"], "acme");
    assert_eq!(stale[0]["connection"], "github");
    assert_eq!(stale[0]["last_used_at_ms"], Value::Null);
    assert!(
        stale[0]["idle_days"].as_i64().unwrap() >= 40,
        "{}",
        stale[0]
    );
    let text = audit_text(&args, &env);
    assert!(
        text.contains("- stale connection: brand acme's `github`,")
            && text.contains("never used by a session; idle 40 days"),
        "{text}"
    );
    // Longer than it has been idle: not stale.
    let patient = audit_json(&[&args[..], &["--stale-days", "41"]].concat(), &env);
    assert!(findings(&patient, "stale_connection").is_empty());
    // A brand it is shared with used it this morning: in use.
    scout_host::store::block(store.share_connection("acme", "github", "hooli")).unwrap();
    scout_host::store::block(store.record(&event(
        "s-h",
        "hooli",
        Some("mcp__github__github_list_issues"),
        TraceState::Executed,
        now_ms() - DAY_MS / 2,
    )))
    .unwrap();
    let shared = audit_json(&args, &env);
    assert!(
        findings(&shared, "stale_connection").is_empty(),
        "{}",
        shared["dead_authority"]
    );
    // globex's use, once older than the stale days, no longer counts.
    let strict = audit_json(&[&args[..], &["--stale-days", "1"]].concat(), &env);
    let brands: Vec<&str> = findings(&strict, "stale_connection")
        .iter()
        .map(|f| f["brand"].as_str().unwrap())
        .collect();
    assert_eq!(
        brands,
        ["globex"],
        "acme's share was used hours ago, initech's is new"
    );
}

#[test]
fn person_chats_spend_threshold_is_in_the_billed_tools_gate() {
    let connectors = table(
        "firecrawl",
        scout_tests::components::FIRECRAWL,
        Some("https://api.firecrawl.dev"),
        "[connectors.firecrawl.person_allowance]\nper_run_credits = 100\nper_day_credits = 1000\nper_call_threshold_credits = 5\n",
    ) + &table(
        "dataforseo",
        scout_tests::components::DATAFORSEO,
        Some("https://api.dataforseo.com"),
        "[connectors.dataforseo.person_allowance]\nper_run_usd = 1.0\nper_day_usd = 3.0\n",
    );
    let s = Setup::new("thresholds", "", &connectors);
    let env = [("SCOUT_STORE_KEY", KEY_HEX)];
    let audit = audit_json(&["--role", "person-chat", "--config", s.config()], &env);
    let search = tool(&audit, "mcp__firecrawl__firecrawl_search");
    assert_eq!(search["gate"]["kind"], "spend");
    assert!(
        search["gate"]["text"]
            .as_str()
            .unwrap()
            .contains("reservations together stay at or below the per-call threshold of 5 credits, and asks a person before going above it"),
        "{search}"
    );
    let serp = tool(&audit, "mcp__dataforseo__dataforseo_serp_organic");
    assert!(
        serp["gate"]["text"].as_str().unwrap().contains(
            "asks a person before each call (no per-call threshold is set for this connector)"
        ),
        "{serp}"
    );
}

#[test]
fn a_grant_naming_a_connector_without_a_live_credential_is_found() {
    let connectors = github("")
        + &table(
            "firecrawl",
            scout_tests::components::FIRECRAWL,
            Some("https://api.firecrawl.dev"),
            "",
        );
    let s = Setup::new("grants", "", &connectors);
    let store = s.store();
    scout_host::store::block(store.put_connection("acme", "github", SECRET, &key())).unwrap();
    let researcher = profile_body(
        "researcher",
        &["Read", "mcp__firecrawl__firecrawl_scrape"],
        json!({"connectors": ["firecrawl"], "allowances": {"firecrawl": {"perRunCredits": 25, "perDayCredits": 100}}}),
    );
    let coder = profile_body(
        "coder",
        &["Read", "mcp__github__github_read_file"],
        json!({"connectors": ["github"]}),
    );
    let analyst = profile_body(
        "analyst",
        &["Read", "mcp__searchconsole__searchconsole_totals"],
        json!({"connectors": ["searchconsole"]}),
    );
    for body in [&researcher, &coder, &analyst] {
        save(&store, "acme", body);
    }
    let env = [("SCOUT_STORE_KEY", KEY_HEX)];
    let args = ["--role", "read-only", "--config", s.config()];
    let audit = audit_json(&args, &env);
    let found = findings(&audit, "grant_without_credential");
    let pairs: Vec<(&str, &str)> = found
        .iter()
        .map(|f| {
            (
                f["profile"].as_str().unwrap(),
                f["connector"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [("analyst", "searchconsole"), ("researcher", "firecrawl")]
    );
    assert!(found.iter().all(|f| f["brand"] == "acme"));
    assert!(
        found[0]["why"]
            .as_str()
            .unwrap()
            .contains("this host does not run the `searchconsole` connector"),
        "{}",
        found[0]
    );
    assert!(
        found[1]["why"]
            .as_str()
            .unwrap()
            .contains("no `firecrawl` credential resolves for brand `acme`"),
        "{}",
        found[1]
    );
    let text = audit_text(&args, &env);
    assert!(
        text.contains("- grant without a credential: brand acme's profile `researcher` grants firecrawl: no `firecrawl` credential resolves"),
        "{text}"
    );
    // Once acme's Firecrawl connection is stored, that grant is live.
    scout_host::store::block(store.put_connection("acme", "firecrawl", "fc-audit-key", &key()))
        .unwrap();
    let audit = audit_json(&args, &env);
    let left: Vec<&str> = findings(&audit, "grant_without_credential")
        .iter()
        .map(|f| f["profile"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["analyst"]);
    // A disabled connection resolves for no one.
    assert!(scout_host::store::block(store.disable_connection("acme", "github")).unwrap());
    let audit = audit_json(&args, &env);
    let left: Vec<&str> = findings(&audit, "grant_without_credential")
        .iter()
        .map(|f| f["profile"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["analyst", "coder"]);
}

#[test]
fn a_review_of_a_tool_no_component_offers_is_found() {
    let s = Setup::new("reviews", "", &github(""));
    let store = s.store();
    // Reviewed when it was described otherwise: the tool is still offered.
    scout_host::store::block(store.approve_tool(
        "github",
        "github_read_file",
        "an-older-digest",
        None,
        None,
        "alice",
    ))
    .unwrap();
    scout_host::store::block(store.approve_tool(
        "github",
        "github_delete_repository",
        "d1",
        None,
        None,
        "bob",
    ))
    .unwrap();
    scout_host::store::block(store.approve_tool(
        "railway",
        "railway_logs",
        "d2",
        None,
        None,
        "carol",
    ))
    .unwrap();
    let env = [("SCOUT_STORE_KEY", KEY_HEX)];
    let args = ["--role", "read-only", "--config", s.config()];
    let audit = audit_json(&args, &env);
    let found = findings(&audit, "review_without_tool");
    let tools: Vec<(&str, &str)> = found
        .iter()
        .map(|f| {
            (
                f["connector"].as_str().unwrap(),
                f["tool"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("github", "github_delete_repository"),
            ("railway", "railway_logs")
        ]
    );
    assert_eq!(found[0]["approved_by"], "bob");
    assert!(
        found[0]["why"]
            .as_str()
            .unwrap()
            .contains("offers no tool `github_delete_repository`"),
        "{}",
        found[0]
    );
    assert!(
        found[1]["why"]
            .as_str()
            .unwrap()
            .contains("no loaded component is the `railway` connector"),
        "{}",
        found[1]
    );
    let text = audit_text(&args, &env);
    assert!(
        text.contains("- review of a tool no component offers: github `github_delete_repository`, reviewed by bob"),
        "{text}"
    );
}

#[test]
fn a_pending_approval_of_an_ended_session_is_found() {
    let s = Setup::new("pending", "", &github(""));
    let store = s.store();
    let tool = "mcp__github__github_create_branch";
    let digest = args_digest(&json!({"branch": "x"}));
    // Opened two days ago: past any session's time (a day by default).
    scout_host::store::block(store.record(&event(
        "s-old",
        "acme",
        None,
        TraceState::Registered,
        now_ms() - 2 * DAY_MS,
    )))
    .unwrap();
    let old = scout_host::store::block(store.request_approval("s-old", tool, &digest)).unwrap();
    // Decided: nothing pending.
    let decided = scout_host::store::block(store.request_approval(
        "s-old",
        tool,
        &args_digest(&json!({"b": 2})),
    ))
    .unwrap();
    scout_host::store::block(store.decide(decided, false, "alice")).unwrap();
    // Never opened on this store at all.
    let ghost = scout_host::store::block(store.request_approval("s-ghost", tool, &digest)).unwrap();
    // Opened just now: it may be live on the host serving it.
    scout_host::store::block(store.record(&event(
        "s-new",
        "acme",
        None,
        TraceState::Registered,
        now_ms(),
    )))
    .unwrap();
    scout_host::store::block(store.request_approval("s-new", tool, &digest)).unwrap();
    let env = [("SCOUT_STORE_KEY", KEY_HEX)];
    let args = ["--role", "read-only", "--config", s.config()];
    let audit = audit_json(&args, &env);
    let found = findings(&audit, "pending_approval_of_ended_session");
    let ids: Vec<(i64, &str)> = found
        .iter()
        .map(|f| {
            (
                f["approval"].as_i64().unwrap(),
                f["session"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(ids, [(old.0, "s-old"), (ghost.0, "s-ghost")]);
    assert_eq!(found[0]["tool"], tool);
    assert!(
        found[0]["why"]
            .as_str()
            .unwrap()
            .contains("longer than a session lives (session_ttl_secs = 86400)"),
        "{}",
        found[0]
    );
    assert!(
        found[1]["why"]
            .as_str()
            .unwrap()
            .contains("no session of this id was ever opened"),
        "{}",
        found[1]
    );
    let notes = audit["dead_authority"]["notes"].to_string();
    assert!(
        notes.contains("only the serving host knows its sessions"),
        "{notes}"
    );
    let text = audit_text(&args, &env);
    assert!(
        text.contains(&format!(
            "- pending approval of an ended session: approval {} for {tool} in session s-old",
            old.0
        )),
        "{text}"
    );
    // Once decided, it is no longer dead authority.
    scout_host::store::block(store.decide(old, false, "alice")).unwrap();
    scout_host::store::block(store.decide(ghost, false, "alice")).unwrap();
    let audit = audit_json(&args, &env);
    assert!(findings(&audit, "pending_approval_of_ended_session").is_empty());
}

/// The admin API's environment: the admin token and the store key.
fn test_env(name: &str) -> Option<String> {
    match name {
        "SCOUT_ADMIN_TOKEN" => Some(ADMIN_TOKEN.to_string()),
        "SCOUT_STORE_KEY" => Some(KEY_HEX.to_string()),
        _ => None,
    }
}

async fn admin(
    http: &reqwest::Client,
    base: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http
        .request(method, format!("{base}{path}"))
        .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"));
    if let Some(body) = body {
        request = request
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_answers_the_same_audit() {
    let s = Setup::new("api", "", &github(""));
    let config = ServeConfig::load(&s.config).unwrap();
    let host: Arc<ServeHost> = ServeHost::start(
        config,
        Switches::from_vars([("GITHUB_ALLOW_WRITES", "true")]),
        test_env,
    )
    .expect("serve starts");
    let store = host.host().store().clone();
    let listening = common::listen(host).await;
    let (http, base) = (common::client(), listening.base.clone());
    let get = |path: String| {
        let (http, base) = (http.clone(), base.clone());
        async move { admin(&http, &base, Method::GET, &path, None).await }
    };
    let (status, body) = admin(
        &http,
        &base,
        Method::PUT,
        "/v1/brands/acme/connections/github",
        Some(json!({"secret": SECRET})),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let (status, audit) = get("/v1/audit?role=person-chat&brand=acme".into()).await;
    assert_eq!(status, 200, "{audit}");
    assert!(!audit.to_string().contains(SECRET));
    let write = tool(&audit, "mcp__github__github_create_branch");
    assert_eq!(write["gate"]["kind"], "asks_person");
    assert_eq!(write["credential"]["resolved"]["source"], "own");
    assert_eq!(
        route(write, "POST", "/repos/{owner}/{repo}/git/refs")["origin"],
        "https://api.github.com"
    );
    // The command line, on the same configuration and store, says the same.
    let cli = tokio::task::spawn_blocking({
        let config = s.config().to_string();
        move || {
            audit_json(
                &[
                    "--role",
                    "person-chat",
                    "--brand",
                    "acme",
                    "--config",
                    &config,
                ],
                &[
                    ("SCOUT_STORE_KEY", KEY_HEX),
                    ("GITHUB_ALLOW_WRITES", "true"),
                ],
            )
        }
    })
    .await
    .unwrap();
    assert_eq!(cli["tools"], audit["tools"]);
    assert_eq!(cli["other_tools"], audit["other_tools"]);
    assert_eq!(cli["assumes"], audit["assumes"]);

    // A specialist from a saved profile: its grant's reads only.
    let coder = profile_body(
        "coder",
        &["Read", "mcp__github__github_read_file"],
        json!({"connectors": ["github"]}),
    );
    let (status, body) = admin(
        &http,
        &base,
        Method::PUT,
        "/v1/brands/acme/profiles/coder",
        Some(coder.clone()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, specialist) =
        get("/v1/audit?role=specialist&brand=acme&profile=coder".into()).await;
    assert_eq!(status, 200, "{specialist}");
    assert_eq!(specialist["profile"], "coder");
    let github_tools: Vec<String> = names(&specialist)
        .into_iter()
        .filter(|n| n.starts_with("mcp__github__"))
        .collect();
    assert!(github_tools.contains(&"mcp__github__github_read_file".to_string()));
    assert!(
        specialist["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["effect"] == "read"),
        "{github_tools:?}"
    );

    // Dead authority: which sessions ended is known exactly here.
    let tool_name = "mcp__github__github_create_branch";
    let digest = args_digest(&json!({"branch": "y"}));
    let gone = store
        .request_approval("s-gone", tool_name, &digest)
        .await
        .unwrap();
    let (status, view) = admin(
        &http,
        &base,
        Method::POST,
        "/v1/sessions",
        Some(json!({"brand": "acme", "role": "person-chat"})),
    )
    .await;
    assert_eq!(status, 201, "{view}");
    let live = view["id"].as_str().unwrap().to_string();
    store
        .request_approval(&live, tool_name, &digest)
        .await
        .unwrap();
    // globex's grant has no credential behind it.
    save(store.as_ref(), "globex", &coder);
    let (status, audit) = get("/v1/audit?role=read-only&stale_days=7".into()).await;
    assert_eq!(status, 200, "{audit}");
    assert_eq!(audit["dead_authority"]["stale_days"], 7);
    let pending = findings(&audit, "pending_approval_of_ended_session");
    assert_eq!(
        pending.len(),
        1,
        "the live session's approval is not dead: {pending:?}"
    );
    assert_eq!(pending[0]["approval"], gone.0);
    assert_eq!(pending[0]["why"], "no live host serves it");
    let grants: Vec<(&str, &str)> = findings(&audit, "grant_without_credential")
        .iter()
        .map(|f| (f["brand"].as_str().unwrap(), f["profile"].as_str().unwrap()))
        .collect();
    assert_eq!(grants, [("globex", "coder")]);
    // Once the session ends, its approvals are revoked: still nothing pending of it.
    let (status, _) = admin(
        &http,
        &base,
        Method::DELETE,
        &format!("/v1/sessions/{live}"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (_, audit) = get("/v1/audit?role=read-only".into()).await;
    assert_eq!(
        findings(&audit, "pending_approval_of_ended_session").len(),
        1
    );

    // Refusals: the stable error shape, with what to give.
    for (query, status, code, says) in [
        ("", 400, "invalid_query", "give `role`"),
        ("?role=boss", 400, "invalid_query", "unknown role `boss`"),
        (
            "?role=specialist&profile=coder",
            400,
            "invalid_query",
            "give both",
        ),
        (
            "?role=person-chat&stale_days=0",
            400,
            "invalid_query",
            "from 1 to 3650",
        ),
        (
            "?role=person-chat&stale_days=soon",
            400,
            "invalid_query",
            "from 1 to 3650",
        ),
        (
            "?role=person-chat&colour=red",
            400,
            "invalid_query",
            "colour",
        ),
        (
            "?role=specialist&brand=acme&profile=nope",
            404,
            "not_found",
            "has no profile `nope`",
        ),
        (
            "?role=specialist&brand=acme",
            400,
            "bad_request",
            "give `profile`",
        ),
        (
            "?role=person-chat&brand=acme&profile=coder",
            400,
            "bad_request",
            "runs without a profile",
        ),
    ] {
        let (got, body) = get(format!("/v1/audit{query}")).await;
        assert_eq!(got, status, "{query}: {body}");
        assert_eq!(body["error"]["code"], code, "{query}: {body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(says),
            "{query}: {says:?} in {body}"
        );
    }
    let anonymous = http
        .get(format!("{base}/v1/audit?role=person-chat"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    // An OIDC viewer may read it; an approver may not.
    assert!(permit(ApiRole::Viewer, "GET", "/v1/audit").is_ok());
    assert!(permit(ApiRole::Admin, "GET", "/v1/audit").is_ok());
    assert!(permit(ApiRole::Approver, "GET", "/v1/audit").is_err());
    drop(listening);
}

/// The store's inventory, on both backends.
fn inventory_lists_what_the_store_holds(store: &dyn Store) {
    let key = key();
    scout_host::store::block(store.put_connection("acme", "github", "s1", &key)).unwrap();
    scout_host::store::block(store.put_connection("acme", "google", "s2", &key)).unwrap();
    scout_host::store::block(store.put_connection("beta", "github", "s3", &key)).unwrap();
    assert!(scout_host::store::block(store.disable_connection("beta", "github")).unwrap());
    scout_host::store::block(store.share_connection("acme", "github", "gamma")).unwrap();
    scout_host::store::block(store.share_connection("acme", "github", "delta")).unwrap();
    let rows: Vec<(String, String, bool, Vec<String>)> =
        scout_host::store::block(store.stored_connections())
            .unwrap()
            .into_iter()
            .map(|c| {
                assert!(c.updated_at_ms > 0);
                let mut shared = c.shared_with;
                shared.sort();
                (c.brand, c.connection, c.disabled, shared)
            })
            .collect();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        rows,
        [
            (
                "acme".into(),
                "github".into(),
                false,
                s(&["delta", "gamma"])
            ),
            ("acme".into(), "google".into(), false, vec![]),
            ("beta".into(), "github".into(), true, vec![]),
        ]
    );
    let body = |name: &str| profile_body(name, &["Read"], json!({}));
    save(store, "beta", &body("b1"));
    save(store, "acme", &body("a2"));
    save(store, "acme", &body("a1"));
    let profiles: Vec<(String, String)> = scout_host::store::block(store.all_profiles())
        .unwrap()
        .into_iter()
        .map(|(brand, p)| (brand, p.profile.name))
        .collect();
    assert_eq!(
        profiles,
        [
            ("acme".to_string(), "a1".to_string()),
            ("acme".into(), "a2".into()),
            ("beta".into(), "b1".into())
        ]
    );
    scout_host::store::block(store.approve_tool("zeta", "z_tool", "dz", None, None, "bob"))
        .unwrap();
    scout_host::store::block(store.approve_tool(
        "github",
        "github_read_file",
        "dg",
        None,
        None,
        "alice",
    ))
    .unwrap();
    let reviews: Vec<(String, String, String, String)> =
        scout_host::store::block(store.stored_reviews())
            .unwrap()
            .into_iter()
            .map(|r| (r.connector, r.tool, r.digest, r.approved_by))
            .collect();
    assert_eq!(
        reviews,
        [
            (
                "github".into(),
                "github_read_file".into(),
                "dg".into(),
                "alice".into()
            ),
            ("zeta".into(), "z_tool".into(), "dz".into(), "bob".into())
        ]
    );
    let digest = args_digest(&json!({}));
    let first = scout_host::store::block(store.request_approval("s1", "t", &digest)).unwrap();
    let second = scout_host::store::block(store.request_approval("s2", "t", &digest)).unwrap();
    let third = scout_host::store::block(store.request_approval("s3", "t", &digest)).unwrap();
    scout_host::store::block(store.decide(second, true, "alice")).unwrap();
    let pending: Vec<_> = scout_host::store::block(store.all_pending())
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(pending, [first, third]);
    for (brand, tool, state, at) in [
        ("acme", Some("t1"), TraceState::Executed, 5),
        ("acme", Some("t1"), TraceState::Executed, 9),
        ("acme", Some("t2"), TraceState::Executed, 7),
        ("acme", Some("t3"), TraceState::Requested, 200),
        ("acme", None, TraceState::Registered, 300),
        ("beta", Some("t1"), TraceState::Executed, 100),
    ] {
        scout_host::store::block(store.record(&event("s", brand, tool, state, at))).unwrap();
    }
    let last: Vec<(String, i64)> = scout_host::store::block(store.last_executed("acme"))
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(last, [("t1".to_string(), 9), ("t2".to_string(), 7)]);
    assert!(
        scout_host::store::block(store.last_executed("nobody"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_inventory_on_sqlite() {
    let db = TempDb::new("authority-inventory");
    inventory_lists_what_the_store_holds(&SqliteStore::open(db.path()).unwrap());
}

#[test]
fn the_inventory_on_postgres() {
    let Some(db) = scout_tests::pg::database_or_skip("authority_inventory") else {
        return;
    };
    inventory_lists_what_the_store_holds(&PgStore::connect(PgOptions::new(db.url())).unwrap());
}

/// The audit says which switch values it decided with. From the command
/// line they are this process's environment, which may not be what `serve`
/// started with: here the host runs with `GITHUB_ALLOW_WRITES=true`, so a
/// branch asks a person, while the auditor's environment has the default
/// (off). `--host URL` asks the running host, with its switches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_names_its_switches_and_audits_a_running_host_with_its_own() {
    use super::crash_safety::{ADMIN_TOKEN, GITHUB_TOKEN};
    let github = scout_tests::fake_github::FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        scout_tests::serve_config_for_github(&github.origin()),
    );
    let config_path = config.to_str().unwrap().to_string();
    // The running host, started with GITHUB_ALLOW_WRITES=true, makes the store.
    let serve = tokio::task::block_in_place(|| common::serve(&config).start());
    let local = tokio::task::block_in_place(|| {
        audit_json(
            &["--role", "person-chat", "--config", &config_path],
            &[("SCOUT_STORE_KEY", &"5c".repeat(32))],
        )
    });
    assert!(
        local["switches_from"]
            .as_str()
            .unwrap()
            .starts_with("this process's environment"),
        "{}",
        local["switches_from"]
    );
    let writes = local["switches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["var"] == "GITHUB_ALLOW_WRITES")
        .unwrap();
    assert_eq!(
        (writes["value"].as_str(), writes["set"].as_bool()),
        (Some("off"), Some(false))
    );
    let gate_of = |audit: &Value| -> Value {
        audit["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tool"] == "github_create_branch")
            .map(|t| t["gate"]["kind"].clone())
            .unwrap_or(Value::Null)
    };
    assert_ne!(gate_of(&local), json!("asks_person"), "off here: {local}");

    let ask = |args: Vec<String>, token: &'static str| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut all = vec!["--host", serve.base.as_str(), "--role", "person-chat"];
        all.extend(args);
        run(&all, &[("SCOUT_ADMIN_TOKEN", token)])
    };
    let (ok, stdout, stderr) =
        tokio::task::block_in_place(|| ask(vec!["--json".into()], ADMIN_TOKEN));
    assert!(ok, "{stderr}");
    let remote: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(remote["switches_from"], "the host's, read when it started");
    assert_eq!(gate_of(&remote), json!("asks_person"), "on there: {remote}");
    let (ok, text, stderr) = tokio::task::block_in_place(|| ask(Vec::new(), ADMIN_TOKEN));
    assert!(ok, "{stderr}");
    assert!(
        text.contains("switches: the host's, read when it started"),
        "{text}"
    );
    assert!(text.contains("GITHUB_ALLOW_WRITES"), "{text}");
    let (ok, _, stderr) =
        tokio::task::block_in_place(|| ask(Vec::new(), "not-the-admin-token-0123456789"));
    assert!(!ok);
    assert!(
        stderr.contains("the host refused the audit (401"),
        "{stderr}"
    );
    drop(serve);
}

/// A profile file that is not one is refused with the shape of one: a
/// specialist's profile, as the save rules accept it.
#[test]
fn a_wrong_profile_file_is_answered_with_what_one_looks_like() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("wrong.json");
    std::fs::write(&profile, r#"{"name": "seo"}"#).unwrap();
    let (ok, _, stderr) = run(
        &[
            "--role",
            "specialist",
            "--profile",
            profile.to_str().unwrap(),
            "--component",
            scout_tests::components::GITHUB,
        ],
        &[],
    );
    assert!(!ok);
    assert!(stderr.contains("is not a profile"), "{stderr}");
    assert!(
        stderr.contains(scout_host::authority::PROFILE_EXAMPLE),
        "the example profile is shown: {stderr}"
    );
}
