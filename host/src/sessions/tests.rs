//! The sessions service without a server: the rules an opening request is
//! checked against, and sessions held, swept at expiry, ended and refreshed
//! over a SQLite store in a temporary directory.

use super::*;
use crate::policy::{self, BrandFacts, Catalog, Role, SessionInput, Switches};
use crate::store::SqliteStore;
use std::time::Instant;

const HOUR: Duration = Duration::from_secs(3600);
const NOW_MS: i64 = 1_800_000_000_000;

fn request(role: &str) -> OpenSession {
    OpenSession {
        brand: "acme".into(),
        role: role.into(),
        ..Default::default()
    }
}

fn refusal(result: Result<impl std::fmt::Debug, HostError>) -> String {
    match result {
        Err(e) => format!("{e:?}"),
        Ok(fine) => panic!("expected a refusal, got {fine:?}"),
    }
}

#[test]
fn an_opening_request_names_a_brand_and_a_known_role() {
    let asked = request("person-chat");
    let (brand, role) = asked.brand_and_role().unwrap();
    assert_eq!((brand, role), ("acme", Role::PersonChat));
    let mut blank = request("person-chat");
    blank.brand = "  ".into();
    assert!(refusal(blank.brand_and_role()).contains("`brand` must be 1 to 200 characters"));
    assert!(refusal(request("janitor").brand_and_role()).contains("unknown role `janitor`"));
    // Components are loaded by the admin API before the session opens.
    let mut wanted = request("person-chat");
    wanted.components = Some(vec!["oci://r/x@sha256:00".into()]);
    assert!(refusal(wanted.components_loaded()).starts_with("NotSelectable"));
    wanted.loaded.insert("x".into());
    assert!(wanted.components_loaded().is_ok());
}

#[test]
fn limits_stay_inside_the_sessions_lifetime_and_its_grant() {
    let at = |ms: i64| crate::dates::rfc3339_ms(ms);
    let mut asked = request("goal-agent");
    assert!(asked.limits(None, HOUR, NOW_MS).unwrap().is_none());
    asked.expires_at = Some(at(NOW_MS + 60_000));
    asked.max_calls = Some(5);
    let limits = asked.limits(None, HOUR, NOW_MS).unwrap();
    assert_eq!(limits.expires_at_ms, Some(NOW_MS + 60_000));
    assert_eq!(limits.max_calls, Some(5));
    asked.expires_at = Some(at(NOW_MS - 1));
    assert!(refusal(asked.limits(None, HOUR, NOW_MS)).contains("has already passed"));
    asked.expires_at = Some(at(NOW_MS + 2 * 3_600_000));
    assert!(refusal(asked.limits(None, HOUR, NOW_MS)).contains("after the session's own end"));
    asked.expires_at = Some("tomorrow".into());
    assert!(refusal(asked.limits(None, HOUR, NOW_MS)).contains("RFC 3339"));
    asked.expires_at = None;
    asked.max_calls = Some(0);
    assert!(refusal(asked.limits(None, HOUR, NOW_MS)).contains("`max_calls` is 1 or more"));
    asked.max_calls = None;
    asked.max_effects = Some(4);
    let granted = policy::presets::goal_agent(policy::Grant {
        max_effects: Some(3),
        ..Default::default()
    });
    assert!(
        refusal(asked.limits(Some(&granted), HOUR, NOW_MS)).contains("more than the grant's 3")
    );
}

#[test]
fn a_selection_only_names_what_the_session_could_be_given() {
    let input = SessionInput::new(Role::PersonChat)
        .brand(BrandFacts::with_connectors(["github", "agentmail"]));
    let could = policy::surface(&input, &Catalog::seed(), &Switches::default()).unwrap();
    let read = "mcp__github__github_read_file";
    let mut asked = request("person-chat");
    asked.tools = Some(vec![read.into()]);
    asked.connectors = Some(vec!["github".into()]);
    let selection = asked.selection(&could).unwrap();
    assert!(selection.keeps(read));
    asked.connectors = Some(vec![]);
    assert!(refusal(asked.selection(&could)).contains("lists 1 to 1000 names"));
    asked.connectors = Some(vec!["nowhere".into()]);
    assert!(refusal(asked.selection(&could)).contains("names `nowhere`"));
    asked.connectors = None;
    asked.tools = Some(vec!["mcp__agentmail__agentmail_send_message".into()]);
    assert!(refusal(asked.selection(&could)).contains("could not be given"));
}

