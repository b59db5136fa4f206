//! Every connector of seed 000's catalogue, built from source, loaded by the
//! real `scout-host serve` at once, and each role's surface listed over MCP
//! with the official Python client (`tests/mcp_client/catalogue.py`).
//!
//! The oracle is seed 000's own tables, written out below by hand: person
//! chat's "Connector tools", the inbound email turn's list, "The read
//! table" for a specialist and the goal agent, and the roles that get no
//! connector at all. It is deliberately not computed from the host's
//! `Catalog`, which is what is under test.
//!
//! Also proved here, over MCP against a loopback fake of Shopify's Admin
//! GraphQL endpoint: a query through `shopify_admin_graphql` runs without
//! asking anyone; a mutation asks a person and runs once approved; with
//! SHOPIFY_ALLOW_WRITES off a mutation is refused with nothing sent while a
//! query still runs; and Figma and Microsoft Ads are absent when the
//! deployment does not offer them.

use crate::common;
use axum::Router;
use axum::extract::State;
use scout_tests::catalogue::{self, Connector};
use scout_tests::{ServeProcess, python};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ADMIN_TOKEN: &str = "catalogue-admin-token-0123456789";
const BRAND: &str = "acme";

/// Seed 000, "Person chat", "Connector tools": every tool, read and write,
/// with every operator switch on and approvals on.
const PERSON_CHAT: &[(&str, &[&str])] = &[
    (
        "shopify",
        &[
            "shopify_shop_info",
            "shopify_search_products",
            "shopify_recent_orders",
            "shopify_admin_graphql",
        ],
    ),
    (
        "dataforseo",
        &[
            "dataforseo_account",
            "dataforseo_keyword_ideas",
            "dataforseo_search_volume",
            "dataforseo_keyword_overview",
            "dataforseo_ranked_keywords",
            "dataforseo_serp_organic",
            "dataforseo_competitors",
            "dataforseo_page_audit",
            "dataforseo_keyword_difficulty",
            "dataforseo_search_intent",
            "dataforseo_rank_history",
            "dataforseo_trends",
            "seo_page_opportunities",
        ],
    ),
    (
        "firecrawl",
        &[
            "firecrawl_account",
            "firecrawl_scrape",
            "firecrawl_search",
            "firecrawl_map",
            "firecrawl_crawl",
        ],
    ),
    (
        "googleads",
        &[
            "googleads_accounts",
            "googleads_report",
            "googleads_campaigns",
            "googleads_search_terms",
            "googleads_account_hierarchy",
            "googleads_compare_periods",
            "googleads_summarize",
            "googleads_search_term_audit",
        ],
    ),
    (
        "searchconsole",
        &[
            "searchconsole_properties",
            "searchconsole_totals",
            "searchconsole_queries",
            "searchconsole_pages",
            "searchconsole_breakdown",
            "searchconsole_inspect_url",
        ],
    ),
    (
        "analytics",
        &[
            "analytics_properties",
            "analytics_use_property",
            "analytics_overview",
            "analytics_trend",
            "analytics_traffic_sources",
            "analytics_landing_pages",
            "analytics_report",
        ],
    ),
    ("sheets", &["sheets_list", "sheets_export", "sheets_append"]),
    (
        "microsoftads",
        &[
            "microsoftads_accounts",
            "microsoftads_campaigns",
            "microsoftads_performance_report",
            "microsoftads_report_fetch",
        ],
    ),
    (
        "figma",
        &[
            "figma_whoami",
            "figma_file_outline",
            "figma_read_nodes",
            "figma_export_images",
            "figma_comments",
            "figma_components_styles",
            "figma_team_projects",
            "figma_project_files",
        ],
    ),
    (
        "github",
        &[
            "github_read_file",
            "github_list_path",
            "github_list_branches",
            "github_list_issues",
            "github_read_issue",
            "github_list_pull_requests",
            "github_read_pull_request",
            "github_create_branch",
            "github_commit_files",
            "github_open_pull_request",
            "github_comment",
        ],
    ),
    (
        "agentmail",
        &[
            "agentmail_list_threads",
            "agentmail_search_threads",
            "agentmail_get_thread",
            "agentmail_list_messages",
            "agentmail_search_messages",
            "agentmail_get_message",
            "agentmail_get_attachment",
            "agentmail_whoami",
            "agentmail_list_drafts",
            "agentmail_get_draft",
            "agentmail_create_draft",
            "agentmail_send_message",
            "agentmail_reply_to_message",
            "agentmail_forward_message",
            "agentmail_send_draft",
        ],
    ),
    ("cloudflare", &["docs", "search", "execute"]),
    (
        "railway",
        &[
            "railway_workspaces",
            "railway_project",
            "railway_deployments",
            "railway_variable_names",
            "railway_logs",
            "railway_reveal_variables",
            "railway_redeploy",
        ],
    ),
    (
        "tailscale",
        &[
            "tailscale_devices",
            "tailscale_device",
            "tailscale_users",
            "tailscale_policy",
            "tailscale_dns",
        ],
    ),
];

