//! The seed's per-brand session limits (issue 56 item 7; seed 000: "Each
//! brand's inbound turns are rate-limited, and they count against the live
//! session cap"), through the real `serve` binary and its admin API:
//!
//! - A brand's cap on live sessions refuses the (N+1)th open with 429
//!   `brand_live_sessions` (every role counted, inbound ones too; another
//!   brand is not affected), and admits one again once a session ends.
//! - A brand's rate of inbound-email sessions refuses the open beyond the
//!   rate with 429 `brand_inbound_rate` and a `Retry-After` up to an hour,
//!   even once those sessions ended; a person's session still opens.
//! - Each refusal opens nothing, is traced (`session_refused`, naming the
//!   rule) and counted (`scout_sessions_refused_total{rule}`).
//! - On SQLite, a restart frees the live cap (the sessions died with the
//!   process) and keeps the inbound hour.
//! - A cap of 0 stops `serve` at start, naming the setting.
//! - Two hosts on one PostgreSQL database, sessions opened on both at once:
//!   exactly the cap and exactly the rate are admitted; a session ended on
//!   one host frees its place for an open on the other.
//! - Every policy example of `docs/operating.md` validates against the
//!   schema generated from the real connectors (`scout-host policy check`).

use super::crash_safety::{ADMIN_TOKEN, Admin};
use crate::common;
use reqwest::Method;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use scout_host::store::{TraceEvent, TraceState};
use scout_tests::ServeProcess;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A host configuration serving AgentMail (never called here), with the
/// deployment's defaults `top` and per-brand `[brands.*]` tables.
fn config(dir: &Path, name: &str, store: &str, top: &str, brands: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "listen = \"127.0.0.1:0\"\nrequire_review = false\n{top}\n\n{store}\n\n\
             [connectors.agentmail]\ncomponent = {:?}\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n\n{brands}\n",
            common::component(scout_tests::components::AGENTMAIL),
        ),
    )
    .unwrap();
    path
}

/// `serve` with the inbound email route on.
fn serve(config: &Path, env: &[(&str, String)]) -> ServeProcess {
    common::serve(config)
        .env(
            "AGENTMAIL_WEBHOOK_URL_SECRET",
            "hook-secret-for-brand-limits",
        )
        .envs(env)
        .start()
}

fn admin(host: &ServeProcess) -> Admin {
    Admin {
        http: common::client(),
        base: host.base.clone(),
    }
}

/// What opening a session answered: status, `Retry-After`, body.
struct Opened {
    status: u16,
    retry_after: Option<u64>,
    body: Value,
}

impl Opened {
    fn id(&self) -> &str {
        assert_eq!(self.status, 201, "opened: {}", self.body);
        self.body["id"].as_str().unwrap()
    }

    fn refused_by(&self, rule: &str) {
        assert_eq!(self.status, 429, "refused: {}", self.body);
        assert_eq!(self.body["error"]["code"], rule, "{}", self.body);
        assert!(
            self.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("nothing was opened"),
            "{}",
            self.body
        );
    }
}

