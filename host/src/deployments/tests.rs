//! The deployments without a server: a real SQLite store, the seed's
//! catalogue behind a boundary, and the `capabilities` test guest loaded
//! and admitted as a connector is.

use super::*;
use crate::policy::{Catalog, Switches};
use crate::runtime::RuntimeConfig;
use crate::store::SqliteStore;

const GUEST: &str = "capabilities";

struct Fixture {
    deployments: Deployments,
    runtime: Runtime,
    store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
}

/// Deployments serving nothing yet, with the test guest's settings in the
/// file when `in_file`.
fn fixture(in_file: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("t.db")).unwrap());
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let boundary = Arc::new(Boundary::new(
        store.clone(),
        Catalog::seed(),
        Switches::default(),
    ));
    let mut file = FileSettings::default();
    if in_file {
        file.connectors.insert(GUEST.to_string(), guest_settings());
    }
    let deployments = Deployments::new(DeploymentsConfig {
        store: store.clone(),
        boundary,
        runtime: runtime.clone(),
        components: BTreeMap::new(),
        remote: Default::default(),
        roster: Arc::new(RwLock::new(Arc::new(Roster::default()))),
        resolutions: Arc::new(ResolutionCache::default()),
        file,
    });
    Fixture {
        deployments,
        runtime,
        store,
        _dir: dir,
    }
}

/// The test guest's settings, as a configuration file's table gives them.
fn guest_settings() -> ConnectorConfig {
    serde_json::from_value(serde_json::json!({
        "component": scout_tests::components::CAPABILITIES,
        "origin": "http://127.0.0.1:9",
        "allow_private_network": true,
        "credential": "none",
    }))
    .unwrap()
}

impl Fixture {
    /// The test guest loaded and admitted, as a runtime change loads it.
    fn loaded(&self) -> Loaded {
        let settings = guest_settings();
        let mut deployment = Deployment {
            catalog: Catalog::seed(),
            ..Default::default()
        };
        deployment
            .add(
                &self.runtime,
                GUEST,
                &settings,
                &process_env,
                self.store.as_ref(),
            )
            .unwrap();
        Loaded {
            settings,
            deployment,
            digest: "sha256:guest".to_string(),
        }
    }
}

