//! Hostile guests, one test per class of attack: each asserts the host
//! refused or stopped it, that nothing reached an upstream that should not
//! have, and that the host keeps working afterwards.

use scout_host::capabilities::http::REDACTED;
use scout_host::{
    CallError, Capabilities, CredentialScheme, HttpCapability, HttpConfig, LoadError, LoadedComponent, Runtime,
    RuntimeConfig, SecretSource,
};
use scout_tests::components;
use scout_tests::upstream::Upstream;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const SECRET: &str = "s3cr3t-token-9f1c2e7d";

fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig {
        max_memory_bytes: 32 << 20,
        max_concurrent_calls: 8,
        call_timeout: Duration::from_secs(2),
        output_cap: 4096,
        ..Default::default()
    })
    .expect("runtime")
}

fn hostile(rt: &Runtime) -> LoadedComponent {
    rt.load_file(Path::new(components::HOSTILE)).expect("hostile guest loads: its imports are inside the contract")
}

fn caps_for(origin: &str, configure: impl FnOnce(HttpConfig) -> HttpConfig) -> Capabilities {
    let config = HttpConfig::new(origin)
        .credential(CredentialScheme::Bearer, SecretSource::Value(SECRET.to_string()))
        .allow_private_network(true);
    Capabilities::with_http(HttpCapability::new(configure(config)).expect("http capability"))
}

async fn fetch(component: &LoadedComponent, caps: &Capabilities, path: &str, headers: Value) -> Value {
    let outcome = component.call("hostile_fetch", &json!({"path": path, "headers": headers}), caps).await.expect("call runs");
    serde_json::to_value(&outcome.output).unwrap()
}

async fn assert_host_still_works(component: &LoadedComponent) {
    let outcome = component.call("hostile_print", &json!({"bytes": 3}), &Capabilities::default()).await.expect("next call runs");
    assert_eq!(outcome.output.ok(), Some(&json!(3)));
    assert_eq!(outcome.stdout, "xxx");
}

