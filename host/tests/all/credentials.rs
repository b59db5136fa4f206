//! D4 credential resolution against real SQLite files: the seed's order
//! (own, then shared by the account owner, then the host environment for the
//! deployment owner's brand only), what each role is handed, Google scope
//! narrowing, secrets kept out of `Debug`, and profiles validated when saved.

use scout_host::credentials::{
    AGENTMAIL, Credential, GOOGLE, GoogleConnection, GoogleProduct, Resolver, ResolverConfig,
    Source, connection_for_server, narrow_scopes, to_http_config,
};
use scout_host::policy::{
    Allowance, Catalog, Grant, Harness, Limits, Profile, Role, Route, presets,
};
use scout_host::store::prelude::*;
use scout_host::store::{ProfileKind, SaveProfileError, SqliteStore};
use scout_host::{CredentialScheme, SecretSource};
use scout_tests::TempDb;
use std::collections::{BTreeMap, BTreeSet};

const KEY: [u8; 32] = [7; 32];
const OWNER: &str = "owner-brand";
const OTHER: &str = "other-brand";

const ADS: &str = "https://www.googleapis.com/auth/adwords";
const GSC: &str = "https://www.googleapis.com/auth/webmasters.readonly";
const GA: &str = "https://www.googleapis.com/auth/analytics.readonly";
const SHEETS: &str = "https://www.googleapis.com/auth/drive.file";

fn temp_db(name: &str) -> TempDb {
    TempDb::new(&format!("credentials-{name}"))
}

fn config() -> ResolverConfig {
    ResolverConfig {
        deployment_owner_brand: Some(OWNER.into()),
        host_env: BTreeMap::from([
            ("github".to_string(), "GITHUB_TOKEN".to_string()),
            (GOOGLE.to_string(), "GOOGLE_TOKEN".to_string()),
        ]),
        host_env_google_scopes: BTreeSet::from([ADS.to_string(), GSC.to_string()]),
        public: BTreeSet::new(),
        broker: false,
    }
}

