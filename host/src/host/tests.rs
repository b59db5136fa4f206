//! The root without a server: a `Host` started from a configuration with
//! no connector over a SQLite store in a temporary directory, its sessions
//! reached through endpoints that are plain names (`E = String`).

use super::*;
use crate::policy::Switches;
use crate::sessions::OpenSession;

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn started() -> (Host<String>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = ServeConfig::parse(&format!(
        "database = {:?}\n",
        dir.path().join("host.db").display().to_string()
    ))
    .unwrap();
    let key_env = config.store_key_env.clone();
    let host = Host::start(config, Switches::default(), |name| {
        (name == key_env).then(|| KEY.to_string())
    })
    .unwrap();
    (host, dir)
}

fn opened(host: &Host<String>) -> String {
    let endpoint =
        |_: std::sync::Weak<Live<String>>,
         server: String,
         _: tokio_util::sync::CancellationToken| format!("endpoint of {server}");
    let reach = Reach {
        host_tools: |_| vec!["request_capability"],
        endpoint: &endpoint,
    };
    let request = OpenSession {
        brand: "acme".into(),
        role: "person-chat".into(),
        ..Default::default()
    };
    let view = host
        .open_session(&request, Default::default(), "http://127.0.0.1:1", &reach)
        .unwrap();
    view.id
}

#[test]
fn a_session_is_reached_through_the_endpoints_the_adapter_makes() {
    let (host, _dir) = started();
    let id = opened(&host);
    let live = host.session(&id).expect("held here");
    assert_eq!(
        live.endpoints.get(policy::names::HOST_SERVER),
        Some(&format!("endpoint of {}", policy::names::HOST_SERVER))
    );
    assert!(
        live.allowlist
            .iter()
            .any(|name| name
                == &policy::names::mcp(policy::names::HOST_SERVER, "request_capability"))
    );
    assert_eq!(host.session_views("http://127.0.0.1:1").len(), 1);
}

#[test]
fn an_invalidation_reaches_the_sessions_without_ending_one_not_ended() {
    let (host, _dir) = started();
    let id = opened(&host);
    host.apply_invalidation(&Invalidation::Session(id.clone()));
    host.apply_invalidation(&Invalidation::Connections);
    host.apply_invalidation(&Invalidation::All);
    assert!(host.session(&id).is_some(), "nothing ended it elsewhere");
    // An invalidation of a session not held here touches nothing.
    host.apply_invalidation(&Invalidation::Session("elsewhere".into()));
    assert!(host.session("elsewhere").is_none());
}

#[test]
fn ending_a_session_lets_it_go_once() {
    let (host, _dir) = started();
    let id = opened(&host);
    assert!(host.end_session(&id));
    assert!(host.session(&id).is_none());
    assert!(host.session_views("http://127.0.0.1:1").is_empty());
    assert!(!host.end_session(&id), "ended already");
    assert_eq!(host.end_expired(), 0);
}
