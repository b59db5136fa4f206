//! Seed 000's tool surfaces, role by role, from the seed catalogue.
//!
//! Every expected list below is written out from the seed's text, not
//! computed by the code under test; groups of names are literal constants so
//! the lists stay readable.

use scout_host::policy::{
    AboveThreshold, Allowance, BrandFacts, BrowserProvider, Catalog, Egress, Environment, Gate,
    Grant, Harness, Limits, MutationGate, PolicyError, Preset, Profile, ProfileError, Role, Route,
    Rule, Server, SessionInput, Switch, Switches, check_call, presets, surface,
};

// ---- literal name groups, from the seed ----

const BUILTINS: &[&str] = &[
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "WebSearch",
    "WebFetch",
];
const READ_ONLY_BUILTINS: &[&str] = &["Read", "Glob", "Grep", "WebSearch", "WebFetch"];
const WEB_BUILTINS: &[&str] = &["WebSearch", "WebFetch"];
const MEMORY_NOTES: &[&str] = &[
    "mcp__memory__memory_read",
    "mcp__memory__memory_search",
    "mcp__memory__memory_list",
    "mcp__memory__memory_write",
    "mcp__memory__memory_append",
    "mcp__memory__memory_review",
    "mcp__memory__memory_merge",
];
const STANDING: &[&str] = &["mcp__memory__soul_update", "mcp__memory__goals_update"];
const PROJECT_ALL: &[&str] = &[
    "mcp__project__project_list",
    "mcp__project__project_read",
    "mcp__project__project_write",
    "mcp__project__project_append",
    "mcp__project__project_delete",
];
const PROJECT_LRW: &[&str] = &[
    "mcp__project__project_list",
    "mcp__project__project_read",
    "mcp__project__project_write",
];
const PROJECT_LR: &[&str] = &["mcp__project__project_list", "mcp__project__project_read"];
const GOALS: &[&str] = &[
    "mcp__goals__goals_status",
    "mcp__goals__goals_ask",
    "mcp__goals__goals_propose",
    "mcp__goals__goals_note",
];
const TRANSCRIPTS: &[&str] = &[
    "mcp__transcripts__transcript_search",
    "mcp__transcripts__transcript_read",
];
const SKILLS: &[&str] = &["mcp__skills__load_skill", "mcp__skills__read_skill_file"];
const TEAM: &[&str] = &[
    "mcp__team__team_roster",
    "mcp__team__team_assign",
    "mcp__team__team_status",
    "mcp__team__team_result",
    "mcp__team__team_cancel",
];
const SANDBOX: &[&str] = &[
    "mcp__sandbox__bash",
    "mcp__sandbox__read_file",
    "mcp__sandbox__write_file",
];
const BROWSER: &[&str] = &[
    "mcp__browser__browse_text",
    "mcp__browser__browse_screenshot",
];
const BROWSER_LOGINS: &[&str] = &[
    "mcp__browser__list_logins",
    "mcp__browser__start_login",
    "mcp__browser__finish_login",
];
const ALLOW_HOST: &[&str] = &["mcp__sandbox_egress__sandbox_allow_host"];

const SHOPIFY_READS: &[&str] = &[
    "mcp__shopify__shopify_shop_info",
    "mcp__shopify__shopify_search_products",
    "mcp__shopify__shopify_recent_orders",
];
const SHOPIFY_GRAPHQL: &[&str] = &["mcp__shopify__shopify_admin_graphql"];
const DATAFORSEO_TWELVE: &[&str] = &[
    "mcp__dataforseo__dataforseo_account",
    "mcp__dataforseo__dataforseo_keyword_ideas",
    "mcp__dataforseo__dataforseo_search_volume",
    "mcp__dataforseo__dataforseo_keyword_overview",
    "mcp__dataforseo__dataforseo_ranked_keywords",
    "mcp__dataforseo__dataforseo_serp_organic",
    "mcp__dataforseo__dataforseo_competitors",
    "mcp__dataforseo__dataforseo_page_audit",
    "mcp__dataforseo__dataforseo_keyword_difficulty",
    "mcp__dataforseo__dataforseo_search_intent",
    "mcp__dataforseo__dataforseo_rank_history",
    "mcp__dataforseo__dataforseo_trends",
];
const JOINT: &[&str] = &["mcp__dataforseo__seo_page_opportunities"];
const FIRECRAWL: &[&str] = &[
    "mcp__firecrawl__firecrawl_account",
    "mcp__firecrawl__firecrawl_scrape",
    "mcp__firecrawl__firecrawl_search",
    "mcp__firecrawl__firecrawl_map",
    "mcp__firecrawl__firecrawl_crawl",
];
const GOOGLEADS: &[&str] = &[
    "mcp__googleads__googleads_accounts",
    "mcp__googleads__googleads_report",
    "mcp__googleads__googleads_campaigns",
    "mcp__googleads__googleads_search_terms",
    "mcp__googleads__googleads_account_hierarchy",
    "mcp__googleads__googleads_compare_periods",
    "mcp__googleads__googleads_summarize",
    "mcp__googleads__googleads_search_term_audit",
];
const SEARCHCONSOLE: &[&str] = &[
    "mcp__searchconsole__searchconsole_properties",
    "mcp__searchconsole__searchconsole_totals",
    "mcp__searchconsole__searchconsole_queries",
    "mcp__searchconsole__searchconsole_pages",
    "mcp__searchconsole__searchconsole_breakdown",
    "mcp__searchconsole__searchconsole_inspect_url",
];
const ANALYTICS_GRANTABLE: &[&str] = &[
    "mcp__analytics__analytics_properties",
    "mcp__analytics__analytics_overview",
    "mcp__analytics__analytics_trend",
    "mcp__analytics__analytics_traffic_sources",
    "mcp__analytics__analytics_landing_pages",
    "mcp__analytics__analytics_report",
];
const ANALYTICS_USE_PROPERTY: &[&str] = &["mcp__analytics__analytics_use_property"];
const SHEETS_LIST: &[&str] = &["mcp__sheets__sheets_list"];
const SHEETS_WRITES: &[&str] = &["mcp__sheets__sheets_export", "mcp__sheets__sheets_append"];
const MICROSOFTADS: &[&str] = &[
    "mcp__microsoftads__microsoftads_accounts",
    "mcp__microsoftads__microsoftads_campaigns",
    "mcp__microsoftads__microsoftads_performance_report",
    "mcp__microsoftads__microsoftads_report_fetch",
];
const FIGMA: &[&str] = &[
    "mcp__figma__figma_whoami",
    "mcp__figma__figma_file_outline",
    "mcp__figma__figma_read_nodes",
    "mcp__figma__figma_export_images",
    "mcp__figma__figma_comments",
    "mcp__figma__figma_components_styles",
    "mcp__figma__figma_team_projects",
    "mcp__figma__figma_project_files",
];
const GITHUB_READS: &[&str] = &[
    "mcp__github__github_read_file",
    "mcp__github__github_list_path",
    "mcp__github__github_list_branches",
    "mcp__github__github_list_issues",
    "mcp__github__github_read_issue",
    "mcp__github__github_list_pull_requests",
    "mcp__github__github_read_pull_request",
];
const GITHUB_WRITES: &[&str] = &[
    "mcp__github__github_create_branch",
    "mcp__github__github_commit_files",
    "mcp__github__github_open_pull_request",
    "mcp__github__github_comment",
];
const AGENTMAIL_READS: &[&str] = &[
    "mcp__agentmail__agentmail_list_threads",
    "mcp__agentmail__agentmail_search_threads",
    "mcp__agentmail__agentmail_get_thread",
    "mcp__agentmail__agentmail_list_messages",
    "mcp__agentmail__agentmail_search_messages",
    "mcp__agentmail__agentmail_get_message",
    "mcp__agentmail__agentmail_get_attachment",
    "mcp__agentmail__agentmail_whoami",
    "mcp__agentmail__agentmail_list_drafts",
    "mcp__agentmail__agentmail_get_draft",
];
const AGENTMAIL_DRAFT: &[&str] = &["mcp__agentmail__agentmail_create_draft"];
const AGENTMAIL_SENDS: &[&str] = &[
    "mcp__agentmail__agentmail_send_message",
    "mcp__agentmail__agentmail_reply_to_message",
    "mcp__agentmail__agentmail_forward_message",
    "mcp__agentmail__agentmail_send_draft",
];
const CLOUDFLARE_READS: &[&str] = &["mcp__cloudflare__docs", "mcp__cloudflare__search"];
const CLOUDFLARE_EXECUTE: &[&str] = &["mcp__cloudflare__execute"];
const RAILWAY_READS: &[&str] = &[
    "mcp__railway__railway_workspaces",
    "mcp__railway__railway_project",
    "mcp__railway__railway_deployments",
    "mcp__railway__railway_variable_names",
    "mcp__railway__railway_logs",
];
const RAILWAY_REVEAL: &[&str] = &["mcp__railway__railway_reveal_variables"];
const RAILWAY_REDEPLOY: &[&str] = &["mcp__railway__railway_redeploy"];
const TAILSCALE: &[&str] = &[
    "mcp__tailscale__tailscale_devices",
    "mcp__tailscale__tailscale_device",
    "mcp__tailscale__tailscale_users",
    "mcp__tailscale__tailscale_policy",
    "mcp__tailscale__tailscale_dns",
];
const WRITER: &[&str] = &[
    "mcp__writer__writer_read_voice_guide",
    "mcp__writer__writer_save_voice_guide",
    "mcp__writer__writer_page_content",
    "mcp__writer__writer_read_brief",
    "mcp__writer__writer_save_draft",
];
const SEO_BRIEFS: &[&str] = &["mcp__seo__seo_save_brief", "mcp__seo__seo_hand_off_brief"];
/// The inbound email turn's eleven tools, in the seed's order.
const INBOUND: &[&str] = &[
    "mcp__agentmail__agentmail_list_threads",
    "mcp__agentmail__agentmail_search_threads",
    "mcp__agentmail__agentmail_get_thread",
    "mcp__agentmail__agentmail_list_messages",
    "mcp__agentmail__agentmail_search_messages",
    "mcp__agentmail__agentmail_get_message",
    "mcp__agentmail__agentmail_get_attachment",
    "mcp__agentmail__agentmail_whoami",
    "mcp__agentmail__agentmail_create_draft",
    "mcp__agentmail__agentmail_list_drafts",
    "mcp__agentmail__agentmail_get_draft",
];