#[tokio::test(flavor = "multi_thread")]
async fn infinite_loop_is_stopped_by_the_deadline_and_the_host_survives() {
    let rt = runtime();
    let component = hostile(&rt);
    let err = component.call("hostile_spin", &json!({}), &Capabilities::default()).await.unwrap_err();
    assert!(matches!(err, CallError::Deadline(2000)), "{err:?}");
    assert_host_still_works(&component).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_hog_is_refused_and_the_host_survives() {
    let rt = runtime();
    let component = hostile(&rt);
    let err = component.call("hostile_hog", &json!({"mebibytes": 256}), &Capabilities::default()).await.unwrap_err();
    assert!(matches!(err, CallError::MemoryLimit(n) if n == 32 << 20), "{err:?}");
    // Within the limit the same tool works.
    let ok = component.call("hostile_hog", &json!({"mebibytes": 4}), &Capabilities::default()).await.unwrap();
    assert_eq!(ok.output.ok(), Some(&json!(4u64 << 20)));
    assert_host_still_works(&component).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panic_traps_and_the_host_survives() {
    let rt = runtime();
    let component = hostile(&rt);
    let err = component.call("hostile_crash", &json!({}), &Capabilities::default()).await.unwrap_err();
    assert!(matches!(err, CallError::Trap(_)), "{err:?}");
    assert_host_still_works(&component).await;
}

fn assert_refused_naming(path: &str, expected: &[&str]) {
    let rt = runtime();
    let err = match rt.load_file(Path::new(path)) {
        Err(e) => e,
        Ok(_) => panic!("{path} must be refused"),
    };
    let LoadError::ForbiddenImports(names) = &err else { panic!("expected ForbiddenImports, got {err:?}") };
    let message = err.to_string();
    for prefix in expected {
        let matching: Vec<&String> = names.iter().filter(|n| n.starts_with(prefix)).collect();
        assert!(!matching.is_empty(), "{prefix} missing from {names:?}");
        for name in matching {
            assert!(message.contains(name.as_str()), "the error names {name}: {message}");
        }
    }
    assert!(names.iter().all(|n| !scout_host::runtime::import_allowed(n)));
}

#[test]
fn a_guest_importing_wasi_sockets_is_refused_at_load_naming_every_import() {
    assert_refused_naming(
        components::IMPORTS_SOCKETS,
        &["wasi:sockets/tcp@", "wasi:sockets/udp@", "wasi:sockets/ip-name-lookup@", "wasi:sockets/network@"],
    );
}

#[test]
fn a_guest_importing_wasi_filesystem_is_refused_at_load_naming_every_import() {
    assert_refused_naming(components::IMPORTS_FILESYSTEM, &["wasi:filesystem/types@", "wasi:filesystem/preopens@", "wasi:clocks/wall-clock@"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_guest_finds_no_secret_in_its_environment() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    let outcome = component.call("hostile_environment", &json!({}), &caps).await.unwrap();
    assert_eq!(outcome.output.ok(), Some(&json!([])), "no environment, no arguments, no stdin");
    assert!(upstream.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_authorization_header_is_replaced_and_cookies_dropped() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    let headers = json!([["Authorization", "Bearer forged"], ["Cookie", "session=stolen"], ["Host", "evil.example"],
        ["Proxy-Authorization", "Basic Zm9vOmJhcg=="], ["X-Forwarded-For", "1.2.3.4"], ["X-Custom", "kept"]]);
    let output = fetch(&component, &caps, "/echo", headers).await;
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(request.header("authorization"), Some(format!("Bearer {SECRET}").as_str()), "the host's credential, not the guest's");
    assert_eq!(request.header("cookie"), None);
    assert_eq!(request.header("proxy-authorization"), None);
    assert_eq!(request.header("x-forwarded-for"), None);
    assert_ne!(request.header("host"), Some("evil.example"));
    assert_eq!(request.header("x-custom"), Some("kept"));
    assert_eq!(request.header("referer"), None);
    // The upstream echoed the credential back; the guest sees it scrubbed.
    let body = output["ok"]["body"].as_str().unwrap();
    assert!(body.contains(&format!("authorization: Bearer {REDACTED}")), "{body}");
    assert!(!output.to_string().contains(SECRET));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_echoing_the_secret_is_scrubbed_in_every_form() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    for (scheme, param) in [
        (CredentialScheme::Query { param: "api_key".to_string() }, "query"),
        (CredentialScheme::Basic { username: "scout".to_string() }, "basic"),
        (CredentialScheme::Header { name: "x-api-key".to_string() }, "header"),
    ] {
        let caps = Capabilities::with_http(
            HttpCapability::new(
                HttpConfig::new(upstream.origin())
                    .credential(scheme, SecretSource::Value(SECRET.to_string()))
                    .allow_private_network(true),
            )
            .unwrap(),
        );
        let outcome = component
            .call("hostile_fetch", &json!({"path": "/echo", "headers": [["x-api-key", "forged"]]}), &caps)
            .await
            .unwrap();
        let text = serde_json::to_string(&outcome).unwrap();
        assert!(!text.contains(SECRET), "{param}: secret leaked: {text}");
        assert!(text.contains(REDACTED), "{param}: {text}");
    }
    let seen = upstream.seen();
    assert_eq!(seen.len(), 3);
    assert!(seen[0].uri.contains(&format!("api_key={SECRET}")), "query credential injected: {}", seen[0].uri);
    assert!(seen[1].header("authorization").unwrap().starts_with("Basic "));
    assert_eq!(seen[2].header("x-api-key"), Some(SECRET), "the guest's forged x-api-key was replaced");
}

#[tokio::test(flavor = "multi_thread")]
async fn path_tricks_are_refused_before_any_request() {
    let upstream = Upstream::start().await;
    let other = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    let other_host = other.origin().trim_start_matches("http://").to_string();
    let tricks = [
        format!("//{other_host}/steal"),
        "/\\evil.example/steal".to_string(),
        format!("/@{other_host}/steal"),
        format!("@{other_host}/steal"),
        format!("{}/steal", other.origin()),
        format!("/{}/steal", other.origin()),
        "/../steal".to_string(),
        "/a/./b".to_string(),
        "/a/%2e%2e/b".to_string(),
        "/a/%2E%2E/b".to_string(),
        "/a/.%2e/b".to_string(),
        "/a%2f..%2fb".to_string(),
        "/a%5cb".to_string(),
        "/a?x=1".to_string(),
        "/a#frag".to_string(),
        "/a b".to_string(),
        "/a\r\nHost: evil".to_string(),
        "/*".to_string(),
    ];
    for path in &tricks {
        let output = fetch(&component, &caps, path, json!([])).await;
        assert!(output["err"]["http"]["denied"].is_string(), "{path:?} must be denied, got {output}");
    }
    assert!(upstream.seen().is_empty(), "no request reached the origin: {:?}", upstream.seen());
    assert!(other.seen().is_empty(), "no request reached another server");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_to_another_origin_is_not_followed() {
    let upstream = Upstream::start().await;
    let other = Upstream::start().await;
    upstream.redirect_to(&format!("{}/steal", other.origin()));
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    let output = fetch(&component, &caps, "/redirect", json!([])).await;
    assert_eq!(output["ok"]["status"], json!(302));
    assert_eq!(upstream.seen().len(), 1);
    assert!(other.seen().is_empty(), "the redirect was not followed and the credential went nowhere else");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_response_is_refused_with_too_large() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |mut c| {
        c.max_response_bytes = 1 << 20;
        c
    });
    for path in ["/big", "/gzip"] {
        let output = fetch(&component, &caps, path, json!([])).await;
        assert_eq!(output["err"]["http"]["too-large"], json!(1 << 20), "{path}: {output}");
    }
    // A small answer still passes.
    let output = fetch(&component, &caps, "/small", json!([])).await;
    assert_eq!(output["ok"]["body"], json!("ok"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_upstream_times_out() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |mut c| {
        c.total_timeout = Duration::from_millis(300);
        c
    });
    let output = fetch(&component, &caps, "/slow", json!([])).await;
    assert_eq!(output["err"]["http"], json!("timeout"), "{output}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_without_an_http_grant_cannot_reach_anything() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let output = fetch(&component, &Capabilities::default(), "/echo", json!([])).await;
    assert!(output["err"]["http"]["denied"].is_string(), "{output}");
    assert!(upstream.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn loopback_origins_need_the_operators_allowance() {
    let upstream = Upstream::start().await;
    let err = HttpCapability::new(HttpConfig::new(upstream.origin())).unwrap_err();
    assert!(err.to_string().contains("loopback"), "{err}");
    // A name that resolves to loopback is refused at connect time.
    let port = upstream.origin().rsplit(':').next().unwrap().to_string();
    let caps = Capabilities::with_http(HttpCapability::new(HttpConfig::new(format!("http://localhost:{port}"))).unwrap());
    let rt = runtime();
    let component = hostile(&rt);
    let output = fetch(&component, &caps, "/echo", json!([])).await;
    assert!(output["err"]["http"]["transport"].as_str().unwrap().contains("loopback"), "{output}");
    assert!(upstream.seen().is_empty(), "nothing reached the loopback server");
}

#[tokio::test(flavor = "multi_thread")]
async fn guest_output_is_captured_with_a_cap() {
    let rt = runtime();
    let component = hostile(&rt);
    let outcome = component.call("hostile_print", &json!({"bytes": 100_000}), &Capabilities::default()).await.unwrap();
    assert_eq!(outcome.output.ok(), Some(&json!(100_000)), "writes past the cap do not fail the guest");
    assert_eq!(outcome.stdout.len(), 4096);
    assert_eq!(outcome.stderr.len(), 4096);
    assert_eq!(outcome.output_dropped, 2 * (100_000 - 4096));
}

#[test]
fn debug_output_of_a_capability_never_shows_the_secret() {
    for scheme in [CredentialScheme::Bearer, CredentialScheme::Basic { username: "u".into() }, CredentialScheme::Query { param: "key".into() }] {
        let config = HttpConfig::new("https://api.example.com").credential(scheme, SecretSource::Value(SECRET.to_string()));
        assert!(!format!("{config:?}").contains(SECRET));
        let caps = Capabilities::with_http(HttpCapability::new(config).unwrap());
        let text = format!("{:?}", caps.http);
        assert!(!text.contains(SECRET), "{text}");
        assert!(text.contains("api.example.com"));
    }
}