async fn open(admin: &Admin, brand: &str, role: &str) -> Opened {
    let response = admin
        .http
        .post(format!("{}/v1/sessions", admin.base))
        .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"))
        .header(CONTENT_TYPE, "application/json")
        .body(json!({"brand": brand, "role": role}).to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .map(|v| v.to_str().unwrap().parse().unwrap());
    let body = response.json().await.unwrap_or(Value::Null);
    Opened {
        status,
        retry_after,
        body,
    }
}

async fn end(admin: &Admin, id: &str) {
    let (status, body) = admin
        .request(Method::DELETE, &format!("/v1/sessions/{id}"), None)
        .await;
    assert!(
        status == 200 || status == 204,
        "ended {id}: {status} {body}"
    );
}

/// Every session the admin API lists for `brand`, on every host.
async fn listed(admin: &Admin, brand: &str) -> usize {
    let (status, body) = admin.request(Method::GET, "/v1/sessions", None).await;
    assert_eq!(status, 200, "{body}");
    body["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["brand"] == brand)
        .count()
}

/// The value of `scout_sessions_refused_total{rule="RULE"}`, 0 if absent.
async fn refused_metric(admin: &Admin, rule: &str) -> f64 {
    let text = admin
        .http
        .get(format!("{}/metrics", admin.base))
        .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = format!("scout_sessions_refused_total{{rule=\"{rule}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&line))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0.0)
}

/// The `session_refused` rows of `brand`'s trace.
async fn refusals(admin: &Admin, brand: &str) -> Vec<TraceEvent> {
    admin
        .trace(brand)
        .await
        .into_iter()
        .filter(|e| e.state == TraceState::Changed && e.rule.as_deref() == Some("session_refused"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brands_live_sessions_and_inbound_rate_are_held_to_their_limits() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(
        dir.path(),
        "host",
        "",
        "max_live_sessions_per_brand = 2\ninbound_sessions_per_hour_per_brand = 2",
        "[brands.beta]\nmax_live_sessions = 3\n\n[brands.mail]\nmax_live_sessions = 10\n",
    );
    let host = serve(&path, &[]);
    let admin = admin(&host);
    for brand in ["acme", "beta", "mail"] {
        let (status, body) = admin
            .request(
                Method::PUT,
                &format!("/v1/brands/{brand}/connections/agentmail"),
                Some(json!({"secret": "agentmail-secret-0123456789"})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }

    // The live cap: an inbound session counts against it like any other.
    let first = open(&admin, "acme", "inbound-email").await;
    let second = open(&admin, "acme", "person-chat").await;
    let (first, second) = (first.id().to_string(), second.id().to_string());
    let third = open(&admin, "acme", "person-chat").await;
    third.refused_by("brand_live_sessions");
    assert_eq!(
        third.retry_after, None,
        "a live session ends when its orchestrator ends it"
    );
    assert!(
        third.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already has 2 live sessions"),
        "{}",
        third.body
    );
    assert_eq!(
        listed(&admin, "acme").await,
        2,
        "the refused open opened nothing"
    );
    // Another brand's cap is its own: beta's table raises it to three.
    for _ in 0..3 {
        open(&admin, "beta", "person-chat").await.id();
    }
    open(&admin, "beta", "person-chat")
        .await
        .refused_by("brand_live_sessions");
    // A session ends: one more opens, and the one after is refused again.
    end(&admin, &first).await;
    let again = open(&admin, "acme", "person-chat").await;
    again.id();
    open(&admin, "acme", "person-chat")
        .await
        .refused_by("brand_live_sessions");
    end(&admin, &second).await;

    // The inbound rate: two an hour, counted whether they ended or not.
    for _ in 0..2 {
        let opened = open(&admin, "mail", "inbound-email").await;
        let id = opened.id().to_string();
        end(&admin, &id).await;
    }
    let over = open(&admin, "mail", "inbound-email").await;
    over.refused_by("brand_inbound_rate");
    let retry = over.retry_after.expect("Retry-After on the inbound rate");
    assert!(
        (3500..=3600).contains(&retry),
        "an hour after the first: {retry}"
    );
    open(&admin, "mail", "person-chat").await.id();

    // Traced and counted, each under its rule.
    assert_eq!(refused_metric(&admin, "brand_live_sessions").await, 3.0);
    assert_eq!(refused_metric(&admin, "brand_inbound_rate").await, 1.0);
    let acme = refusals(&admin, "acme").await;
    assert_eq!(acme.len(), 2, "{acme:?}");
    let detail: Value = acme[0].detail.clone();
    assert_eq!(detail["rule"], "brand_live_sessions", "{detail}");
    assert_eq!(detail["role"], "person-chat", "{detail}");
    assert_eq!(
        (detail["counted"].as_u64(), detail["allowed"].as_u64()),
        (Some(2), Some(2))
    );
    assert!(
        acme.iter().all(|e| e.session.is_empty()),
        "under the brand, no session"
    );
    let mail = refusals(&admin, "mail").await;
    assert_eq!(mail.len(), 1, "{mail:?}");
    assert_eq!(mail[0].detail["rule"], "brand_inbound_rate");
    assert_eq!(mail[0].detail["role"], "inbound-email");
    assert!(mail[0].detail["retry_after_secs"].as_u64().is_some());
}

#[test]
fn a_cap_of_no_session_stops_serve_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(
        dir.path(),
        "zero",
        "",
        "",
        "[brands.acme]\nmax_live_sessions = 0\n",
    );
    let said = common::serve(&path).refused();
    assert!(
        said.contains("brands.\"acme\".max_live_sessions must be at least 1"),
        "{said}"
    );
}

/// Ten opens at once, five on each host, against a cap of three; eight
/// inbound opens at once against a rate of two: exactly three and two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_on_one_database_admit_exactly_the_limits() {
    let Some(db) = scout_tests::pg::database_or_skip("brand_limits") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = "[store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"";
    let brands =
        "[brands.acme]\nmax_live_sessions = 3\n\n[brands.mail]\ninbound_sessions_per_hour = 2\n";
    let env = [("SCOUT_PG_URL", db.url())];
    let a = serve(&config(dir.path(), "a", store, "", brands), &env);
    let b = serve(&config(dir.path(), "b", store, "", brands), &env);
    let (admin_a, admin_b) = (admin(&a), admin(&b));
    for brand in ["acme", "mail"] {
        let (status, body) = admin_a
            .request(
                Method::PUT,
                &format!("/v1/brands/{brand}/connections/agentmail"),
                Some(json!({"secret": "agentmail-secret-0123456789"})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let opens = (0..10).map(|i| {
        (
            if i % 2 == 0 { &admin_a } else { &admin_b },
            "acme",
            "person-chat",
        )
    });
    let inbound = (0..8).map(|i| {
        (
            if i % 2 == 0 { &admin_a } else { &admin_b },
            "mail",
            "inbound-email",
        )
    });
    let answers = futures_util::future::join_all(
        opens
            .chain(inbound)
            .map(|(admin, brand, role)| async move { (brand, open(admin, brand, role).await) }),
    )
    .await;
    let count = |brand: &str, status: u16| {
        answers
            .iter()
            .filter(|(b, o)| *b == brand && o.status == status)
            .count()
    };
    for (brand, opened) in &answers {
        match opened.status {
            201 => {}
            _ if *brand == "acme" => opened.refused_by("brand_live_sessions"),
            _ => opened.refused_by("brand_inbound_rate"),
        }
    }
    assert_eq!(
        (count("acme", 201), count("acme", 429)),
        (3, 7),
        "exactly the cap"
    );
    assert_eq!(
        (count("mail", 201), count("mail", 429)),
        (2, 6),
        "exactly the rate"
    );
    assert_eq!(
        db.psql("SELECT count(*) FROM brand_session_slots WHERE brand = 'acme'"),
        "3"
    );
    assert_eq!(
        db.psql("SELECT count(*) FROM sessions WHERE brand = 'acme'"),
        "3",
        "a refused open recorded no session"
    );
    // One ended through B (whichever host serves it) frees a place on A.
    let acme: Vec<&str> = answers
        .iter()
        .filter(|(b, o)| *b == "acme" && o.status == 201)
        .map(|(_, o)| o.id())
        .collect();
    end(&admin_b, acme[0]).await;
    open(&admin_a, "acme", "person-chat").await.id();
    open(&admin_b, "acme", "person-chat")
        .await
        .refused_by("brand_live_sessions");
    // Both hosts traced their own refusals.
    let traced = refusals(&admin_a, "acme").await.len() + refusals(&admin_a, "mail").await.len();
    assert_eq!(
        traced,
        7 + 6 + 1,
        "every refusal traced, on the fleet's trace"
    );
}

/// The fenced blocks of `lang` in the "Operator policies" section of
/// `docs/operating.md`.
fn operating_guide_blocks(lang: &str) -> Vec<String> {
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/operating.md"))
            .unwrap();
    let start = guide
        .find("\n## Operator policies\n")
        .expect("docs/operating.md has its Operator policies section");
    let section = &guide[start + 1..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let fence = format!("```{lang}\n");
    section
        .split(&fence)
        .skip(1)
        .map(|block| block.split("```").next().unwrap().to_string())
        .collect()
}

/// Every Cedar example of the operating guide's policy section validates
/// against the schema generated from the connectors it names (through
/// `scout-host policy check`, as an operator would), and every TOML
/// example is a configuration `serve` reads: the guide cannot rot.
#[test]
fn the_operating_guides_policy_examples_validate_against_the_real_schema() {
    let blocks = operating_guide_blocks("cedar");
    assert!(blocks.len() >= 4, "the guide's Cedar examples: {blocks:?}");
    let dir = tempfile::tempdir().unwrap();
    for (i, block) in blocks.iter().enumerate() {
        std::fs::write(dir.path().join(format!("example-{i:02}.cedar")), block).unwrap();
    }
    let ids = blocks
        .iter()
        .map(|b| b.matches("@id(").count())
        .sum::<usize>();
    let mut check = std::process::Command::new(common::SCOUT_HOST);
    check.args(["policy", "check"]).arg(dir.path());
    for component in [
        scout_tests::components::GITHUB,
        scout_tests::components::AGENTMAIL,
        scout_tests::components::FIRECRAWL,
    ] {
        check.arg("--component").arg(common::component(component));
    }
    let out = check.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "policy check:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("valid: {ids} policies")),
        "every example policy counted:\n{stdout}"
    );
    // And a policy naming an argument the tool does not have is refused,
    // so the check above is not vacuous.
    std::fs::write(
        dir.path().join("wrong.cedar"),
        "forbid (principal, action == Scout::Action::\"mcp__github__github_create_branch\", resource)\nunless { context.args.brnch like \"scout/*\" };\n",
    )
    .unwrap();
    let wrong = check.output().unwrap();
    assert!(!wrong.status.success(), "an unknown argument is refused");
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("wrong.cedar:"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
    let configs = operating_guide_blocks("toml");
    assert!(configs.len() >= 3, "the guide's TOML examples: {configs:?}");
    for config in configs {
        if let Err(e) = scout_host::serve::ServeConfig::parse(&config) {
            panic!("a configuration `serve` reads: {e}\n{config}");
        }
    }
}

/// On SQLite a session lives only in the process that opened it: after a
/// restart the brand's live sessions start from none, while its inbound
/// opens of the last hour still count against the rate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_frees_the_live_cap_and_keeps_the_inbound_hour() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(
        dir.path(),
        "restart",
        "",
        "",
        "[brands.acme]\nmax_live_sessions = 2\ninbound_sessions_per_hour = 1\n",
    );
    let host = serve(&path, &[]);
    let before = admin(&host);
    let (status, body) = before
        .request(
            Method::PUT,
            "/v1/brands/acme/connections/agentmail",
            Some(json!({"secret": "agentmail-secret-0123456789"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    open(&before, "acme", "inbound-email").await.id();
    open(&before, "acme", "person-chat").await.id();
    open(&before, "acme", "person-chat")
        .await
        .refused_by("brand_live_sessions");
    drop(host);

    let host = serve(&path, &[]);
    let after = admin(&host);
    open(&after, "acme", "person-chat").await.id();
    let inbound = open(&after, "acme", "inbound-email").await;
    inbound.refused_by("brand_inbound_rate");
    assert!(inbound.retry_after.is_some_and(|s| s <= 3600));
}