const ALL_CONNECTORS: &[&str] = &[
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
    "cloudflare",
    "contentsquare",
    "railway",
    "tailscale",
];

// ---- helpers ----

fn expected(groups: &[&[&str]]) -> Vec<String> {
    let mut v: Vec<String> = groups
        .iter()
        .flat_map(|g| g.iter().map(|s| s.to_string()))
        .collect();
    v.sort();
    let before = v.len();
    v.dedup();
    assert_eq!(before, v.len(), "an expected list names a tool twice");
    v
}

fn switches(vars: &[(&str, &str)]) -> Switches {
    Switches::from_vars(vars.iter().copied())
}

/// Every connector connected, skills, coworkers, goals engine on, Browserbase, owner.
fn full_brand() -> BrandFacts {
    BrandFacts {
        has_skills: true,
        has_coworkers: true,
        goals_engine_on: true,
        browser_provider: Some(BrowserProvider::Browserbase),
        is_deployment_owner: true,
        ..BrandFacts::with_connectors(ALL_CONNECTORS.iter().copied())
    }
}

fn names_of(s: &scout_host::policy::Surface) -> Vec<String> {
    s.names().into_iter().map(String::from).collect()
}

fn profile(tools: &[&str]) -> Profile {
    Profile {
        name: "test".into(),
        tools: tools.iter().map(|s| s.to_string()).collect(),
        grant: Grant::default(),
        limits: Limits::preset(),
    }
}

/// A coworker profile asking for the standard set and for what a coworker never holds.
fn greedy_coworker() -> Profile {
    profile(&[
        "Bash",
        "Read",
        "Write",
        "WebSearch",
        "mcp__memory__memory_read",
        "mcp__memory__memory_write",
        "mcp__memory__soul_update",
        "mcp__project__project_list",
        "mcp__project__project_write",
        "mcp__project__project_delete",
        "mcp__transcripts__transcript_search",
        "mcp__team__team_assign",
        "mcp__goals__goals_status",
    ])
}

fn gate(s: &scout_host::policy::Surface, name: &str) -> Gate {
    s.get(name)
        .unwrap_or_else(|| panic!("{name} not offered"))
        .gate
        .clone()
}

// ---- the table ----

struct Case {
    name: &'static str,
    input: SessionInput,
    vars: &'static [(&'static str, &'static str)],
    expect: Vec<String>,
}

fn cases() -> Vec<Case> {
    let mut small_brand =
        BrandFacts::with_connectors(["github", "agentmail", "railway", "shopify", "cloudflare"]);
    small_brand.browser_provider = Some(BrowserProvider::Browserbase);
    let goal_grant = Grant {
        connectors: vec!["github".into(), "firecrawl".into()],
        allowances: [(
            "firecrawl".to_string(),
            Allowance::Credits {
                per_run_credits: 10,
                per_day_credits: 50,
            },
        )]
        .into(),
        skills: vec![],
        ..Default::default()
    };
    vec![
        Case {
            name: "person chat, local, default switches, every connector",
            input: SessionInput::new(Role::PersonChat).brand(full_brand()),
            vars: &[],
            expect: expected(&[
                BUILTINS,
                MEMORY_NOTES,
                STANDING,
                PROJECT_ALL,
                GOALS,
                TRANSCRIPTS,
                SKILLS,
                TEAM,
                SHOPIFY_READS,
                SHOPIFY_GRAPHQL,
                DATAFORSEO_TWELVE,
                JOINT,
                FIRECRAWL,
                GOOGLEADS,
                SEARCHCONSOLE,
                ANALYTICS_GRANTABLE,
                ANALYTICS_USE_PROPERTY,
                SHEETS_LIST,
                SHEETS_WRITES,
                MICROSOFTADS,
                FIGMA,
                GITHUB_READS,
                GITHUB_WRITES,
                AGENTMAIL_READS,
                AGENTMAIL_DRAFT,
                CLOUDFLARE_READS,
                CLOUDFLARE_EXECUTE,
                RAILWAY_READS,
                TAILSCALE,
            ]),
        },
        Case {
            name: "person chat, E2B, sends/redeploy/browser/logins on, five connectors, no skills/coworkers/goals",
            input: SessionInput::new(Role::PersonChat)
                .environment(Environment::E2b)
                .brand(small_brand),
            vars: &[
                ("AGENTMAIL_ALLOW_SENDS", "true"),
                ("RAILWAY_ALLOW_REDEPLOY", "yes"),
                ("SANDBOX_ALLOW_BROWSER", "true"),
                ("BROWSERBASE_PERSISTENT_LOGINS", "true"),
                ("GITHUB_ALLOW_WRITES", "1"),
            ],
            expect: expected(&[
                WEB_BUILTINS,
                MEMORY_NOTES,
                STANDING,
                PROJECT_ALL,
                TRANSCRIPTS,
                SANDBOX,
                BROWSER,
                BROWSER_LOGINS,
                ALLOW_HOST,
                SHOPIFY_READS,
                SHOPIFY_GRAPHQL,
                GITHUB_READS,
                GITHUB_WRITES,
                AGENTMAIL_READS,
                AGENTMAIL_DRAFT,
                AGENTMAIL_SENDS,
                RAILWAY_READS,
                RAILWAY_REDEPLOY,
                CLOUDFLARE_READS,
                CLOUDFLARE_EXECUTE,
            ]),
        },
        Case {
            name: "inbound email turn, every connector and every switch on",
            input: SessionInput::new(Role::InboundEmailTurn).brand(full_brand()),
            vars: &[
                ("AGENTMAIL_WEBHOOK_URL_SECRET", "s3cret"),
                ("AGENTMAIL_ALLOW_SENDS", "true"),
                ("GITHUB_ALLOW_WRITES", "true"),
                ("SANDBOX_ALLOW_BROWSER", "true"),
            ],
            expect: expected(&[INBOUND]),
        },
        Case {
            name: "coworker, standard route",
            input: SessionInput::new(Role::CoworkerRun {
                route: Route::Standard,
            })
            .brand(full_brand())
            .profile(greedy_coworker()),
            vars: &[],
            expect: expected(&[&[
                "Bash",
                "Read",
                "Write",
                "WebSearch",
                "mcp__memory__memory_read",
                "mcp__memory__memory_write",
                "mcp__project__project_list",
                "mcp__project__project_write",
            ]]),
        },
        Case {
            name: "coworker, standard route, E2B",
            input: SessionInput::new(Role::CoworkerRun {
                route: Route::Standard,
            })
            .environment(Environment::E2b)
            .brand(full_brand())
            .profile(greedy_coworker()),
            vars: &[("SANDBOX_ALLOW_BROWSER", "true")],
            expect: expected(&[&[
                "WebSearch",
                "mcp__memory__memory_read",
                "mcp__memory__memory_write",
                "mcp__project__project_list",
                "mcp__project__project_write",
            ]]),
        },
        Case {
            name: "coworker, read-only route",
            input: SessionInput::new(Role::CoworkerRun {
                route: Route::ReadOnly,
            })
            .brand(full_brand())
            .profile(greedy_coworker()),
            vars: &[],
            expect: expected(&[&["Read", "WebSearch"]]),
        },
        Case {
            name: "specialist with a grant (SEO analyst preset), every connector",
            input: SessionInput::new(Role::SpecialistRun {
                route: Route::Standard,
            })
            .brand(full_brand())
            .profile(Preset::SeoAnalyst.profile()),
            vars: &[],
            expect: expected(&[
                READ_ONLY_BUILTINS,
                PROJECT_LR,
                DATAFORSEO_TWELVE,
                JOINT,
                SEARCHCONSOLE,
                ANALYTICS_GRANTABLE,
                SHOPIFY_READS,
                SKILLS,
                SEO_BRIEFS,
            ]),
        },
        Case {
            name: "specialist with a grant whose Shopify does not resolve",
            input: SessionInput::new(Role::SpecialistRun {
                route: Route::Standard,
            })
            .brand(BrandFacts::with_connectors([
                "dataforseo",
                "searchconsole",
                "analytics",
            ]))
            .profile(Preset::SeoAnalyst.profile()),
            vars: &[],
            expect: expected(&[
                READ_ONLY_BUILTINS,
                PROJECT_LR,
                DATAFORSEO_TWELVE,
                SEARCHCONSOLE,
                ANALYTICS_GRANTABLE,
                SKILLS,
                SEO_BRIEFS,
            ]),
        },
        Case {
            name: "specialist with a grant (Content writer preset), opt-in writer tools",
            input: SessionInput::new(Role::SpecialistRun {
                route: Route::Standard,
            })
            .brand(full_brand())
            .profile(Preset::ContentWriter.profile()),
            vars: &[],
            expect: expected(&[
                READ_ONLY_BUILTINS,
                PROJECT_LR,
                SHOPIFY_READS,
                WRITER,
                SKILLS,
            ]),
        },
        Case {
            name: "goal agent without a grant",
            input: SessionInput::new(Role::GoalAgentStep).brand(full_brand()),
            vars: &[],
            expect: expected(&[READ_ONLY_BUILTINS, PROJECT_LRW]),
        },
        Case {
            name: "goal agent with a grant (GitHub, Firecrawl)",
            input: SessionInput::new(Role::GoalAgentStep)
                .brand(full_brand())
                .profile(presets::goal_agent(goal_grant)),
            vars: &[("GITHUB_ALLOW_WRITES", "true")],
            expect: expected(&[READ_ONLY_BUILTINS, PROJECT_LRW, GITHUB_READS, FIRECRAWL]),
        },
        Case {
            name: "goal reviewer",
            input: SessionInput::new(Role::GoalReviewer).brand(full_brand()),
            vars: &[("GITHUB_ALLOW_WRITES", "true")],
            expect: vec![],
        },
        Case {
            name: "read-only route, default harness",
            input: SessionInput::new(Role::ReadOnlyRoute {
                harness: Harness::Default,
            })
            .brand(full_brand()),
            vars: &[],
            expect: expected(&[READ_ONLY_BUILTINS, TRANSCRIPTS, SKILLS, TEAM]),
        },
        Case {
            name: "read-only route, loop harness",
            input: SessionInput::new(Role::ReadOnlyRoute {
                harness: Harness::Loop,
            })
            .brand(full_brand()),
            vars: &[("HARNESS_LOOP_ENABLED", "1")],
            expect: expected(&[TRANSCRIPTS, SKILLS]),
        },
    ]
}