/// Seed 000, "Inbound email turn": exactly these.
const INBOUND: &[&str] = &[
    "agentmail_list_threads",
    "agentmail_search_threads",
    "agentmail_get_thread",
    "agentmail_list_messages",
    "agentmail_search_messages",
    "agentmail_get_message",
    "agentmail_get_attachment",
    "agentmail_whoami",
    "agentmail_create_draft",
    "agentmail_list_drafts",
    "agentmail_get_draft",
];

/// Seed 000, "The read table", "Never grantable": what no grant gives.
const NEVER_GRANTABLE: &[(&str, &[&str])] = &[
    ("shopify", &["shopify_admin_graphql"]),
    ("analytics", &["analytics_use_property"]),
    ("sheets", &["sheets_export", "sheets_append"]),
    (
        "github",
        &[
            "github_create_branch",
            "github_commit_files",
            "github_open_pull_request",
            "github_comment",
        ],
    ),
    (
        "agentmail",
        &[
            "agentmail_create_draft",
            "agentmail_send_message",
            "agentmail_reply_to_message",
            "agentmail_forward_message",
            "agentmail_send_draft",
        ],
    ),
    ("railway", &["railway_reveal_variables", "railway_redeploy"]),
];

/// Seed 000's content writer tools (opt-in beside Shopify) and SEO brief tools.
const WRITER: &[&str] = &[
    "writer_read_voice_guide",
    "writer_save_voice_guide",
    "writer_page_content",
    "writer_read_brief",
    "writer_save_draft",
];
const SEO: &[&str] = &["seo_save_brief", "seo_hand_off_brief"];

const GRANTABLE_CONNECTORS: &[&str] = &[
    "shopify",
    "dataforseo",
    "firecrawl",
    "googleads",
    "searchconsole",
    "analytics",
    "sheets",
    "microsoftads",
    "figma",
    "github",
    "agentmail",
    "railway",
    "tailscale",
];