fn names(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn a_session_component_stays_while_pinned_or_held_and_goes_with_the_last_holder() {
    let fx = fixture(false);
    let deployments = &fx.deployments;
    deployments.serve_for_sessions(GUEST, fx.loaded());
    assert!(deployments.is_session_only(GUEST));
    assert!(deployments.serves(GUEST));
    assert!(deployments.settings(GUEST).is_some());

    // Pinned for a session being opened: kept, though no session holds it.
    let held = Arc::new(Mutex::new(BTreeSet::new()));
    let reading = held.clone();
    let mut pinned = Pinned::new(deployments, move || reading.lock().clone());
    pinned.pin(GUEST);
    deployments.drop_unused_session_components(&BTreeSet::new);
    assert!(deployments.serves(GUEST), "a pinned component is kept");

    // The session opened and holds it: the pin goes, the component stays.
    *held.lock() = names(&[GUEST]);
    drop(pinned);
    assert!(deployments.serves(GUEST), "a held component is kept");
    deployments.drop_unused_session_components(&|| names(&[GUEST]));
    assert!(deployments.is_session_only(GUEST));

    // Its last session ended: it leaves this host, settings and all.
    deployments.drop_unused_session_components(&BTreeSet::new);
    assert!(!deployments.serves(GUEST));
    assert!(!deployments.is_session_only(GUEST));
    assert!(deployments.settings(GUEST).is_none());
    assert!(deployments.boundary.is_retired(GUEST));
}

#[test]
fn a_pin_dropped_with_no_session_holding_the_component_drops_it() {
    let fx = fixture(false);
    let deployments = &fx.deployments;
    deployments.serve_for_sessions(GUEST, fx.loaded());
    let mut pinned = Pinned::new(deployments, BTreeSet::new);
    pinned.pin(GUEST);
    // Pinned twice (two sessions being opened): one pin going keeps it.
    let mut second = Pinned::new(deployments, BTreeSet::new);
    second.pin(GUEST);
    drop(pinned);
    assert!(deployments.serves(GUEST), "still pinned by the other");
    drop(second);
    assert!(!deployments.serves(GUEST));
    assert!(!deployments.is_session_only(GUEST));
}

#[test]
fn connector_lines_say_what_is_served_and_to_whom() {
    let fx = fixture(true);
    let deployments = &fx.deployments;
    assert!(
        deployments.connector_lines().is_empty(),
        "a connector with no component served has no line"
    );
    let loaded = fx.loaded();
    let component = loaded.deployment.components[GUEST].clone();
    deployments
        .components
        .write()
        .insert(GUEST.to_string(), component.clone());
    {
        let mut roster = deployments.roster.write();
        *roster = Arc::new(roster.with_connector(GUEST, guest_settings(), &loaded.deployment));
    }
    let tools = component.tools();
    let writes = tools
        .iter()
        .filter(|t| t.effect == scout_manifest::Effect::Write)
        .count();
    assert_eq!(
        deployments.connector_lines(),
        vec![format!(
            "connector {GUEST}: {} tools ({} read, {writes} write) from {}, origin http://127.0.0.1:9; a public API (credential = \"none\"): served to every brand",
            tools.len(),
            tools.len() - writes,
            scout_tests::components::CAPABILITIES,
        )]
    );

    {
        let mut roster = deployments.roster.write();
        let mut next = (**roster).clone();
        next.not_offered
            .insert(GUEST.to_string(), "GUEST_TOKEN".to_string());
        *roster = Arc::new(next);
    }
    let lines = deployments.connector_lines();
    assert!(
        lines[0].ends_with("; not offered: GUEST_TOKEN is not set"),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retired_connector_is_still_decided_for_a_call_and_an_unknown_one_is_not() {
    let fx = fixture(false);
    let deployments = &fx.deployments;
    assert!(deployments.for_call(GUEST, "anything").await.is_none());
    let stored = StoredConnector {
        name: GUEST.to_string(),
        settings: "{}".to_string(),
        artifact: "oci://127.0.0.1:5000/guest:1".to_string(),
        digest: "sha256:guest".to_string(),
        revision: 1,
        retired: false,
        changed_by: "ops".to_string(),
        changed_at_ms: 0,
    };
    let served = deployments.serve_loaded(GUEST, fx.loaded(), stored.clone());
    assert!(served.is_empty(), "nothing served before: no tool changed");
    let component = deployments.for_call(GUEST, "anything").await.unwrap();
    assert_eq!(component.name(), GUEST);
    assert_eq!(deployments.roster().stored[GUEST].revision, 1);

    deployments.retire_here(&StoredConnector {
        revision: 2,
        retired: true,
        ..stored
    });
    assert!(!deployments.serves(GUEST));
    assert!(deployments.boundary.is_retired(GUEST));
    let retired = deployments.for_call(GUEST, "anything").await.unwrap();
    assert!(Arc::ptr_eq(&retired, &component), "the last version served");
    assert_eq!(deployments.roster().stored[GUEST].revision, 2);
}

#[test]
fn connector_names_are_what_a_component_may_be_named() {
    for fine in ["github", "my-connector_2", &"a".repeat(64)] {
        assert!(check_name(fine).is_ok(), "{fine}");
    }
    for refused in ["", "GitHub", "a b", "ü", &"a".repeat(65)] {
        assert!(
            matches!(check_name(refused), Err(DeployError::Refused(_))),
            "{refused}"
        );
    }
}

#[test]
fn a_file_owned_connector_is_refused_a_runtime_change() {
    let fx = fixture(true);
    assert!(matches!(
        fx.deployments.refuse_file_owned(GUEST),
        Err(DeployError::FileOwned(_))
    ));
    assert!(fx.deployments.refuse_file_owned("other").is_ok());
}