#[test]
fn every_role_gets_exactly_its_seed_surface() {
    let catalog = Catalog::seed();
    let mut failures = Vec::new();
    for case in cases() {
        match surface(&case.input, &catalog, &switches(case.vars)) {
            Ok(s) => {
                let got = names_of(&s);
                if got != case.expect {
                    let extra: Vec<_> = got.iter().filter(|n| !case.expect.contains(n)).collect();
                    let missing: Vec<_> = case.expect.iter().filter(|n| !got.contains(n)).collect();
                    failures.push(format!(
                        "{}: extra {extra:?}, missing {missing:?}",
                        case.name
                    ));
                }
            }
            Err(e) => failures.push(format!("{}: refused: {e}", case.name)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn surfaces_are_sorted_and_say_who_serves_each_tool() {
    let s = surface(
        &SessionInput::new(Role::PersonChat).brand(full_brand()),
        &Catalog::seed(),
        &Switches::default(),
    )
    .unwrap();
    let names = s.names();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert_eq!(s.get("Read").unwrap().server, Server::Orchestrator);
    assert_eq!(
        s.get("mcp__github__github_read_file").unwrap().server,
        Server::Host
    );
    assert_eq!(
        s.get("mcp__project__project_delete").unwrap().server,
        Server::Host
    );
    assert_eq!(
        s.get("mcp__memory__memory_read").unwrap().server,
        Server::Host
    );
    assert_eq!(
        s.get("mcp__transcripts__transcript_read").unwrap().server,
        Server::Orchestrator
    );
    assert!(
        s.served_by(Server::Orchestrator)
            .contains(&"mcp__team__team_assign")
    );
    assert_eq!(s.allowlist().len(), s.len());
}

// ---- role invariants ----

#[test]
fn inbound_turn_is_unchanged_by_agentmail_sends() {
    let input = SessionInput::new(Role::InboundEmailTurn)
        .brand(full_brand())
        .approval_channel(true);
    let catalog = Catalog::seed();
    let off = surface(
        &input,
        &catalog,
        &switches(&[("AGENTMAIL_WEBHOOK_URL_SECRET", "x")]),
    )
    .unwrap();
    let on = surface(
        &input,
        &catalog,
        &switches(&[
            ("AGENTMAIL_WEBHOOK_URL_SECRET", "x"),
            ("AGENTMAIL_ALLOW_SENDS", "true"),
            ("REQUIRE_WRITE_APPROVAL", "true"),
        ]),
    )
    .unwrap();
    assert_eq!(names_of(&off), expected(&[INBOUND]));
    assert_eq!(on, off);
    assert!(on.iter().all(|t| t.gate == Gate::Open));
    assert_eq!(
        check_call(&on, "mcp__agentmail__agentmail_send_message"),
        Err(Rule::NotOffered)
    );
}

#[test]
fn inbound_route_needs_its_secret_and_agentmail() {
    let catalog = Catalog::seed();
    let input = SessionInput::new(Role::InboundEmailTurn).brand(full_brand());
    assert_eq!(
        surface(&input, &catalog, &Switches::default()),
        Err(PolicyError::InboundRouteOff)
    );
    let no_mail =
        SessionInput::new(Role::InboundEmailTurn).brand(BrandFacts::with_connectors(["github"]));
    assert_eq!(
        surface(
            &no_mail,
            &catalog,
            &switches(&[("AGENTMAIL_WEBHOOK_URL_SECRET", "x")])
        ),
        Err(PolicyError::InboundWithoutAgentMail)
    );
}

#[test]
fn goal_reviewer_with_a_tool_delegation_or_grant_is_refused() {
    let catalog = Catalog::seed();
    let run = |p: Profile| {
        surface(
            &SessionInput::new(Role::GoalReviewer).profile(p),
            &catalog,
            &Switches::default(),
        )
    };
    let ok = run(presets::goal_reviewer()).unwrap();
    assert!(ok.is_empty());

    let mut with_tool = presets::goal_reviewer();
    with_tool.tools.push("Read".into());
    assert_eq!(
        run(with_tool),
        Err(PolicyError::Profile(ProfileError::ReviewerHasTools {
            count: 1
        }))
    );

    let mut delegating = presets::goal_reviewer();
    delegating.limits.max_delegation_depth = 1;
    assert_eq!(
        run(delegating),
        Err(PolicyError::Profile(ProfileError::ReviewerDelegates {
            depth: 1
        }))
    );

    let mut granted = presets::goal_reviewer();
    granted.grant.connectors.push("github".into());
    assert_eq!(
        run(granted),
        Err(PolicyError::Profile(ProfileError::ReviewerHasGrant))
    );

    let mut skilled = presets::goal_reviewer();
    skilled.grant.skills.push("seo-method".into());
    assert_eq!(
        run(skilled),
        Err(PolicyError::Profile(ProfileError::ReviewerHasGrant))
    );
}

#[test]
fn coworker_never_holds_delete_transcripts_goals_or_team() {
    let p = greedy_coworker();
    let s = surface(
        &SessionInput::new(Role::CoworkerRun {
            route: Route::Standard,
        })
        .brand(full_brand())
        .profile(p.clone()),
        &Catalog::seed(),
        &Switches::default(),
    )
    .unwrap();
    for hidden in [
        "mcp__project__project_delete",
        "mcp__transcripts__transcript_search",
        "mcp__team__team_assign",
        "mcp__goals__goals_status",
        "mcp__memory__soul_update",
    ] {
        assert!(!s.contains(hidden), "{hidden}");
        assert_eq!(check_call(&s, hidden), Err(Rule::NotOffered));
    }
    // The saved profile keeps the entry; only the tool is lost.
    assert!(p.tools.iter().any(|t| t == "mcp__project__project_delete"));
    assert!(p.validate(&Catalog::seed()).is_ok());
    // No connector at all, even with every connector connected.
    assert!(
        s.iter()
            .all(|t| !matches!(t.origin, scout_host::policy::Origin::Connector(_)))
    );
}

#[test]
fn a_profile_with_nothing_inside_the_ceiling_is_refused() {
    let catalog = Catalog::seed();
    let only_hidden = profile(&[
        "mcp__project__project_delete",
        "mcp__transcripts__transcript_read",
    ]);
    let input = SessionInput::new(Role::CoworkerRun {
        route: Route::Standard,
    })
    .profile(only_hidden);
    assert_eq!(
        surface(&input, &catalog, &Switches::default()),
        Err(PolicyError::NothingPermitted {
            role: "coworker run"
        })
    );
    let shell_only = SessionInput::new(Role::CoworkerRun {
        route: Route::Standard,
    })
    .environment(Environment::E2b)
    .profile(profile(&["Bash", "Edit"]));
    assert!(matches!(
        surface(&shell_only, &catalog, &Switches::default()),
        Err(PolicyError::NothingPermitted { .. })
    ));
    let empty = SessionInput::new(Role::CoworkerRun {
        route: Route::Standard,
    })
    .profile(profile(&[]));
    assert!(matches!(
        surface(&empty, &catalog, &Switches::default()),
        Err(PolicyError::NothingPermitted { .. })
    ));
    let msg = surface(&input_for_message(), &catalog, &Switches::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("refused rather than started with none"),
        "{msg}"
    );
}

fn input_for_message() -> SessionInput {
    SessionInput::new(Role::CoworkerRun {
        route: Route::ReadOnly,
    })
    .profile(profile(&["Bash"]))
}

#[test]
fn a_plain_coworker_with_a_grant_or_no_profile_is_refused() {
    let catalog = Catalog::seed();
    let input = SessionInput::new(Role::CoworkerRun {
        route: Route::Standard,
    })
    .profile(Preset::StoreAssistant.profile());
    assert_eq!(
        surface(&input, &catalog, &Switches::default()),
        Err(PolicyError::GrantOnPlainCoworker)
    );
    assert_eq!(
        Role::for_profile(&Preset::StoreAssistant.profile(), Route::Standard),
        Role::SpecialistRun {
            route: Route::Standard
        }
    );
    assert_eq!(
        surface(
            &SessionInput::new(Role::CoworkerRun {
                route: Route::Standard
            }),
            &catalog,
            &Switches::default()
        ),
        Err(PolicyError::ProfileMissing {
            role: "coworker run"
        })
    );
    assert!(matches!(
        surface(
            &SessionInput::new(Role::PersonChat).profile(profile(&["Read"])),
            &catalog,
            &Switches::default()
        ),
        Err(PolicyError::ProfileNotExpected { .. })
    ));
}

#[test]
fn read_only_route_keeps_no_connector_and_harnesses_need_their_switches() {
    let catalog = Catalog::seed();
    let s = surface(
        &SessionInput::new(Role::ReadOnlyRoute {
            harness: Harness::Default,
        })
        .brand(full_brand()),
        &catalog,
        &switches(&[
            ("GITHUB_ALLOW_WRITES", "true"),
            ("AGENTMAIL_ALLOW_SENDS", "true"),
        ]),
    )
    .unwrap();
    assert!(s.names().iter().all(|n| !n.starts_with("mcp__")
        || n.starts_with("mcp__transcripts__")
        || n.starts_with("mcp__skills__")
        || n.starts_with("mcp__team__")));
    let hermes = SessionInput::new(Role::ReadOnlyRoute {
        harness: Harness::Hermes,
    })
    .brand(full_brand());
    assert!(matches!(
        surface(
            &hermes,
            &catalog,
            &switches(&[("HARNESS_HERMES_ENABLED", "true")])
        ),
        Err(PolicyError::HarnessOff { .. })
    ));
    let on = switches(&[
        ("HARNESS_HERMES_ENABLED", "true"),
        ("HARNESS_MCP_BRIDGE_ENABLED", "1"),
    ]);
    assert_eq!(
        names_of(&surface(&hermes, &catalog, &on).unwrap()),
        expected(&[TRANSCRIPTS, SKILLS])
    );
    let not_owner = SessionInput::new(Role::ReadOnlyRoute {
        harness: Harness::Loop,
    });
    assert_eq!(
        surface(
            &not_owner,
            &catalog,
            &switches(&[("HARNESS_LOOP_ENABLED", "true")])
        ),
        Err(PolicyError::HarnessOwnerOnly {
            harness: Harness::Loop
        })
    );
    let loop_off = SessionInput::new(Role::ReadOnlyRoute {
        harness: Harness::Loop,
    })
    .brand(full_brand());
    assert!(matches!(
        surface(
            &loop_off,
            &catalog,
            &switches(&[("HARNESS_LOOP_ENABLED", "yes")])
        ),
        Err(PolicyError::HarnessOff { .. })
    ));
    let e2b = SessionInput::new(Role::ReadOnlyRoute {
        harness: Harness::Default,
    })
    .environment(Environment::E2b);
    assert_eq!(
        names_of(&surface(&e2b, &catalog, &Switches::default()).unwrap()),
        expected(&[WEB_BUILTINS, TRANSCRIPTS])
    );
}

// ---- "absent beats refusing" and its exceptions ----

fn person(vars: &[(&str, &str)], channel: bool) -> scout_host::policy::Surface {
    surface(
        &SessionInput::new(Role::PersonChat)
            .brand(full_brand())
            .approval_channel(channel),
        &Catalog::seed(),
        &switches(vars),
    )
    .unwrap()
}

#[test]
fn github_writes_register_and_refuse_without_the_switch_or_a_channel() {
    let off = person(&[], true);
    for w in GITHUB_WRITES {
        assert_eq!(
            gate(&off, w),
            Gate::Refuses(Rule::SwitchedOff(Switch::GithubAllowWrites))
        );
        // The role allows the call; the switch refuses it, and says so.
        assert_eq!(
            check_call(&off, w),
            Err(Rule::SwitchedOff(Switch::GithubAllowWrites))
        );
    }
    let no_channel = person(&[("GITHUB_ALLOW_WRITES", "true")], false);
    for w in GITHUB_WRITES {
        assert_eq!(gate(&no_channel, w), Gate::Refuses(Rule::ApprovalRequired));
        assert_eq!(check_call(&no_channel, w), Err(Rule::ApprovalRequired));
    }
    let approvals_off = person(
        &[
            ("GITHUB_ALLOW_WRITES", "yes"),
            ("REQUIRE_WRITE_APPROVAL", "no"),
        ],
        true,
    );
    assert_eq!(
        gate(&approvals_off, GITHUB_WRITES[0]),
        Gate::Refuses(Rule::ApprovalRequired)
    );
    let on = person(&[("GITHUB_ALLOW_WRITES", "1")], true);
    for w in GITHUB_WRITES {
        assert_eq!(check_call(&on, w), Ok(Gate::AsksPerson));
    }
    for r in GITHUB_READS {
        assert_eq!(check_call(&off, r), Ok(Gate::Open));
    }
    let marked: Vec<&str> = off
        .exceptions()
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n.contains("github"))
        .collect();
    assert_eq!(marked.len(), 4);
    assert!(
        Rule::SwitchedOff(Switch::GithubAllowWrites)
            .refusal_reason()
            .contains("GITHUB_ALLOW_WRITES")
    );
}

#[test]
fn agentmail_sends_register_only_when_exactly_true_and_refuse_without_a_channel() {
    for v in ["1", "yes", "TRUE", "True"] {
        let s = person(&[("AGENTMAIL_ALLOW_SENDS", v)], true);
        assert!(AGENTMAIL_SENDS.iter().all(|t| !s.contains(t)), "{v}");
    }
    let s = person(&[("AGENTMAIL_ALLOW_SENDS", "true")], true);
    for t in AGENTMAIL_SENDS {
        assert_eq!(gate(&s, t), Gate::AsksPerson);
    }
    assert_eq!(gate(&s, AGENTMAIL_DRAFT[0]), Gate::Open);
    let no_channel = person(&[("AGENTMAIL_ALLOW_SENDS", "true")], false);
    for t in AGENTMAIL_SENDS {
        assert_eq!(gate(&no_channel, t), Gate::Refuses(Rule::ApprovalRequired));
    }
}

#[test]
fn shopify_graphql_stays_the_read_path_and_gates_mutations() {
    let off = person(&[], true);
    assert_eq!(
        gate(&off, SHOPIFY_GRAPHQL[0]),
        Gate::ReadsRunMutationsGated {
            mutations: MutationGate::Refuses(Rule::SwitchedOff(Switch::ShopifyAllowWrites))
        }
    );
    let on = person(&[("SHOPIFY_ALLOW_WRITES", "true")], true);
    assert_eq!(
        gate(&on, SHOPIFY_GRAPHQL[0]),
        Gate::ReadsRunMutationsGated {
            mutations: MutationGate::AsksPerson
        }
    );
    // The closed hole: approvals off no longer lets a mutation run on the switch alone.
    let approvals_off = person(
        &[
            ("SHOPIFY_ALLOW_WRITES", "true"),
            ("REQUIRE_WRITE_APPROVAL", "false"),
        ],
        true,
    );
    assert_eq!(
        gate(&approvals_off, SHOPIFY_GRAPHQL[0]),
        Gate::ReadsRunMutationsGated {
            mutations: MutationGate::Refuses(Rule::ApprovalRequired)
        }
    );
    assert!(
        check_call(&approvals_off, SHOPIFY_GRAPHQL[0]).is_ok(),
        "reads still run"
    );
}

#[test]
fn sheets_writes_refuse_without_a_channel_and_cloudflare_execute_is_absent_when_approvals_are_off()
{
    let with = person(&[], true);
    for t in SHEETS_WRITES {
        assert_eq!(gate(&with, t), Gate::AsksPerson);
    }
    assert_eq!(gate(&with, CLOUDFLARE_EXECUTE[0]), Gate::AsksPerson);
    let without = person(&[], false);
    for t in SHEETS_WRITES {
        assert_eq!(gate(&without, t), Gate::Refuses(Rule::ApprovalRequired));
    }
    assert!(!without.contains(CLOUDFLARE_EXECUTE[0]));
    let approvals_off = person(&[("REQUIRE_WRITE_APPROVAL", "0")], true);
    assert!(!approvals_off.contains(CLOUDFLARE_EXECUTE[0]));
    assert_eq!(
        gate(&approvals_off, STANDING[0]),
        Gate::Open,
        "soul_update asks only when approvals are on"
    );
    assert_eq!(gate(&with, STANDING[0]), Gate::AsksPerson);
}

#[test]
fn railway_switches_register_reveal_and_redeploy() {
    let none = person(&[], true);
    assert!(!none.contains(RAILWAY_REVEAL[0]) && !none.contains(RAILWAY_REDEPLOY[0]));
    let both = person(
        &[
            ("RAILWAY_ALLOW_VARIABLE_VALUES", "true"),
            ("RAILWAY_ALLOW_REDEPLOY", "1"),
        ],
        true,
    );
    assert_eq!(gate(&both, RAILWAY_REVEAL[0]), Gate::AsksPerson);
    assert_eq!(gate(&both, RAILWAY_REDEPLOY[0]), Gate::AsksPerson);
    let odd = person(&[("RAILWAY_ALLOW_VARIABLE_VALUES", "on")], true);
    assert!(!odd.contains(RAILWAY_REVEAL[0]));
}

#[test]
fn billing_connectors_ask_above_threshold_in_person_chat() {
    let s = person(&[], true);
    assert_eq!(
        gate(&s, FIRECRAWL[1]),
        Gate::Spend {
            connector: "firecrawl".into(),
            above_threshold: AboveThreshold::AsksPerson
        }
    );
    let off = person(&[("REQUIRE_WRITE_APPROVAL", "false")], true);
    assert_eq!(
        gate(&off, DATAFORSEO_TWELVE[0]),
        Gate::Spend {
            connector: "dataforseo".into(),
            above_threshold: AboveThreshold::Refuses
        }
    );
}

#[test]
fn e2b_sandbox_browser_and_egress_follow_their_switches() {
    let run = |vars: &[(&str, &str)], provider: Option<BrowserProvider>, channel: bool| {
        let brand = BrandFacts {
            browser_provider: provider,
            ..BrandFacts::default()
        };
        surface(
            &SessionInput::new(Role::PersonChat)
                .environment(Environment::E2b)
                .brand(brand)
                .approval_channel(channel),
            &Catalog::seed(),
            &switches(vars),
        )
        .unwrap()
    };
    let base = expected(&[
        WEB_BUILTINS,
        MEMORY_NOTES,
        STANDING,
        PROJECT_ALL,
        TRANSCRIPTS,
        SANDBOX,
    ]);
    let with = |extra: &[&[&str]]| {
        let mut groups: Vec<&[&str]> = vec![
            WEB_BUILTINS,
            MEMORY_NOTES,
            STANDING,
            PROJECT_ALL,
            TRANSCRIPTS,
            SANDBOX,
        ];
        groups.extend_from_slice(extra);
        expected(&groups)
    };
    // Open egress (any case) removes allow_host; a typo keeps the allowlist.
    assert_eq!(
        names_of(&run(&[("SANDBOX_EGRESS", "OPEN")], None, true)),
        base
    );
    assert_eq!(
        names_of(&run(&[("SANDBOX_EGRESS", "opne")], None, true)),
        with(&[ALLOW_HOST])
    );
    // No channel, or approvals off: allow_host absent.
    assert_eq!(names_of(&run(&[], None, false)), base);
    assert_eq!(
        names_of(&run(&[("REQUIRE_WRITE_APPROVAL", "no")], None, true)),
        base
    );
    // Browser: exactly true and a provider.
    assert_eq!(
        names_of(&run(
            &[("SANDBOX_ALLOW_BROWSER", "TRUE")],
            Some(BrowserProvider::Other),
            true
        )),
        with(&[ALLOW_HOST])
    );
    assert_eq!(
        names_of(&run(&[("SANDBOX_ALLOW_BROWSER", "true")], None, true)),
        with(&[ALLOW_HOST])
    );
    assert_eq!(
        names_of(&run(
            &[
                ("SANDBOX_ALLOW_BROWSER", "true"),
                ("BROWSERBASE_PERSISTENT_LOGINS", "true")
            ],
            Some(BrowserProvider::Other),
            true
        )),
        with(&[ALLOW_HOST, BROWSER])
    );
    assert_eq!(
        names_of(&run(
            &[
                ("SANDBOX_ALLOW_BROWSER", "true"),
                ("BROWSERBASE_PERSISTENT_LOGINS", "1")
            ],
            Some(BrowserProvider::Browserbase),
            true
        )),
        with(&[ALLOW_HOST, BROWSER])
    );
    assert_eq!(
        names_of(&run(
            &[
                ("SANDBOX_ALLOW_BROWSER", "true"),
                ("BROWSERBASE_PERSISTENT_LOGINS", "true")
            ],
            Some(BrowserProvider::Browserbase),
            true
        )),
        with(&[ALLOW_HOST, BROWSER, BROWSER_LOGINS])
    );
}

#[test]
fn denials_are_bounded_and_never_name_a_hidden_tool() {
    let coworker = surface(
        &SessionInput::new(Role::CoworkerRun {
            route: Route::Standard,
        })
        .profile(profile(&["Read"])),
        &Catalog::seed(),
        &Switches::default(),
    )
    .unwrap();
    let hidden = check_call(&coworker, "mcp__github__github_create_branch").unwrap_err();
    let unknown = check_call(&coworker, "mcp__nothing__at_all").unwrap_err();
    assert_eq!(
        hidden, unknown,
        "a hidden tool and a tool that does not exist look the same"
    );
    assert!(!hidden.safe_reason().contains("github"));
    for d in [
        Rule::NotOffered,
        Rule::ApprovalRequired,
        Rule::ApprovalDenied,
        Rule::ApprovalTimedOut,
        Rule::ApprovalWithdrawn,
        Rule::SwitchedOff(scout_host::policy::Switch::GithubAllowWrites),
        Rule::Unrecorded,
        Rule::OutsideRole,
        Rule::Revoked,
        Rule::InvalidArguments,
    ] {
        assert!(!d.safe_reason().contains("mcp__"));
        assert_eq!(d.to_string(), d.safe_reason());
    }
}

#[test]
fn a_retry_is_narrowed_to_the_previous_attempts_tools() {
    let catalog = Catalog::seed();
    let input = SessionInput::new(Role::CoworkerRun {
        route: Route::Standard,
    })
    .profile(greedy_coworker())
    .retry_of([
        "Read",
        "mcp__memory__memory_read",
        "mcp__project__project_delete",
    ]);
    let s = surface(&input, &catalog, &Switches::default()).unwrap();
    assert_eq!(
        names_of(&s),
        expected(&[&["Read", "mcp__memory__memory_read"]])
    );
    let first = surface(
        &SessionInput::new(Role::GoalAgentStep),
        &catalog,
        &Switches::default(),
    )
    .unwrap();
    assert_eq!(
        names_of(&first.narrow_for_retry(["Read", "Bash"]).unwrap()),
        ["Read"]
    );
    assert!(matches!(
        first.narrow_for_retry(["Bash"]),
        Err(PolicyError::NothingPermitted { .. })
    ));
}

// ---- goal agent ----

#[test]
fn goal_agent_grant_is_charged_to_its_allowance_and_checked() {
    let catalog = Catalog::seed();
    let grant = Grant {
        connectors: vec!["firecrawl".into(), "shopify".into()],
        allowances: [(
            "firecrawl".to_string(),
            Allowance::Credits {
                per_run_credits: 10,
                per_day_credits: 50,
            },
        )]
        .into(),
        skills: vec![],
        ..Default::default()
    };
    let s = surface(
        &SessionInput::new(Role::GoalAgentStep)
            .brand(full_brand())
            .profile(presets::goal_agent(grant.clone())),
        &catalog,
        &Switches::default(),
    )
    .unwrap();
    assert_eq!(
        names_of(&s),
        expected(&[READ_ONLY_BUILTINS, PROJECT_LRW, FIRECRAWL, SHOPIFY_READS])
    );
    assert_eq!(
        gate(&s, FIRECRAWL[0]),
        Gate::Allowance {
            connector: "firecrawl".into(),
            allowance: Allowance::Credits {
                per_run_credits: 10,
                per_day_credits: 50
            }
        }
    );
    assert_eq!(presets::goal_agent(grant).limits.max_attempts, 2);

    let run = |p: Profile| {
        surface(
            &SessionInput::new(Role::GoalAgentStep).profile(p),
            &catalog,
            &Switches::default(),
        )
    };
    let mut no_allowance = presets::goal_agent(Grant::default());
    no_allowance.grant.connectors.push("firecrawl".into());
    assert!(matches!(
        run(no_allowance),
        Err(PolicyError::Profile(ProfileError::MissingAllowance { .. }))
    ));
    let mut with_bash = presets::goal_agent(Grant::default());
    with_bash.tools.push("Bash".into());
    assert!(matches!(
        run(with_bash),
        Err(PolicyError::Profile(ProfileError::GoalAgentTool { .. }))
    ));
    let mut with_skill = presets::goal_agent(Grant::default());
    with_skill.grant.skills.push("seo-method".into());
    assert!(matches!(
        run(with_skill),
        Err(PolicyError::Profile(ProfileError::GoalAgentSkills))
    ));
    let mut cloudflare = presets::goal_agent(Grant::default());
    cloudflare.grant.connectors.push("cloudflare".into());
    assert!(matches!(
        run(cloudflare),
        Err(PolicyError::Profile(
            ProfileError::ConnectorNotGrantable { .. }
        ))
    ));
    let e2b = surface(
        &SessionInput::new(Role::GoalAgentStep).environment(Environment::E2b),
        &catalog,
        &Switches::default(),
    )
    .unwrap();
    assert_eq!(names_of(&e2b), expected(&[WEB_BUILTINS, PROJECT_LRW]));
}

// ---- the five profile rules and the limits ----

fn refusal(p: &Profile) -> ProfileError {
    p.validate(&Catalog::seed()).expect_err("refused")
}

fn assert_rule(p: &Profile, rule: u8) {
    let e = refusal(p);
    assert_eq!(e.rule(), Some(rule), "{e}");
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("rule {rule} (")), "{msg}");
}

#[test]
fn rule_1_connector_tool_not_covered_by_the_grant() {
    assert_rule(&profile(&["Read", "mcp__github__github_read_file"]), 1);
    let mut joint = profile(&["mcp__dataforseo__seo_page_opportunities"]);
    joint.grant.connectors = vec!["dataforseo".into(), "shopify".into()];
    joint.grant.allowances.insert(
        "dataforseo".into(),
        Allowance::Usd {
            per_run_usd: 1.0,
            per_day_usd: 3.0,
        },
    );
    let e = refusal(&joint);
    assert_eq!(e.rule(), Some(1));
    assert!(e.to_string().contains("Search Console"), "{e}");
    assert_rule(&profile(&["mcp__writer__writer_save_draft"]), 1);
}

#[test]
fn rule_2_tool_outside_the_read_table() {
    let mut p = profile(&["Read", "mcp__github__github_create_branch"]);
    p.grant.connectors.push("github".into());
    assert_rule(&p, 2);
    let mut p = profile(&["mcp__analytics__analytics_use_property"]);
    p.grant.connectors.push("analytics".into());
    assert_rule(&p, 2);
    let mut p = profile(&["mcp__shopify__shopify_admin_graphql"]);
    p.grant.connectors.push("shopify".into());
    assert_rule(&p, 2);
    assert_rule(&profile(&["mcp__agentmail__agentmail_create_draft"]), 2);
    assert_rule(&profile(&["mcp__cloudflare__docs"]), 2);
    assert_rule(&profile(&["mcp__unknown__thing"]), 2);
    let mut p = profile(&["Read"]);
    p.grant.connectors.push("cloudflare".into());
    assert_rule(&p, 2);
    assert!(
        refusal(&profile(&["Read", "mcp__github__github_comment"]))
            .to_string()
            .contains("never commits")
    );
}

#[test]
fn rule_3_billing_connector_without_a_sound_allowance() {
    let mut p = profile(&["Read"]);
    p.grant.connectors.push("firecrawl".into());
    assert_rule(&p, 3);
    p.grant.allowances.insert(
        "firecrawl".into(),
        Allowance::Credits {
            per_run_credits: 200,
            per_day_credits: 100,
        },
    );
    assert_rule(&p, 3);
    p.grant.allowances.insert(
        "firecrawl".into(),
        Allowance::Usd {
            per_run_usd: 1.0,
            per_day_usd: 2.0,
        },
    );
    assert_rule(&p, 3);
    p.grant.allowances.insert(
        "firecrawl".into(),
        Allowance::Credits {
            per_run_credits: 100,
            per_day_credits: 100,
        },
    );
    assert!(p.validate(&Catalog::seed()).is_ok());
    let mut d = profile(&["Read"]);
    d.grant.connectors.push("dataforseo".into());
    d.grant.allowances.insert(
        "dataforseo".into(),
        Allowance::Usd {
            per_run_usd: 5.0,
            per_day_usd: 3.0,
        },
    );
    assert_rule(&d, 3);
    assert!(refusal(&d).to_string().contains("per day"));
    d.grant.allowances.insert(
        "dataforseo".into(),
        Allowance::Usd {
            per_run_usd: f64::NAN,
            per_day_usd: 3.0,
        },
    );
    assert_rule(&d, 3);
}

#[test]
fn rule_4_skills() {
    assert_rule(&profile(&["Read", "mcp__skills__load_skill"]), 4);
    let mut p = profile(&["Read"]);
    p.grant.skills.push("seo-data-magic".into());
    assert_rule(&p, 4);
    let mut brief = profile(&["mcp__seo__seo_save_brief"]);
    brief.grant.skills.push("voice-guide".into());
    assert_rule(&brief, 4);
    let mut ok = profile(&["mcp__skills__load_skill"]);
    ok.grant.skills.push("humanizer".into());
    assert!(ok.validate(&Catalog::seed()).is_ok());
}

#[test]
fn rule_5_hand_off_at_depth_zero() {
    let mut p = profile(&["mcp__seo__seo_hand_off_brief"]);
    p.grant.skills.push("seo-method".into());
    assert_rule(&p, 5);
    p.limits.max_delegation_depth = 1;
    assert!(p.validate(&Catalog::seed()).is_ok());
}

#[test]
fn limits_are_refused_out_of_bounds() {
    let with = |f: &dyn Fn(&mut Limits)| {
        let mut p = profile(&["Read"]);
        f(&mut p.limits);
        p.validate(&Catalog::seed())
    };
    assert!(matches!(
        with(&|l| l.run_budget_usd = 0.0),
        Err(ProfileError::RunBudget { .. })
    ));
    assert!(matches!(
        with(&|l| l.run_budget_usd = -1.0),
        Err(ProfileError::RunBudget { .. })
    ));
    assert!(matches!(
        with(&|l| l.run_budget_usd = f64::NAN),
        Err(ProfileError::RunBudget { .. })
    ));
    assert_eq!(with(&|l| l.max_turns = 0), Err(ProfileError::MaxTurns));
    assert_eq!(
        with(&|l| l.max_concurrent_runs = 0),
        Err(ProfileError::MaxConcurrentRuns)
    );
    assert_eq!(
        with(&|l| l.max_attempts = 0),
        Err(ProfileError::MaxAttempts)
    );
    assert_eq!(with(&|l| l.max_delegation_depth = 0), Ok(()));
    assert!(
        with(&|l| l.run_budget_usd = 0.0)
            .unwrap_err()
            .to_string()
            .contains("runBudgetUsd")
    );
    let parsed: Limits = serde_json::from_str(
        r#"{"runBudgetUsd":0.25,"maxTurns":3,"maxConcurrentRuns":2,"maxDelegationDepth":0}"#,
    )
    .unwrap();
    assert_eq!(parsed.max_attempts, 1);
    assert!(
        serde_json::from_str::<Limits>(
            r#"{"runBudgetUsd":1,"maxTurns":1,"maxConcurrentRuns":1,"maxDelegationDepth":-1}"#
        )
        .is_err()
    );
}

// ---- presets ----

#[test]
fn the_eight_presets_validate_and_produce_their_surfaces() {
    let catalog = Catalog::seed();
    let expect = |p: Preset| -> Vec<String> {
        match p {
            Preset::Researcher => expected(&[READ_ONLY_BUILTINS, PROJECT_LRW, FIRECRAWL]),
            Preset::DataAnalyst | Preset::Writer => expected(&[READ_ONLY_BUILTINS, PROJECT_LRW]),
            Preset::StoreAssistant => expected(&[READ_ONLY_BUILTINS, PROJECT_LRW, SHOPIFY_READS]),
            Preset::MarketingAssistant => expected(&[
                READ_ONLY_BUILTINS,
                PROJECT_LRW,
                DATAFORSEO_TWELVE,
                GOOGLEADS,
                ANALYTICS_GRANTABLE,
                SEARCHCONSOLE,
            ]),
            Preset::PaidTrafficManager => expected(&[
                READ_ONLY_BUILTINS,
                PROJECT_LRW,
                GOOGLEADS,
                ANALYTICS_GRANTABLE,
                SEARCHCONSOLE,
                SHOPIFY_READS,
                SKILLS,
            ]),
            Preset::SeoAnalyst => expected(&[
                READ_ONLY_BUILTINS,
                PROJECT_LR,
                DATAFORSEO_TWELVE,
                JOINT,
                SEARCHCONSOLE,
                ANALYTICS_GRANTABLE,
                SHOPIFY_READS,
                SKILLS,
                SEO_BRIEFS,
            ]),
            Preset::ContentWriter => expected(&[
                READ_ONLY_BUILTINS,
                PROJECT_LR,
                SHOPIFY_READS,
                WRITER,
                SKILLS,
            ]),
        }
    };
    for p in Preset::ALL {
        let profile = p.profile();
        profile
            .validate(&catalog)
            .unwrap_or_else(|e| panic!("{}: {e}", p.title()));
        assert_eq!(profile.limits.run_budget_usd, 0.5, "{}", p.title());
        assert_eq!(profile.limits.max_turns, 10);
        assert_eq!(profile.limits.max_concurrent_runs, 1);
        assert_eq!(profile.limits.max_attempts, 1);
        let role = Role::for_profile(&profile, Route::Standard);
        let s = surface(
            &SessionInput::new(role).brand(full_brand()).profile(profile),
            &catalog,
            &Switches::default(),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", p.title()));
        assert_eq!(names_of(&s), expect(p), "{}", p.title());
    }
    let content = Preset::ContentWriter.profile();
    assert!(
        !content
            .tools
            .iter()
            .any(|t| t == "mcp__project__project_write")
    );
    let seo = Preset::SeoAnalyst.profile();
    assert_eq!(seo.limits.max_delegation_depth, 1);
    assert!(
        Preset::ALL
            .iter()
            .filter(|p| **p != Preset::SeoAnalyst)
            .all(|p| p.profile().limits.max_delegation_depth == 0)
    );
    let researcher = Preset::Researcher.profile();
    assert_eq!(
        researcher.grant.allowances["firecrawl"],
        Allowance::Credits {
            per_run_credits: 25,
            per_day_credits: 100
        }
    );
    assert_eq!(
        seo.grant.allowances["dataforseo"],
        Allowance::Usd {
            per_run_usd: 1.0,
            per_day_usd: 3.0
        }
    );
    // Without a depth the SEO analyst loses the hand-off (and saving it is refused).
    let mut shallow = Preset::SeoAnalyst.profile();
    shallow.limits.max_delegation_depth = 0;
    assert_eq!(
        shallow.validate(&catalog),
        Err(ProfileError::HandOffWithoutDelegation)
    );
}

// ---- a small catalogue standing for the seed's connectors ----

#[test]
fn a_catalogue_built_from_component_tool_lists() {
    // The GitHub component's wire names, and small stand-ins for two others.
    let catalog = Catalog::empty()
        .with_connector(
            "github",
            [
                "github_read_file",
                "github_list_path",
                "github_list_branches",
                "github_list_issues",
                "github_read_issue",
                "github_list_pull_requests",
                "github_read_pull_request",
            ],
            [
                "github_create_branch",
                "github_commit_files",
                "github_open_pull_request",
                "github_comment",
            ],
        )
        .with_connector("firecrawl", ["firecrawl_scrape"], [] as [&str; 0])
        .with_connector("acme", ["acme_read"], ["acme_write"]);
    let brand = BrandFacts::with_connectors(["github", "firecrawl", "acme"]);
    let s = surface(
        &SessionInput::new(Role::PersonChat).brand(brand.clone()),
        &catalog,
        &Switches::default(),
    )
    .unwrap();
    let connector_tools: Vec<&str> = s
        .names()
        .into_iter()
        .filter(|n| {
            !n.starts_with("mcp__memory__")
                && !n.starts_with("mcp__project__")
                && !n.starts_with("mcp__transcripts__")
                && n.starts_with("mcp__")
        })
        .collect();
    assert_eq!(
        connector_tools,
        expected(&[
            GITHUB_READS,
            GITHUB_WRITES,
            &[
                "mcp__acme__acme_read",
                "mcp__acme__acme_write",
                "mcp__firecrawl__firecrawl_scrape"
            ]
        ])
    );
    assert_eq!(gate(&s, "mcp__acme__acme_write"), Gate::AsksPerson);
    assert_eq!(
        gate(&s, "mcp__github__github_comment"),
        Gate::Refuses(Rule::SwitchedOff(Switch::GithubAllowWrites))
    );
    // A connector the read table does not list cannot be granted.
    let mut p = profile(&["Read"]);
    p.grant.connectors.push("acme".into());
    assert!(matches!(
        p.validate(&catalog),
        Err(ProfileError::ConnectorNotGrantable { .. })
    ));
    // A trimmed built-in list removes the name from every role.
    let trimmed = Catalog::seed().with_builtins(["Read", "WebSearch"]);
    let g = surface(
        &SessionInput::new(Role::GoalAgentStep),
        &trimmed,
        &Switches::default(),
    )
    .unwrap();
    assert_eq!(
        names_of(&g),
        expected(&[&["Read", "WebSearch"], PROJECT_LRW])
    );
}

// ---- operator switches ----

#[test]
fn require_write_approval_is_on_unless_false_0_or_no() {
    assert!(Switches::default().require_write_approval);
    for v in ["false", "0", "no"] {
        let s = switches(&[("REQUIRE_WRITE_APPROVAL", v)]);
        assert!(!s.require_write_approval, "{v}");
        assert!(s.notes.is_empty());
    }
    for v in ["true", "1", "yes", ""] {
        let s = switches(&[("REQUIRE_WRITE_APPROVAL", v)]);
        assert!(s.require_write_approval, "{v}");
        assert!(s.notes.is_empty(), "{v}");
    }
    for v in ["FALSE", "off", " no", "No"] {
        let s = switches(&[("REQUIRE_WRITE_APPROVAL", v)]);
        assert!(s.require_write_approval, "{v:?} keeps approvals on");
        assert_eq!(s.notes.len(), 1);
        assert_eq!(s.notes[0].switch, Switch::RequireWriteApproval);
    }
}

#[test]
fn approval_timeout_defaults_and_reports() {
    assert_eq!(Switches::default().approval_timeout_ms, 300_000);
    let zero = switches(&[("APPROVAL_TIMEOUT_MS", "0")]);
    assert_eq!(zero.approval_timeout_ms, 0);
    assert!(zero.approval_timeout().is_zero());
    assert!(zero.banner().contains("denies at once"));
    assert_eq!(
        switches(&[("APPROVAL_TIMEOUT_MS", "1500")]).approval_timeout_ms,
        1500
    );
    for v in ["5m", "-1", "+5", "1e3", " 100", "99999999999999999999999"] {
        let s = switches(&[("APPROVAL_TIMEOUT_MS", v)]);
        assert_eq!(s.approval_timeout_ms, 300_000, "{v}");
        assert_eq!(s.notes.len(), 1, "{v}");
        assert!(s.banner().contains("APPROVAL_TIMEOUT_MS="), "{v}");
    }
}

#[test]
fn true_1_or_yes_switches() {
    for sw in [
        Switch::ShopifyAllowWrites,
        Switch::GithubAllowWrites,
        Switch::RailwayAllowVariableValues,
        Switch::RailwayAllowRedeploy,
    ] {
        for v in ["true", "1", "yes"] {
            let s = switches(&[(sw.var(), v)]);
            assert!(s.is_on(sw), "{} {v}", sw.var());
            assert!(s.notes.is_empty());
        }
        for v in ["false", "0", "no", ""] {
            let s = switches(&[(sw.var(), v)]);
            assert!(!s.is_on(sw));
            assert!(s.notes.is_empty());
        }
        for v in ["TRUE", "Yes", "on", "2", "true "] {
            let s = switches(&[(sw.var(), v)]);
            assert!(!s.is_on(sw), "{} {v:?}", sw.var());
            assert_eq!(s.notes.len(), 1);
        }
        assert!(!Switches::default().is_on(sw));
    }
}

#[test]
fn exactly_true_switches() {
    for sw in [
        Switch::AgentmailAllowSends,
        Switch::SandboxAllowBrowser,
        Switch::BrowserbasePersistentLogins,
    ] {
        assert!(switches(&[(sw.var(), "true")]).is_on(sw));
        for v in ["1", "yes", "TRUE", "True", " true"] {
            let s = switches(&[(sw.var(), v)]);
            assert!(!s.is_on(sw), "{} {v:?}", sw.var());
            assert_eq!(s.notes.len(), 1);
            assert!(s.banner().contains("exactly true"));
        }
        assert!(switches(&[(sw.var(), "false")]).notes.is_empty());
    }
}

#[test]
fn sandbox_egress_is_open_in_any_case_and_a_typo_is_reported() {
    assert_eq!(Switches::default().sandbox_egress, Egress::Allowlist);
    for v in ["open", "OPEN", "Open", "oPeN"] {
        let s = switches(&[("SANDBOX_EGRESS", v)]);
        assert_eq!(s.sandbox_egress, Egress::Open, "{v}");
        assert!(s.notes.is_empty());
    }
    assert!(
        switches(&[("SANDBOX_EGRESS", "allowlist")])
            .notes
            .is_empty()
    );
    for v in ["opne", "opened", " open", "closed"] {
        let s = switches(&[("SANDBOX_EGRESS", v)]);
        assert_eq!(s.sandbox_egress, Egress::Allowlist, "{v:?}");
        assert_eq!(s.notes.len(), 1);
        assert!(s.banner().contains("typo"));
    }
}

#[test]
fn sandbox_egress_allowlist_takes_any_non_empty_value() {
    assert_eq!(
        switches(&[("SANDBOX_EGRESS_ALLOWLIST", "")]).sandbox_egress_allowlist,
        None
    );
    let s = switches(&[(
        "SANDBOX_EGRESS_ALLOWLIST",
        "pypi.org, *.GitHub.com,10.0.0.1,,169.254.169.254,8.0.0.0/8,1.2.3.0/24",
    )]);
    assert_eq!(
        s.sandbox_egress_allowlist,
        Some(vec![
            "pypi.org".to_string(),
            "*.github.com".to_string(),
            "1.2.3.0/24".to_string()
        ])
    );
    assert_eq!(s.notes.len(), 3);
    assert!(
        s.notes
            .iter()
            .all(|n| n.switch == Switch::SandboxEgressAllowlist)
    );
    let none_valid = switches(&[("SANDBOX_EGRESS_ALLOWLIST", "127.0.0.1")]);
    assert_eq!(none_valid.sandbox_egress_allowlist, Some(vec![]));
    assert!(none_valid.banner().contains("reaches no site"));
}

#[test]
fn harness_switches_are_1_or_true() {
    for sw in [
        Switch::HarnessLoopEnabled,
        Switch::HarnessHermesEnabled,
        Switch::HarnessMcpBridgeEnabled,
    ] {
        assert!(switches(&[(sw.var(), "1")]).is_on(sw));
        assert!(switches(&[(sw.var(), "true")]).is_on(sw));
        for v in ["yes", "TRUE", "on"] {
            let s = switches(&[(sw.var(), v)]);
            assert!(!s.is_on(sw));
            assert_eq!(s.notes.len(), 1);
        }
    }
    let hermes_alone = switches(&[("HARNESS_HERMES_ENABLED", "1")]);
    assert!(!hermes_alone.hermes_available());
    assert!(
        hermes_alone
            .banner()
            .contains("does not exist without HARNESS_MCP_BRIDGE_ENABLED")
    );
}

#[test]
fn webhook_secret_is_any_value_and_never_printed() {
    let s = switches(&[("AGENTMAIL_WEBHOOK_URL_SECRET", "hunter2-very-secret")]);
    assert!(s.agentmail_webhook_secret_set);
    let banner = s.banner();
    assert!(!banner.contains("hunter2"), "{banner}");
    assert!(banner.contains("AGENTMAIL_WEBHOOK_URL_SECRET"));
    assert!(banner.contains("set (inbound email route on)"));
    assert!(!format!("{s:?}").contains("hunter2"));
    let empty = switches(&[("AGENTMAIL_WEBHOOK_URL_SECRET", "")]);
    assert!(!empty.agentmail_webhook_secret_set);
    assert_eq!(empty.notes.len(), 1);
    assert!(empty.notes[0].value.is_none());
}

#[test]
fn the_banner_lists_every_switch_and_every_value_not_understood() {
    let clean = Switches::default();
    let banner = clean.banner();
    for sw in Switch::ALL {
        assert!(banner.contains(sw.var()), "{}", sw.var());
    }
    assert!(banner.contains("Every value was understood."));
    assert!(banner.contains("[default]"));

    let odd = switches(&[
        ("GITHUB_ALLOW_WRITES", "TRUE"),
        ("AGENTMAIL_ALLOW_SENDS", "yes"),
        ("SANDBOX_EGRESS", "opne"),
        ("APPROVAL_TIMEOUT_MS", "five minutes"),
        ("REQUIRE_WRITE_APPROVAL", "off"),
        ("HARNESS_LOOP_ENABLED", "enabled"),
        ("UNRELATED", "whatever"),
    ]);
    let banner = odd.banner();
    assert!(banner.contains("Values not understood:"));
    for needle in [
        "GITHUB_ALLOW_WRITES=\"TRUE\"",
        "AGENTMAIL_ALLOW_SENDS=\"yes\"",
        "SANDBOX_EGRESS=\"opne\"",
        "APPROVAL_TIMEOUT_MS=\"five minutes\"",
        "REQUIRE_WRITE_APPROVAL=\"off\"",
        "HARNESS_LOOP_ENABLED=\"enabled\"",
    ] {
        assert!(banner.contains(needle), "{needle} in\n{banner}");
    }
    assert!(!banner.contains("UNRELATED"));
    assert_eq!(odd.notes.len(), 6);
    assert!(banner.contains("[set]"));
    // Effective values: the safe direction.
    assert!(odd.require_write_approval && !odd.github_allow_writes && !odd.agentmail_allow_sends);
    assert_eq!(odd.sandbox_egress, Egress::Allowlist);
    // A later value for the same variable wins; read once from the environment never panics.
    assert!(
        switches(&[
            ("GITHUB_ALLOW_WRITES", "no"),
            ("GITHUB_ALLOW_WRITES", "yes")
        ])
        .github_allow_writes
    );
    let _ = Switches::from_env().banner();
}