fn person_chat(name: &str) -> BTreeSet<String> {
    PERSON_CHAT
        .iter()
        .find(|(c, _)| *c == name)
        .map(|(_, t)| t.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default()
}

/// The read table's grantable tools of `name`: its person-chat tools but the never-grantable.
fn grantable(name: &str) -> BTreeSet<String> {
    let never: BTreeSet<&str> = NEVER_GRANTABLE
        .iter()
        .filter(|(c, _)| *c == name)
        .flat_map(|(_, t)| t.iter().copied())
        .collect();
    if matches!(name, "cloudflare" | "contentsquare") {
        return BTreeSet::new();
    }
    person_chat(name)
        .into_iter()
        .filter(|t| !never.contains(t.as_str()))
        .collect()
}

fn set(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Every request the fake upstream received: method, path, body, and its
/// `authorization`, `developer-token` and `x-shopify-access-token` headers.
type Seen = Arc<
    Mutex<
        Vec<(
            String,
            String,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
        )>,
    >,
>;

/// One loopback upstream for every connector's origin. It answers Shopify's
/// Admin GraphQL endpoint in its documented shape and anything else with an
/// empty JSON object; the surface test makes no other call.
async fn fake_upstream() -> (String, Seen) {
    let seen: Seen = Arc::default();
    async fn answer(
        State(seen): State<Seen>,
        req: axum::extract::Request,
    ) -> axum::response::Response {
        let (method, path) = (req.method().to_string(), req.uri().path().to_string());
        let headers = req.headers().clone();
        let header = move |n: &str| {
            headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let (auth, developer, shopify) = (
            header("authorization"),
            header("developer-token"),
            header("x-shopify-access-token"),
        );
        drop(header);
        let body = axum::body::to_bytes(req.into_body(), 1 << 20)
            .await
            .unwrap_or_default();
        seen.lock().unwrap().push((
            method,
            path.clone(),
            String::from_utf8_lossy(&body).into_owned(),
            auth,
            developer,
            shopify,
        ));
        let reply = if path.ends_with("/graphql.json") {
            json!({"data": {"shop": {"name": "Acme"}}, "extensions": {"cost": {"requestedQueryCost": 1, "actualQueryCost": 1,
                "throttleStatus": {"maximumAvailable": 2000.0, "currentlyAvailable": 1999.0, "restoreRate": 100.0}}}})
        } else {
            json!({})
        };
        axum::Json(reply).into_response()
    }
    use axum::response::IntoResponse;
    let app = Router::new().fallback(answer).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (origin, seen)
}

/// Each built connector component, described from the manifest the host
/// reads out of it.
fn components() -> Vec<Connector> {
    catalogue::connectors(|bytes| {
        scout_host::runtime::read_manifest(bytes)
            .expect("a connector component carries its manifest")
            .to_json()
    })
}

fn start(dir: &Path, config: &Path, env: &[(&str, &str)]) -> ServeProcess {
    common::serve_as(config, ADMIN_TOKEN, "4e")
        .env("SCOUT_CACHE_DIR", dir.join("cache"))
        .env("APPROVAL_TIMEOUT_MS", "20000")
        .current_dir(dir)
        .envs(env)
        .start()
}

fn run_plan(serve: &ServeProcess, dir: &Path, plan: &Value) -> Value {
    let plan_path = dir.join(format!("plan-{}.json", plan["name"].as_str().unwrap()));
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/catalogue.py");
    let output = Command::new(python())
        .arg(&script)
        .args([
            "--base",
            &serve.base,
            "--admin-token",
            ADMIN_TOKEN,
            "--plan",
        ])
        .arg(&plan_path)
        .output()
        .expect("run catalogue.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "catalogue.py failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("a JSON summary")
}

/// What a session listed: endpoint -> tool names.
/// The connector tools `session` listed, by server. The host's own
/// `scout` server is checked apart.
fn listed(summary: &Value, session: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut listed: BTreeMap<String, BTreeSet<String>> =
        serde_json::from_value(summary["sessions"][session].clone()).unwrap();
    listed.remove("scout");
    listed
}

/// The host's own tools `session` listed.
fn host_listed(summary: &Value, session: &str) -> BTreeSet<String> {
    serde_json::from_value(summary["sessions"][session]["scout"].clone()).unwrap_or_default()
}

const LIMITS: &str =
    r#"{"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 1}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_seed_connector_is_served_and_every_role_gets_the_seed_surface() {
    let probe = Command::new(python())
        .args(["-c", "import mcp, httpx2"])
        .output()
        .expect("python3 runs");
    assert!(
        probe.status.success(),
        "the official MCP client does not import in the interpreter scout_tests::python provisioned"
    );
    let dir = scout_tests::serve::fresh_dir("catalogue");
    let all = components();
    let names: BTreeSet<String> = all.iter().map(|c| c.name.clone()).collect();
    let mut seed_names: BTreeSet<String> = PERSON_CHAT.iter().map(|(c, _)| c.to_string()).collect();
    seed_names.extend(["contentsquare", "writer", "seo"].map(String::from));
    assert_eq!(
        names, seed_names,
        "a component for every connector of seed 000, and nothing else"
    );
    let contentsquare: BTreeSet<String> = {
        let c = all.iter().find(|c| c.name == "contentsquare").unwrap();
        let bytes = std::fs::read(&c.path).expect("the Contentsquare component");
        let m = scout_host::runtime::read_manifest(&bytes).expect("its manifest");
        m.tools.iter().map(|t| m.wire_name(&t.function)).collect()
    };
    assert!(!contentsquare.is_empty());

    let (origin, seen) = fake_upstream().await;
    let config = catalogue::serve_config(&dir, &origin, &all, "");
    let switches_on = [
        ("SHOPIFY_ALLOW_WRITES", "true"),
        ("GITHUB_ALLOW_WRITES", "true"),
        ("AGENTMAIL_ALLOW_SENDS", "true"),
        ("RAILWAY_ALLOW_VARIABLE_VALUES", "true"),
        ("RAILWAY_ALLOW_REDEPLOY", "true"),
        ("AGENTMAIL_WEBHOOK_URL_SECRET", "hook-secret"),
        ("NANGO_SECRET_KEY", "nango-secret"),
        ("MICROSOFT_ADS_DEVELOPER_TOKEN", "msads-developer-token"),
        ("GOOGLE_ADS_DEVELOPER_TOKEN", "gads-developer-token"),
    ];
    let serve = start(&dir, &config, &switches_on);

    let limits: Value = serde_json::from_str(LIMITS).unwrap();
    let mut specialist_tools = vec!["Read".to_string()];
    specialist_tools.extend(WRITER.iter().map(|t| format!("mcp__writer__{t}")));
    specialist_tools.extend(SEO.iter().map(|t| format!("mcp__seo__{t}")));
    let allowances = json!({"firecrawl": {"perRunCredits": 25, "perDayCredits": 100}, "dataforseo": {"perRunUsd": 1.0, "perDayUsd": 3.0}});
    let goal_tools = [
        "Read",
        "Glob",
        "Grep",
        "WebSearch",
        "WebFetch",
        "mcp__project__project_list",
        "mcp__project__project_read",
        "mcp__project__project_write",
    ];
    let plan = json!({
        "name": "all",
        "brand": BRAND,
        "connections": catalogue::connections(&all),
        "profiles": [
            {"kind": "coworker", "profile": {"name": "plain", "tools": ["Read", "mcp__project__project_read"], "limits": limits}},
            {"kind": "coworker", "profile": {"name": "everything", "tools": specialist_tools,
                "grant": {"connectors": GRANTABLE_CONNECTORS, "allowances": allowances, "skills": ["seo-method"]}, "limits": limits}},
            {"kind": "coworker", "profile": {"name": "analytics-only", "tools": ["Read"],
                "grant": {"connectors": ["analytics", "dataforseo", "shopify"], "allowances": {"dataforseo": allowances["dataforseo"]}},
                "limits": limits}},
            {"kind": "goal_agent", "profile": {"name": "goal-agent", "tools": goal_tools,
                "grant": {"connectors": ["tailscale", "firecrawl"], "allowances": {"firecrawl": allowances["firecrawl"]}},
                "limits": {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 0, "maxAttempts": 2}}},
        ],
        "sessions": [
            {"label": "person", "role": "person-chat"},
            {"label": "inbound", "role": "inbound-email"},
            {"label": "coworker", "role": "coworker", "profile": "plain"},
            {"label": "specialist", "role": "specialist", "profile": "everything"},
            {"label": "narrow", "role": "specialist", "profile": "analytics-only"},
            {"label": "goal", "role": "goal-agent", "profile": "goal-agent"},
            {"label": "reviewer", "role": "goal-reviewer"},
            {"label": "read-only", "role": "read-only"},
        ],
        "calls": [
            {"label": "query", "session": "person", "connector": "shopify", "tool": "shopify_admin_graphql",
             "arguments": {"query": "# mutation { productDelete }\nquery { mutation: shop { name } }"}},
            {"label": "mutation", "session": "person", "connector": "shopify", "tool": "shopify_admin_graphql", "approve": true,
             "arguments": {"query": "mutation { tagsAdd(id: \"gid://shopify/Product/1\", tags: [\"sale\"]) { userErrors { message } } }"}},
            {"label": "specialist-graphql", "session": "specialist", "connector": "shopify", "tool": "shopify_admin_graphql",
             "arguments": {"query": "{ shop { name } }"}},
            {"label": "googleads-accounts", "session": "person", "connector": "googleads", "tool": "googleads_accounts", "arguments": {}},
            {"label": "writer-page", "session": "specialist", "connector": "writer", "tool": "writer_page_content",
             "arguments": {"handle": "red-shoes"}},
        ],
    });
    let summary = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || run_plan(&serve, &dir, &plan)
    })
    .await
    .unwrap();

    // Person chat: every connector the brand connected, every tool of the
    // seed's table (switches on, approvals on); Contentsquare's every tool;
    // never the writer's or the SEO brief tools.
    let person = listed(&summary, "person");
    let mut want: BTreeMap<String, BTreeSet<String>> = PERSON_CHAT
        .iter()
        .map(|(c, _)| (c.to_string(), person_chat(c)))
        .collect();
    want.insert("contentsquare".into(), contentsquare.clone());
    assert_eq!(
        person, want,
        "person chat's surface is seed 000's Connector tools table"
    );

    // An inbound email turn: AgentMail's read and draft tools, and nothing else.
    assert_eq!(
        listed(&summary, "inbound"),
        BTreeMap::from([("agentmail".to_string(), set(INBOUND))])
    );

    // A plain coworker, the goal reviewer and a read-only route: no connector at all.
    for label in ["coworker", "reviewer", "read-only"] {
        assert_eq!(
            listed(&summary, label),
            BTreeMap::new(),
            "{label} holds no connector tool"
        );
    }

    // A specialist granted every grantable connector: the read table, the
    // joint tool (its three connectors granted and live), the writer's
    // opt-in tools it asked for, and the SEO brief tools on seo-method at
    // depth 1. Nothing never-grantable; no Cloudflare, no Contentsquare.
    let mut want: BTreeMap<String, BTreeSet<String>> = GRANTABLE_CONNECTORS
        .iter()
        .map(|c| (c.to_string(), grantable(c)))
        .collect();
    want.insert("writer".into(), set(WRITER));
    want.insert("seo".into(), set(SEO));
    assert_eq!(
        listed(&summary, "specialist"),
        want,
        "a specialist's surface is seed 000's read table"
    );

    // Granted Analytics but not Search Console, Ads or Sheets, though the
    // brand's Google connection holds every scope: the Google credential is
    // narrowed to the granted product. The joint tool needs Search Console.
    let narrow = listed(&summary, "narrow");
    let mut dataforseo = grantable("dataforseo");
    dataforseo.remove("seo_page_opportunities");
    assert_eq!(
        narrow,
        BTreeMap::from([
            ("analytics".to_string(), grantable("analytics")),
            ("dataforseo".to_string(), dataforseo),
            ("shopify".to_string(), grantable("shopify")),
        ]),
        "Google narrowing and the joint tool's three connectors"
    );
    assert!(
        !narrow["analytics"].contains("analytics_use_property"),
        "use_property is never grantable"
    );

    // The host's own tools: the budget where a grant holds an allowance,
    // the capability request where a person or run owner can answer.
    for label in ["specialist", "narrow", "goal"] {
        assert_eq!(
            host_listed(&summary, label),
            set(&["scout_budget", "scout_request_capability"]),
            "{label}"
        );
    }
    for label in ["coworker", "read-only"] {
        assert_eq!(
            host_listed(&summary, label),
            set(&["scout_request_capability"]),
            "{label}"
        );
    }
    for label in ["reviewer", "inbound"] {
        assert!(
            host_listed(&summary, label).is_empty(),
            "{label}: no one to ask"
        );
    }

    // The goal agent: the read table's tools of its granted connectors only.
    assert_eq!(
        listed(&summary, "goal"),
        BTreeMap::from([
            ("firecrawl".to_string(), grantable("firecrawl")),
            ("tailscale".to_string(), grantable("tailscale"))
        ])
    );

    // Shopify Admin GraphQL, told apart by parsing: the query (whose comment
    // and alias say "mutation") ran without asking; the mutation asked a
    // person and ran once approved; the specialist cannot call it at all.
    let calls = &summary["calls"];
    assert_eq!(calls["query"]["asked"], false, "{calls}");
    assert_eq!(calls["query"]["error"], false, "{calls}");
    assert_eq!(calls["mutation"]["asked"], true, "{calls}");
    assert_eq!(calls["mutation"]["error"], false, "{calls}");
    assert_eq!(calls["specialist-graphql"]["error"], true, "{calls}");
    let graphql: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, p, b, ..)| p.ends_with("/graphql.json") && !b.contains("red-shoes"))
        .map(|(_, _, b, ..)| b.clone())
        .collect();
    assert_eq!(
        graphql.len(),
        2,
        "exactly the query and the approved mutation reached Shopify: {graphql:?}"
    );
    assert!(
        graphql[0].contains("mutation: shop") && graphql[1].contains("tagsAdd"),
        "{graphql:?}"
    );

    // Google Ads' developer token is the deployment's secret, injected by
    // the host with the brand's Google token; the guest never held either.
    let ads: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, p, ..)| p.contains("listAccessibleCustomers"))
        .cloned()
        .collect();
    assert_eq!(ads.len(), 1, "{ads:?}");
    assert_eq!(ads[0].3.as_deref(), Some("Bearer tok-google"));
    assert_eq!(ads[0].4.as_deref(), Some("gads-developer-token"));
    assert!(
        !calls["googleads-accounts"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("gads-developer-token")
    );

    // The writer has no origin of its own: `writer_page_content` reads
    // Shopify as a peer (`Reads-from: shopify`), with Shopify's origin and
    // Shopify's credential, the brand's, injected by the host.
    let writer: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, _, b, ..)| b.contains("red-shoes"))
        .cloned()
        .collect();
    assert_eq!(writer.len(), 1, "{writer:?} {}", calls["writer-page"]);
    assert!(writer[0].1.ends_with("/graphql.json"));
    assert_eq!(
        writer[0].5.as_deref(),
        Some("tok-shopify"),
        "the peer's own credential"
    );
    assert_eq!(writer[0].3, None, "and no other");

    // Without SHOPIFY_ALLOW_WRITES, Nango or Microsoft Ads' developer token,
    // and with approvals off: a mutation is refused before any request (a
    // query still runs), Figma and Microsoft Ads are not offered at all, and
    // Cloudflare's execute is not registered.
    let before = seen.lock().unwrap().len();
    let serve = start(
        &dir,
        &config,
        &[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("REQUIRE_WRITE_APPROVAL", "false"),
        ],
    );
    let plan = json!({
        "name": "switches-off",
        "brand": BRAND,
        "connections": [],
        "profiles": [],
        "sessions": [{"label": "person", "role": "person-chat"}],
        "calls": [
            {"label": "mutation", "session": "person", "connector": "shopify", "tool": "shopify_admin_graphql",
             "arguments": {"query": "mutation { tagsAdd(id: \"gid://shopify/Product/1\", tags: [\"sale\"]) { userErrors { message } } }"}},
            {"label": "query", "session": "person", "connector": "shopify", "tool": "shopify_admin_graphql",
             "arguments": {"query": "{ shop { name } }"}},
        ],
    });
    let summary = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || run_plan(&serve, &dir, &plan)
    })
    .await
    .unwrap();
    let person = listed(&summary, "person");
    assert!(
        !person.contains_key("figma") && !person.contains_key("microsoftads"),
        "not offered by this deployment: {:?}",
        person.keys()
    );
    assert!(
        person["shopify"].contains("shopify_admin_graphql"),
        "the tool stays: it is also the read path"
    );
    assert!(
        !person["agentmail"].contains("agentmail_send_message"),
        "AgentMail sends register only with AGENTMAIL_ALLOW_SENDS"
    );
    assert_eq!(
        person["cloudflare"],
        set(&["docs", "search"]),
        "Cloudflare's execute is absent when approvals are off"
    );
    let calls = &summary["calls"];
    assert_eq!(calls["mutation"]["error"], true, "{calls}");
    assert_eq!(calls["query"]["error"], false, "{calls}");
    let after: Vec<_> = seen.lock().unwrap()[before..].to_vec();
    assert_eq!(after.len(), 1, "only the query was sent: {after:?}");
    assert!(!after[0].2.contains("tagsAdd"));
    let _ = std::fs::remove_dir_all(&dir);
    tokio::time::sleep(Duration::from_millis(10)).await;
}