struct Fixture {
    _dir: tempfile::TempDir,
    sessions: Sessions<()>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("t.db")).unwrap());
    let metrics = Arc::new(Metrics::new(4, None));
    Fixture {
        _dir: dir,
        sessions: Sessions::new(store, HOUR, metrics),
    }
}

/// Opens a session living `ttl`, reached through one endpoint (`()`).
fn open(sessions: &Sessions<()>, ttl: Duration) -> Arc<Live<()>> {
    let (session, token) = sessions
        .new_session("acme", SessionInput::new(Role::PersonChat))
        .unwrap();
    let live = reached_through(
        Live::new(Opened {
            session,
            role_name: "person-chat".into(),
            profile: None,
            token,
            connectors: vec!["github".into()],
            left_out: Default::default(),
            allowlist: vec![],
            ttl,
        }),
        ["github".to_string()],
        |_, _, _| (),
    );
    let shown = view_of(&live, "http://host", None);
    sessions.hold_opened(live.clone(), &shown, vec![]).unwrap();
    live
}

#[test]
fn a_session_opened_is_held_shown_and_recorded() {
    let f = fixture();
    let live = open(&f.sessions, HOUR);
    let id = live.session.id.clone();
    assert!(id.starts_with("s-"));
    assert!(f.sessions.of_this_lease(&live));
    assert!(matches!(
        f.sessions.find(&id, Instant::now()),
        Found::Open(_)
    ));
    let views = f.sessions.views("http://host");
    assert_eq!(views.len(), 1);
    assert_eq!(
        views[0].mcp["github"],
        format!("http://host/mcp/{id}/github")
    );
    assert!(views[0].token.is_none());
    // A store that does not share sessions keeps nothing for the fleet.
    assert!(!f.sessions.shared_by_fleet());
    assert!(matches!(f.sessions.refresh(&id), Refreshed::NotKept));
    assert!(matches!(f.sessions.refresh("s-none"), Refreshed::NotHeld));
}

#[test]
fn the_sweep_finds_only_sessions_past_their_time() {
    let f = fixture();
    let young = open(&f.sessions, HOUR);
    let old = open(&f.sessions, Duration::ZERO);
    let now = Instant::now();
    assert_eq!(f.sessions.expired(now), vec![old.session.id.clone()]);
    assert!(matches!(
        f.sessions.find(&old.session.id, now),
        Found::Expired
    ));
    assert!(matches!(
        f.sessions.find(&young.session.id, now),
        Found::Open(_)
    ));
    // Ended: let go, recorded closed, its streams closed (no runtime here:
    // at once).
    let ended = f.sessions.remove(&old.session.id).unwrap();
    f.sessions.close(&ended);
    assert!(ended.cancel.is_cancelled());
    assert!(matches!(
        f.sessions.find(&old.session.id, now),
        Found::Unknown
    ));
    assert!(f.sessions.expired(now).is_empty());
    assert_eq!(f.sessions.all().len(), 1);
}

#[test]
fn a_sessions_capability_requests_are_its_own() {
    let f = fixture();
    let asked = serde_json::json!({"goal": "ship"});
    let id = f
        .sessions
        .park_capability_request("s-1", "acme", &asked)
        .unwrap();
    let mine = f.sessions.capability_requests("s-1", true).unwrap();
    assert_eq!(mine.len(), 1);
    assert_eq!((mine[0].id, &mine[0].request), (id, &asked));
    assert!(
        f.sessions
            .capability_requests("s-2", false)
            .unwrap()
            .is_empty()
    );
}