/// An injected environment: the variable is set for everybody to see.
fn env(name: &str) -> Option<String> {
    match name {
        "GITHUB_TOKEN" => Some("env-github-token".into()),
        "GOOGLE_TOKEN" => Some("env-google-token".into()),
        _ => None,
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn secret(c: &Option<Credential>) -> Option<(&str, Source)> {
    c.as_ref()
        .map(|c| (c.secret().expose(), c.source().clone()))
}

fn shared(owner: &str) -> Source {
    Source::SharedByOwner {
        owner_brand: owner.into(),
    }
}

#[test]
fn own_beats_shared_beats_environment() {
    let _db = temp_db("order");
    let store = SqliteStore::open(&_db).unwrap();
    let (catalog, config) = (Catalog::seed(), config());
    let r = Resolver::new(&store, &catalog, &config, KEY, env);

    // Nothing stored: the deployment owner's brand falls back to the environment.
    assert_eq!(
        secret(&r.resolve(OWNER, "github").unwrap()),
        Some(("env-github-token", Source::HostEnvironment))
    );

    // A connection shared with the owner's brand beats the environment.
    scout_host::store::block(store.put_connection("account-owner", "github", "shared-token", &KEY))
        .unwrap();
    scout_host::store::block(store.share_connection("account-owner", "github", OWNER)).unwrap();
    assert_eq!(
        secret(&r.resolve(OWNER, "github").unwrap()),
        Some(("shared-token", shared("account-owner")))
    );

    // Its own connection beats both.
    scout_host::store::block(store.put_connection(OWNER, "github", "own-token", &KEY)).unwrap();
    assert_eq!(
        secret(&r.resolve(OWNER, "github").unwrap()),
        Some(("own-token", Source::Own))
    );

    // Re-resolution is fresh each time: disabling the own connection falls back in order.
    scout_host::store::block(store.disable_connection(OWNER, "github")).unwrap();
    assert_eq!(
        secret(&r.resolve(OWNER, "github").unwrap()),
        Some(("shared-token", shared("account-owner")))
    );
    scout_host::store::block(store.unshare_connection("account-owner", "github", OWNER)).unwrap();
    assert_eq!(
        secret(&r.resolve(OWNER, "github").unwrap()),
        Some(("env-github-token", Source::HostEnvironment))
    );
}

/// `credential = "none"`: every brand resolves the connection, to one that
/// carries no secret, without anything stored.
#[test]
fn a_public_connection_resolves_for_every_brand_with_no_secret() {
    let db = temp_db("public");
    let store = SqliteStore::open(&db).unwrap();
    let catalog = Catalog::seed();
    let mut config = config();
    config.public.insert("firecrawl".to_string());
    let r = Resolver::new(&store, &catalog, &config, KEY, no_env);
    for brand in ["acme", OWNER] {
        let c = r
            .resolve_server(brand, "firecrawl")
            .unwrap()
            .expect("resolves");
        assert!(c.is_none_needed() && c.secret().expose().is_empty());
        assert_eq!(c.source(), &Source::NoneNeeded);
        assert!(r.connected(brand).unwrap().contains("firecrawl"));
    }
    assert_eq!(r.resolve_server("acme", "github").unwrap(), None);
}

#[test]
fn the_resolution_cache_answers_until_a_change_invalidates_it() {
    let _db = temp_db("cache");
    let store = SqliteStore::open(&_db).unwrap();
    let (catalog, config) = (Catalog::seed(), config());
    let built = std::cell::Cell::new(0);
    let resolver = || {
        built.set(built.get() + 1);
        Resolver::new(&store, &catalog, &config, KEY, env)
    };
    let cache = scout_host::credentials::ResolutionCache::default();
    scout_host::store::block(store.put_connection(OTHER, "github", "first-token", &KEY)).unwrap();
    let first = cache.resolve_server(resolver, OTHER, "github").unwrap();
    assert_eq!(secret(&first), Some(("first-token", Source::Own)));
    // Answered from the cache: no resolver is built, nothing is decrypted.
    for _ in 0..3 {
        assert_eq!(
            cache.resolve_server(resolver, OTHER, "github").unwrap(),
            first
        );
    }
    assert_eq!(built.get(), 1);
    // A host that changes a connection invalidates; the next call sees it.
    scout_host::store::block(store.disable_connection(OTHER, "github")).unwrap();
    cache.invalidate();
    assert!(
        cache
            .resolve_server(resolver, OTHER, "github")
            .unwrap()
            .is_none()
    );
    assert_eq!(built.get(), 2);
    // An absent credential is cached as absent too, until the next change.
    assert!(
        cache
            .resolve_server(resolver, OTHER, "github")
            .unwrap()
            .is_none()
    );
    assert_eq!(built.get(), 2);
    scout_host::store::block(store.put_connection(OTHER, "github", "second-token", &KEY)).unwrap();
    cache.invalidate();
    assert_eq!(
        secret(&cache.resolve_server(resolver, OTHER, "github").unwrap()),
        Some(("second-token", Source::Own))
    );
}

#[test]
fn only_the_deployment_owners_brand_inherits_the_environment() {
    let _db = temp_db("env");
    let store = SqliteStore::open(&_db).unwrap();
    let (catalog, config) = (Catalog::seed(), config());
    let r = Resolver::new(&store, &catalog, &config, KEY, env);
    // The variable is set, but another brand never inherits it.
    assert!(r.resolve(OTHER, "github").unwrap().is_none());
    assert!(r.resolve(OTHER, GOOGLE).unwrap().is_none());
    assert!(r.connected(OTHER).unwrap().is_empty());
    let facts = r.brand_facts(OTHER).unwrap();
    assert!(facts.connected.is_empty() && !facts.is_deployment_owner);

    // The owner's brand resolves GitHub and the Google products its env token's scopes cover.
    let facts = r.brand_facts(OWNER).unwrap();
    assert!(facts.is_deployment_owner);
    assert_eq!(
        facts.connected,
        BTreeSet::from(["github".into(), "googleads".into(), "searchconsole".into()])
    );

    // A share from the deployment owner lends only a stored connection, never the environment.
    scout_host::store::block(store.share_connection(OWNER, "github", OTHER)).unwrap();
    assert!(r.resolve(OTHER, "github").unwrap().is_none());

    // No configured deployment owner: nobody inherits the environment.
    let nobody = ResolverConfig {
        deployment_owner_brand: None,
        ..config.clone()
    };
    let r = Resolver::new(&store, &catalog, &nobody, KEY, env);
    assert!(r.resolve(OWNER, "github").unwrap().is_none());
}

#[test]
fn disabled_own_connection_falls_through_to_shared_and_unsharing_stops_it() {
    let db = temp_db("share");
    let path = db.path().to_path_buf();
    let store = SqliteStore::open(&path).unwrap();
    let (catalog, config) = (Catalog::seed(), config());
    let r = Resolver::new(&store, &catalog, &config, KEY, no_env);

    scout_host::store::block(store.put_connection("account-owner", "firecrawl", "fc-shared", &KEY))
        .unwrap();
    scout_host::store::block(store.put_connection(OTHER, "firecrawl", "fc-own", &KEY)).unwrap();
    scout_host::store::block(store.share_connection("account-owner", "firecrawl", OTHER)).unwrap();
    scout_host::store::block(store.share_connection("account-owner", "firecrawl", OTHER)).unwrap(); // idempotent
    assert_eq!(
        scout_host::store::block(store.shared_with(OTHER, "firecrawl")).unwrap(),
        ["account-owner"]
    );
    assert_eq!(
        secret(&r.resolve(OTHER, "firecrawl").unwrap()),
        Some(("fc-own", Source::Own))
    );

    scout_host::store::block(store.disable_connection(OTHER, "firecrawl")).unwrap();
    assert_eq!(
        secret(&r.resolve(OTHER, "firecrawl").unwrap()),
        Some(("fc-shared", shared("account-owner")))
    );
    assert!(r.connected(OTHER).unwrap().contains("firecrawl"));

    // The owner disabling its connection ends the share's effect too.
    scout_host::store::block(store.disable_connection("account-owner", "firecrawl")).unwrap();
    assert!(r.resolve(OTHER, "firecrawl").unwrap().is_none());
    scout_host::store::block(store.put_connection(
        "account-owner",
        "firecrawl",
        "fc-shared-2",
        &KEY,
    ))
    .unwrap();
    assert_eq!(
        secret(&r.resolve(OTHER, "firecrawl").unwrap()),
        Some(("fc-shared-2", shared("account-owner")))
    );

    // Unshared: the very next resolution no longer finds it, also from another handle on the file.
    assert!(
        scout_host::store::block(store.unshare_connection("account-owner", "firecrawl", OTHER))
            .unwrap()
    );
    assert!(
        !scout_host::store::block(store.unshare_connection("account-owner", "firecrawl", OTHER))
            .unwrap()
    );
    let reopened = SqliteStore::open(&path).unwrap();
    let r2 = Resolver::new(&reopened, &catalog, &config, KEY, no_env);
    assert!(r.resolve(OTHER, "firecrawl").unwrap().is_none());
    assert!(r2.resolve(OTHER, "firecrawl").unwrap().is_none());
    assert!(!r.connected(OTHER).unwrap().contains("firecrawl"));
    // The account owner's own connection is untouched.
    assert_eq!(
        secret(&r.resolve("account-owner", "firecrawl").unwrap()),
        Some(("fc-shared-2", Source::Own))
    );
}

/// A brand with GitHub, AgentMail, Firecrawl and a Google connection holding
/// all four scopes; the database's files live as long as the `TempDb`.
fn connected_brand(name: &str) -> (SqliteStore, Catalog, ResolverConfig, TempDb) {
    let db = temp_db(name);
    let store = SqliteStore::open(&db).unwrap();
    for (connector, value) in [("github", "gh"), (AGENTMAIL, "am"), ("firecrawl", "fc")] {
        scout_host::store::block(store.put_connection(OTHER, connector, value, &KEY)).unwrap();
    }
    let google = GoogleConnection::new("google-refresh", [ADS, GSC, GA, SHEETS]);
    scout_host::store::block(store.put_connection(OTHER, GOOGLE, &google.encode(), &KEY)).unwrap();
    (store, Catalog::seed(), config(), db)
}

fn names(set: &scout_host::credentials::CredentialSet) -> Vec<&str> {
    set.servers().collect()
}

#[test]
fn what_each_role_is_handed() {
    let (store, catalog, config, _db) = connected_brand("roles");
    let r = Resolver::new(&store, &catalog, &config, KEY, env);
    let grant = Grant {
        connectors: vec!["firecrawl".into(), "searchconsole".into()],
        allowances: BTreeMap::from([(
            "firecrawl".to_string(),
            Allowance::Credits {
                per_run_credits: 10,
                per_day_credits: 100,
            },
        )]),
        skills: vec![],
        ..Default::default()
    };

    // Person chat: every connector the brand resolves.
    let chat = r.credential_set_for(Role::PersonChat, None, OTHER).unwrap();
    assert_eq!(
        names(&chat),
        [
            "agentmail",
            "analytics",
            "firecrawl",
            "github",
            "googleads",
            "searchconsole",
            "sheets"
        ]
    );
    assert_eq!(chat.connected(), r.connected(OTHER).unwrap());

    // A plain coworker, a read-only route, the reviewer: empty, whatever the grant.
    for role in [
        Role::CoworkerRun {
            route: Route::Standard,
        },
        Role::CoworkerRun {
            route: Route::ReadOnly,
        },
        Role::SpecialistRun {
            route: Route::ReadOnly,
        },
        Role::ReadOnlyRoute {
            harness: Harness::Default,
        },
        Role::ReadOnlyRoute {
            harness: Harness::Loop,
        },
        Role::GoalReviewer,
    ] {
        let set = r.credential_set_for(role, Some(&grant), OTHER).unwrap();
        assert!(set.is_empty(), "{role:?} was handed {set:?}");
    }
    // Also for the deployment owner's brand, whose environment resolves.
    assert!(
        r.credential_set_for(
            Role::ReadOnlyRoute {
                harness: Harness::Default
            },
            None,
            OWNER
        )
        .unwrap()
        .is_empty()
    );

    // Inbound email turn: AgentMail's and no others.
    let inbound = r
        .credential_set_for(Role::InboundEmailTurn, Some(&grant), OTHER)
        .unwrap();
    assert_eq!(names(&inbound), [AGENTMAIL]);
    assert_eq!(inbound.get(AGENTMAIL).unwrap().secret().expose(), "am");
    assert!(
        r.credential_set_for(Role::InboundEmailTurn, None, OWNER)
            .unwrap()
            .is_empty()
    );

    // Specialist and goal agent: only the granted connectors.
    for role in [
        Role::SpecialistRun {
            route: Route::Standard,
        },
        Role::GoalAgentStep,
    ] {
        let set = r.credential_set_for(role, Some(&grant), OTHER).unwrap();
        assert_eq!(names(&set), ["firecrawl", "searchconsole"], "{role:?}");
        assert!(r.credential_set_for(role, None, OTHER).unwrap().is_empty());
    }
    // A granted connector the brand cannot resolve is simply absent.
    let github_grant = Grant {
        connectors: vec!["github".into(), "railway".into()],
        ..Grant::default()
    };
    let set = r
        .credential_set_for(
            Role::SpecialistRun {
                route: Route::Standard,
            },
            Some(&github_grant),
            OTHER,
        )
        .unwrap();
    assert_eq!(names(&set), ["github"]);
}

#[test]
fn google_products_in_a_grant_narrow_the_google_credential() {
    let (store, catalog, config, _db) = connected_brand("google");
    let r = Resolver::new(&store, &catalog, &config, KEY, no_env);
    let stored = r.resolve(OTHER, GOOGLE).unwrap().unwrap();
    assert_eq!(stored.scopes().unwrap().len(), 4);

    let grant = Grant {
        connectors: vec!["googleads".into(), "analytics".into()],
        ..Grant::default()
    };
    let set = r
        .credential_set_for(
            Role::SpecialistRun {
                route: Route::Standard,
            },
            Some(&grant),
            OTHER,
        )
        .unwrap();
    assert_eq!(names(&set), ["analytics", "googleads"]);
    let google = set.google().unwrap();
    assert_eq!(
        google.scopes().unwrap(),
        &BTreeSet::from([ADS.to_string(), GA.to_string()])
    );
    assert_eq!(set.get("analytics"), set.get("googleads"));
    assert_eq!(google.secret().expose(), "google-refresh");

    // A grant without a Google product: no Google credential at all.
    let no_google = Grant {
        connectors: vec!["github".into()],
        ..Grant::default()
    };
    let set = r
        .credential_set_for(Role::GoalAgentStep, Some(&no_google), OTHER)
        .unwrap();
    assert!(set.google().is_none());
    assert_eq!(names(&set), ["github"]);

    // Narrowing never adds a scope the stored credential lacks.
    scout_host::store::block(store.put_connection(
        OTHER,
        GOOGLE,
        &GoogleConnection::new("g2", [GSC]).encode(),
        &KEY,
    ))
    .unwrap();
    let grant = Grant {
        connectors: vec!["googleads".into(), "searchconsole".into(), "sheets".into()],
        ..Grant::default()
    };
    let set = r
        .credential_set_for(Role::GoalAgentStep, Some(&grant), OTHER)
        .unwrap();
    assert_eq!(names(&set), ["searchconsole"]);
    assert_eq!(
        set.google().unwrap().scopes().unwrap(),
        &BTreeSet::from([GSC.to_string()])
    );
    assert_eq!(
        r.connected(OTHER).unwrap(),
        BTreeSet::from(["agentmail", "firecrawl", "github", "searchconsole"].map(String::from))
    );
    let only_ads = Grant {
        connectors: vec!["googleads".into()],
        ..Grant::default()
    };
    assert!(
        r.credential_set_for(Role::GoalAgentStep, Some(&only_ads), OTHER)
            .unwrap()
            .google()
            .is_none()
    );
    assert!(r.resolve_server(OTHER, "googleads").unwrap().is_none());
    assert!(
        narrow_scopes(
            &BTreeSet::from([GSC.to_string()]),
            [GoogleProduct::Ads, GoogleProduct::Sheets]
        )
        .is_empty()
    );

    // The products, their servers and the shared connection key.
    for (product, server, scope) in [
        (GoogleProduct::Ads, "googleads", ADS),
        (GoogleProduct::SearchConsole, "searchconsole", GSC),
        (GoogleProduct::Analytics, "analytics", GA),
        (GoogleProduct::Sheets, "sheets", SHEETS),
    ] {
        assert_eq!((product.server(), product.scope()), (server, scope));
        assert_eq!(GoogleProduct::from_server(server), Some(product));
        assert_eq!(connection_for_server(server), GOOGLE);
        assert!(
            catalog.connector(server).is_some(),
            "{server} is in the catalogue"
        );
    }
    assert_eq!(connection_for_server("github"), "github");
}

#[test]
fn a_secret_never_appears_in_debug_output() {
    let (store, catalog, config, _db) = connected_brand("debug");
    scout_host::store::block(store.put_connection(OTHER, "github", "ghp_SUPERSECRET123", &KEY))
        .unwrap();
    scout_host::store::block(store.put_connection(
        OTHER,
        GOOGLE,
        &GoogleConnection::new("ya29.GOOGLESECRET", [ADS, GA]).encode(),
        &KEY,
    ))
    .unwrap();
    let r = Resolver::new(&store, &catalog, &config, KEY, no_env);
    let github = r.resolve(OTHER, "github").unwrap().unwrap();
    let google = r.resolve(OTHER, GOOGLE).unwrap().unwrap();
    let set = r.credential_set_for(Role::PersonChat, None, OTHER).unwrap();
    let http = to_http_config(&github, "https://api.github.com", CredentialScheme::Bearer);
    let printed = [
        format!("{github:?}"),
        format!("{github:#?}"),
        format!("{google:?}"),
        format!("{set:?}"),
        format!("{set:#?}"),
        format!("{http:?}"),
        format!("{:?}", GoogleConnection::new("ya29.GOOGLESECRET", [ADS])),
        format!("{:?}", github.secret()),
    ];
    for text in &printed {
        assert!(
            !text.contains("SUPERSECRET") && !text.contains("GOOGLESECRET"),
            "leaked: {text}"
        );
    }
    assert!(printed[0].contains("[REDACTED]") && printed[0].contains("Own"));
    assert!(printed[2].contains(ADS));

    // The HTTP handle gets the value itself, to inject.
    let cred = http.credential.unwrap();
    assert_eq!(cred.scheme, CredentialScheme::Bearer);
    assert_eq!(
        cred.secret,
        SecretSource::Value("ghp_SUPERSECRET123".into())
    );
    assert_eq!(http.origin, "https://api.github.com");
    let g = to_http_config(
        &google,
        "https://analyticsdata.googleapis.com",
        CredentialScheme::Bearer,
    );
    assert_eq!(
        g.credential.unwrap().secret,
        SecretSource::Value("ya29.GOOGLESECRET".into())
    );
}

fn coworker(name: &str) -> Profile {
    Profile {
        name: name.into(),
        tools: vec!["Read".into(), "Grep".into()],
        grant: Grant::default(),
        limits: Limits::preset(),
    }
}

#[test]
fn profiles_are_validated_when_saved() {
    let db = temp_db("profiles");
    let path = db.path().to_path_buf();
    let store = SqliteStore::open(&path).unwrap();
    let catalog = Catalog::seed();

    let mut refused = Vec::new();
    // Rule 1: a connector tool whose connector the grant does not name.
    let mut p = coworker("rule1");
    p.tools
        .push("mcp__searchconsole__searchconsole_queries".into());
    refused.push((p, Some(1)));
    // Rule 2: a write tool.
    let mut p = coworker("rule2");
    p.tools.push("mcp__github__github_commit_files".into());
    refused.push((p, Some(2)));
    // Rule 3: a connector that bills without an allowance.
    let mut p = coworker("rule3");
    p.grant.connectors.push("firecrawl".into());
    refused.push((p, Some(3)));
    // Rule 4: a skill that is not bundled.
    let mut p = coworker("rule4");
    p.grant.skills.push("no-such-skill".into());
    refused.push((p, Some(4)));
    // Rule 5: hand-off at delegation depth 0.
    let mut p = coworker("rule5");
    p.tools.push("mcp__seo__seo_hand_off_brief".into());
    refused.push((p, Some(5)));
    // Limits.
    let mut p = coworker("limits");
    p.limits.max_turns = 0;
    refused.push((p, None));

    for (profile, rule) in &refused {
        let err = scout_host::store::block(store.save_profile(
            "acme",
            profile,
            ProfileKind::Coworker,
            &catalog,
        ))
        .unwrap_err();
        let SaveProfileError::Invalid(e) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(e.rule(), *rule, "{}: {e}", profile.name);
        // The message is the rule's own.
        assert_eq!(err.to_string(), e.to_string());
        if let Some(n) = rule {
            assert!(err.to_string().starts_with(&format!("rule {n} ")), "{err}");
        }
        assert!(
            scout_host::store::block(store.load_profile("acme", &profile.name))
                .unwrap()
                .is_none()
        );
    }
    assert!(
        scout_host::store::block(store.list_profiles("acme"))
            .unwrap()
            .is_empty()
    );

    // A refused save leaves the earlier version in place.
    let good = coworker("writer");
    scout_host::store::block(store.save_profile("acme", &good, ProfileKind::Coworker, &catalog))
        .unwrap();
    let mut bad = good.clone();
    bad.limits.run_budget_usd = 0.0;
    assert!(
        scout_host::store::block(store.save_profile("acme", &bad, ProfileKind::Coworker, &catalog))
            .is_err()
    );
    assert_eq!(
        scout_host::store::block(store.load_profile("acme", "writer"))
            .unwrap()
            .unwrap()
            .profile,
        good
    );

    // Accepted profiles round-trip, per brand, listed by name, across a reopen.
    let mut specialist = coworker("analyst");
    specialist.grant = Grant {
        connectors: vec!["firecrawl".into()],
        allowances: BTreeMap::from([(
            "firecrawl".to_string(),
            Allowance::Credits {
                per_run_credits: 25,
                per_day_credits: 100,
            },
        )]),
        skills: vec![],
        ..Default::default()
    };
    scout_host::store::block(store.save_profile(
        "acme",
        &specialist,
        ProfileKind::Coworker,
        &catalog,
    ))
    .unwrap();
    let goal = presets::goal_agent(Grant::default());
    scout_host::store::block(store.save_profile("acme", &goal, ProfileKind::GoalAgent, &catalog))
        .unwrap();
    let reviewer = presets::goal_reviewer();
    scout_host::store::block(store.save_profile(
        "acme",
        &reviewer,
        ProfileKind::Reviewer,
        &catalog,
    ))
    .unwrap();
    // The goal agent's profile is refused under the reviewer's rules and vice versa.
    assert!(matches!(
        scout_host::store::block(store.save_profile(
            "globex",
            &goal,
            ProfileKind::Reviewer,
            &catalog
        )),
        Err(SaveProfileError::Invalid(_))
    ));
    assert!(matches!(
        scout_host::store::block(store.save_profile(
            "globex",
            &reviewer,
            ProfileKind::GoalAgent,
            &catalog
        )),
        Err(SaveProfileError::Invalid(_))
    ));
    assert!(
        scout_host::store::block(store.list_profiles("globex"))
            .unwrap()
            .is_empty()
    );

    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    let listed = scout_host::store::block(store.list_profiles("acme")).unwrap();
    let mut expected = vec![
        (ProfileKind::Coworker, specialist.clone()),
        (ProfileKind::Coworker, good.clone()),
        (ProfileKind::GoalAgent, goal.clone()),
        (ProfileKind::Reviewer, reviewer.clone()),
    ];
    expected.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    assert_eq!(
        listed
            .into_iter()
            .map(|s| (s.kind, s.profile))
            .collect::<Vec<_>>(),
        expected
    );
    let loaded = scout_host::store::block(store.load_profile("acme", "analyst"))
        .unwrap()
        .unwrap();
    assert_eq!(
        (loaded.kind, loaded.profile),
        (ProfileKind::Coworker, specialist)
    );
    assert!(scout_host::store::block(store.delete_profile("acme", "analyst")).unwrap());
    assert!(!scout_host::store::block(store.delete_profile("acme", "analyst")).unwrap());
    assert!(
        scout_host::store::block(store.load_profile("acme", "analyst"))
            .unwrap()
            .is_none()
    );
}
