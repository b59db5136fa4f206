//! Hostile guests, one test per class of attack: each asserts the host
//! refused or stopped it, that nothing reached an upstream that should not
//! have, and that the host keeps working afterwards.

use scout_host::capabilities::http::REDACTED;
use scout_host::{
    CallError, Capabilities, CredentialScheme, HttpCapability, HttpConfig, LoadError,
    LoadedComponent, Runtime, RuntimeConfig, SecretSource,
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
    rt.load_file(Path::new(components::HOSTILE))
        .expect("hostile guest loads: its imports are inside the contract")
}

fn caps_for(origin: &str, configure: impl FnOnce(HttpConfig) -> HttpConfig) -> Capabilities {
    let config = HttpConfig::new(origin)
        .credential(
            CredentialScheme::Bearer,
            SecretSource::Value(SECRET.to_string()),
        )
        .allow_private_network(true);
    Capabilities::with_http(HttpCapability::new(configure(config)).expect("http capability"))
}

async fn fetch(
    component: &LoadedComponent,
    caps: &Capabilities,
    path: &str,
    headers: Value,
) -> Value {
    let outcome = component
        .call(
            "hostile_fetch",
            &json!({"path": path, "headers": headers}),
            caps,
        )
        .await
        .expect("call runs");
    serde_json::to_value(&outcome.output).unwrap()
}

async fn assert_host_still_works(component: &LoadedComponent) {
    let outcome = component
        .call(
            "hostile_print",
            &json!({"bytes": 3}),
            &Capabilities::default(),
        )
        .await
        .expect("next call runs");
    assert_eq!(outcome.output.ok(), Some(&json!(3)));
    assert_eq!(outcome.stdout, "xxx");
}

#[tokio::test(flavor = "multi_thread")]
async fn infinite_loop_is_stopped_by_the_deadline_and_the_host_survives() {
    let rt = runtime();
    let component = hostile(&rt);
    let err = component
        .call("hostile_spin", &json!({}), &Capabilities::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Deadline(2000)), "{err:?}");
    assert_host_still_works(&component).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_hog_is_refused_and_the_host_survives() {
    let rt = runtime();
    let component = hostile(&rt);
    let err = component
        .call(
            "hostile_hog",
            &json!({"mebibytes": 256}),
            &Capabilities::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, CallError::MemoryLimit(n) if n == 32 << 20),
        "{err:?}"
    );
    // Within the limit the same tool works.
    let ok = component
        .call(
            "hostile_hog",
            &json!({"mebibytes": 4}),
            &Capabilities::default(),
        )
        .await
        .unwrap();
    assert_eq!(ok.output.ok(), Some(&json!(4u64 << 20)));
    assert_host_still_works(&component).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panic_traps_and_the_host_survives() {
    let rt = runtime();
    let component = hostile(&rt);
    let err = component
        .call("hostile_crash", &json!({}), &Capabilities::default())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Trap(_)), "{err:?}");
    assert_host_still_works(&component).await;
}

pub(crate) fn assert_refused_naming(path: &str, expected: &[&str]) {
    let rt = runtime();
    let err = match rt.load_file(Path::new(path)) {
        Err(e) => e,
        Ok(_) => panic!("{path} must be refused"),
    };
    let LoadError::ForbiddenImports { imports: names, .. } = &err else {
        panic!("expected ForbiddenImports, got {err:?}")
    };
    let message = err.to_string();
    for prefix in expected {
        let matching: Vec<&String> = names.iter().filter(|n| n.starts_with(prefix)).collect();
        assert!(!matching.is_empty(), "{prefix} missing from {names:?}");
        for name in matching {
            assert!(
                message.contains(name.as_str()),
                "the error names {name}: {message}"
            );
        }
    }
    assert!(
        names
            .iter()
            .all(|n| !scout_host::runtime::import_allowed(n))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_guest_finds_no_secret_in_its_environment() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    let outcome = component
        .call("hostile_environment", &json!({}), &caps)
        .await
        .unwrap();
    assert_eq!(
        outcome.output.ok(),
        Some(&json!([])),
        "no environment, no arguments, no stdin"
    );
    assert!(upstream.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_authorization_header_is_replaced_and_cookies_dropped() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    let headers = json!([
        ["Authorization", "Bearer forged"],
        ["Cookie", "session=stolen"],
        ["Host", "evil.example"],
        ["Proxy-Authorization", "Basic Zm9vOmJhcg=="],
        ["X-Forwarded-For", "1.2.3.4"],
        ["X-Custom", "kept"]
    ]);
    let output = fetch(&component, &caps, "/echo", headers).await;
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {SECRET}").as_str()),
        "the host's credential, not the guest's"
    );
    assert_eq!(request.header("cookie"), None);
    assert_eq!(request.header("proxy-authorization"), None);
    assert_eq!(request.header("x-forwarded-for"), None);
    assert_ne!(request.header("host"), Some("evil.example"));
    assert_eq!(request.header("x-custom"), Some("kept"));
    assert_eq!(request.header("referer"), None);
    // The upstream echoed the credential back; the guest sees it scrubbed.
    let body = output["ok"]["body"].as_str().unwrap();
    assert!(
        body.contains(&format!("authorization: Bearer {REDACTED}")),
        "{body}"
    );
    assert!(!output.to_string().contains(SECRET));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_echoing_the_secret_is_scrubbed_in_every_form() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    for (scheme, param) in [
        (
            CredentialScheme::Query {
                param: "api_key".to_string(),
            },
            "query",
        ),
        (
            CredentialScheme::Basic {
                username: "scout".to_string(),
            },
            "basic",
        ),
        (
            CredentialScheme::Header {
                name: "x-api-key".to_string(),
            },
            "header",
        ),
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
            .call(
                "hostile_fetch",
                &json!({"path": "/echo", "headers": [["x-api-key", "forged"]]}),
                &caps,
            )
            .await
            .unwrap();
        let text = serde_json::to_string(&outcome).unwrap();
        assert!(!text.contains(SECRET), "{param}: secret leaked: {text}");
        assert!(text.contains(REDACTED), "{param}: {text}");
    }
    let seen = upstream.seen();
    assert_eq!(seen.len(), 3);
    assert!(
        seen[0].uri.contains(&format!("api_key={SECRET}")),
        "query credential injected: {}",
        seen[0].uri
    );
    assert!(
        seen[1]
            .header("authorization")
            .unwrap()
            .starts_with("Basic ")
    );
    assert_eq!(
        seen[2].header("x-api-key"),
        Some(SECRET),
        "the guest's forged x-api-key was replaced"
    );
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
        // `;` path parameters: Tomcat/Spring strip them before routing, so
        // `..;` climbs out of a prefix there; raw or encoded, in any segment.
        "/allowed/..;/admin".to_string(),
        "/..;/steal".to_string(),
        "/a;jsessionid=1/b".to_string(),
        "/a/%3B/b".to_string(),
        "/a/..%3b/b".to_string(),
    ];
    for path in &tricks {
        let output = fetch(&component, &caps, path, json!([])).await;
        assert!(
            scout_tests::capability_error(&output, "http", "denied").is_string(),
            "{path:?} must be denied, got {output}"
        );
    }
    assert!(
        upstream.seen().is_empty(),
        "no request reached the origin: {:?}",
        upstream.seen()
    );
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
    assert!(
        other.seen().is_empty(),
        "the redirect was not followed and the credential went nowhere else"
    );
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
        assert_eq!(
            scout_tests::capability_error(&output, "http", "too-large"),
            json!(1 << 20),
            "{path}: {output}"
        );
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
    assert!(
        scout_tests::capability_error(&output, "http", "timeout").is_string(),
        "{output}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_without_an_http_grant_cannot_reach_anything() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let output = fetch(&component, &Capabilities::default(), "/echo", json!([])).await;
    assert!(
        scout_tests::capability_error(&output, "http", "denied").is_string(),
        "{output}"
    );
    assert!(upstream.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn loopback_origins_need_the_operators_allowance() {
    let upstream = Upstream::start().await;
    let err = HttpCapability::new(HttpConfig::new(upstream.origin())).unwrap_err();
    assert!(err.to_string().contains("loopback"), "{err}");
    // The refusal names the switch that lifts it, where an author sets it.
    assert!(
        err.to_string().contains("--allow-private-network")
            && err.to_string().contains("allow_private_network = true"),
        "{err}"
    );
    // A name that resolves to loopback is refused at connect time.
    let port = upstream.origin().rsplit(':').next().unwrap().to_string();
    let caps = Capabilities::with_http(
        HttpCapability::new(HttpConfig::new(format!("http://localhost:{port}"))).unwrap(),
    );
    let rt = runtime();
    let component = hostile(&rt);
    let output = fetch(&component, &caps, "/echo", json!([])).await;
    assert!(
        scout_tests::capability_error(&output, "http", "transport")
            .as_str()
            .unwrap()
            .contains("loopback"),
        "{output}"
    );
    assert!(
        upstream.seen().is_empty(),
        "nothing reached the loopback server"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn guest_output_is_captured_with_a_cap() {
    let rt = runtime();
    let component = hostile(&rt);
    let outcome = component
        .call(
            "hostile_print",
            &json!({"bytes": 100_000}),
            &Capabilities::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        outcome.output.ok(),
        Some(&json!(100_000)),
        "writes past the cap do not fail the guest"
    );
    assert_eq!(outcome.stdout.len(), 4096);
    assert_eq!(outcome.stderr.len(), 4096);
    assert_eq!(outcome.output_dropped, 2 * (100_000 - 4096));
}

#[test]
fn debug_output_of_a_capability_never_shows_the_secret() {
    for scheme in [
        CredentialScheme::Bearer,
        CredentialScheme::Basic {
            username: "u".into(),
        },
        CredentialScheme::Query {
            param: "key".into(),
        },
    ] {
        let config = HttpConfig::new("https://api.example.com")
            .credential(scheme, SecretSource::Value(SECRET.to_string()));
        assert!(!format!("{config:?}").contains(SECRET));
        let caps = Capabilities::with_http(HttpCapability::new(config).unwrap());
        let text = format!("{:?}", caps.http);
        assert!(!text.contains(SECRET), "{text}");
        assert!(text.contains("api.example.com"));
    }
}

/// The request headers the upstream saw, as the `/echo` dump writes them.
fn dump_of(seen: &scout_tests::upstream::Seen) -> String {
    let text: String = seen
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\n"))
        .collect();
    format!("{text}uri: {}\n", seen.uri)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echo_in_any_content_coding_is_decoded_by_the_host_and_scrubbed() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    // The guest asks for no coding (so a host that let it negotiate would
    // pass the bytes through undecoded); the upstream encodes anyway.
    for codings in [
        "gzip",
        "deflate",
        "deflate-raw",
        "br",
        "zstd",
        "gzip+br",
        "br,gzip",
        "zstd+deflate-raw",
        "br+br",
    ] {
        let output = fetch(
            &component,
            &caps,
            &format!("/echo-coded/{codings}"),
            json!([["Accept-Encoding", "identity"]]),
        )
        .await;
        let body = output["ok"]["body"]
            .as_str()
            .unwrap_or_else(|| panic!("{codings}: {output}"));
        assert!(
            body.contains(&format!("authorization: Bearer {REDACTED}")),
            "{codings}: decoded and scrubbed: {body}"
        );
        assert!(!output.to_string().contains(SECRET), "{codings}: {output}");
        let headers = output["ok"]["headers"].as_array().unwrap();
        assert!(
            !headers.iter().any(|h| h[0] == "content-encoding"),
            "{codings}: the guest gets plain bytes and no coding label: {headers:?}"
        );
    }
    for seen in upstream.seen() {
        assert_eq!(
            seen.header("accept-encoding"),
            Some("gzip, deflate, br, zstd"),
            "the host alone negotiates"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_content_coding_the_host_cannot_decode_refuses_the_response() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    for codings in [
        "compress",
        "x-smuggle",
        "gzip+x-smuggle",
        "x-smuggle,gzip",
        "gzip,gzip,gzip,gzip,gzip",
    ] {
        let output = fetch(
            &component,
            &caps,
            &format!("/echo-coded/{codings}"),
            json!([]),
        )
        .await;
        let error = scout_tests::capability_error(&output, "http", "transport")
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("{codings}: refused: {output}"));
        assert!(
            error.contains("content") || error.contains("coding"),
            "{codings}: says why: {error}"
        );
        assert!(
            output["ok"].is_null(),
            "{codings}: no bytes reach the guest: {output}"
        );
        assert!(!output.to_string().contains(SECRET), "{codings}: {output}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echo_escaped_as_json_or_url_or_base64_is_scrubbed() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    for style in ["slash", "unicode", "percent", "mixed"] {
        let output = fetch(&component, &caps, &format!("/echo-json/{style}"), json!([])).await;
        let body = output["ok"]["body"]
            .as_str()
            .unwrap_or_else(|| panic!("{style}: {output}"));
        // Decode it the way the guest would: JSON, then percent-escapes.
        let parsed: Value = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("{style}: still JSON ({e}): {body}"));
        let authorization = parsed["headers"]["authorization"].as_str().unwrap();
        let decoded = percent_decode(authorization);
        assert!(
            !decoded.contains(SECRET),
            "{style}: the guest recovers the secret from {body}"
        );
        assert!(decoded.contains(REDACTED), "{style}: {decoded}");
    }
    let output = fetch(&component, &caps, "/echo-base64", json!([])).await;
    let body = output["ok"]["body"].as_str().unwrap();
    // The base64 characters that encode the secret's bytes, wherever the
    // secret sat in the echoed text, are what must be gone.
    let seen = upstream.seen().pop().unwrap();
    let dump = dump_of(&seen);
    let at = dump.find(SECRET).expect("the upstream saw the secret");
    use base64::Engine as _;
    let full = base64::engine::general_purpose::STANDARD.encode(&dump);
    let secret_chars = &full[(4 * at).div_ceil(3)..(4 * (at + SECRET.len())) / 3];
    assert!(
        !body.contains(secret_chars),
        "base64 of the secret reaches the guest: {body}"
    );
    // Whole, wherever the secret sits (issue 52 item 11): the characters at
    // either edge, which carry some of its bits with a neighbour's (the `Q`
    // of `[REDACTED]Q=`), went too, and nothing else did. Character `i`
    // carries bits `6i..6i+6` of the data.
    for (alphabet, engine) in [
        ("standard", &base64::engine::general_purpose::STANDARD),
        ("url-safe", &base64::engine::general_purpose::URL_SAFE),
    ] {
        for filler in 0..3 {
            let path = format!("/echo-base64/{alphabet}/{filler}");
            let output = fetch(&component, &caps, &path, json!([])).await;
            let body = output["ok"]["body"].as_str().unwrap();
            let dump = format!(
                "{}{}",
                ".".repeat(filler),
                dump_of(&upstream.seen().pop().unwrap())
            );
            let at = dump.find(SECRET).expect("the upstream saw the secret");
            let full = engine.encode(&dump);
            let first = (4 * at) / 3;
            let past = (4 * (at + SECRET.len())).div_ceil(3);
            assert_eq!(
                body,
                format!("{}{REDACTED}{}", &full[..first], &full[past..]),
                "{path}: the secret sat at byte {at} of what was encoded"
            );
        }
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match (
            bytes[i],
            bytes
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()),
        ) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn credential_routing_and_negotiation_headers_from_the_guest_are_dropped() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c.strip_headers(["X-Shop-Token"]));
    let forged = [
        "X-Api-Key",
        "X-Auth-Token",
        "Api-Key",
        "X-Access-Token",
        "Private-Token",
        "X-Shop-Token",
        "HTTP2-Settings",
        "X-Original-URL",
        "X-Rewrite-URL",
        "X-Forwarded-Host",
        "X-Forwarded-Proto",
        "Forwarded",
        "X-HTTP-Method-Override",
        "Accept-Encoding",
    ];
    let mut headers: Vec<Value> = forged.iter().map(|name| json!([name, "forged"])).collect();
    headers.push(json!(["X-Custom", "kept"]));
    let output = fetch(&component, &caps, "/echo", Value::Array(headers)).await;
    assert!(output["ok"].is_object(), "{output}");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    for name in forged {
        let lower = name.to_ascii_lowercase();
        assert_ne!(
            seen[0].header(&lower),
            Some("forged"),
            "{name} was forwarded"
        );
    }
    assert_eq!(seen[0].header("x-custom"), Some("kept"));
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn request_headers_over_the_size_cap_are_refused_before_sending() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    let big = "v".repeat(1024);
    let headers: Vec<Value> = (0..20)
        .map(|i| json!([format!("x-filler-{i}"), big]))
        .collect();
    let output = fetch(&component, &caps, "/echo", Value::Array(headers)).await;
    let reason = scout_tests::capability_error(&output, "http", "denied")
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{output}"));
    assert!(reason.contains("headers"), "{reason}");
    assert!(upstream.seen().is_empty(), "nothing was sent");
    // Under the cap the same kind of request goes through.
    let headers: Vec<Value> = (0..4)
        .map(|i| json!([format!("x-filler-{i}"), big]))
        .collect();
    let output = fetch(&component, &caps, "/echo", Value::Array(headers)).await;
    assert!(output["ok"].is_object(), "{output}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guest_hoarding_stream_handles_traps_at_the_table_cap() {
    let rt = runtime();
    let component = hostile(&rt);
    let cap = scout_host::runtime::MAX_TABLE_ENTRIES as u32;
    // Below the cap: fine.
    let ok = component
        .call(
            "hostile_handles",
            &json!({"count": cap / 2}),
            &Capabilities::default(),
        )
        .await
        .unwrap();
    assert_eq!(ok.output.ok(), Some(&json!(cap / 2)));
    // Past it (and far past it): the call traps at the cap, long before its
    // deadline, instead of growing the host's memory with every handle.
    for count in [cap * 2, 10_000_000] {
        let started = std::time::Instant::now();
        let err = component
            .call(
                "hostile_handles",
                &json!({"count": count}),
                &Capabilities::default(),
            )
            .await
            .unwrap_err();
        let CallError::Trap(text) = &err else {
            panic!("{count}: expected a trap, got {err:?}")
        };
        assert!(text.contains("resource table"), "{count}: {text}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{count}: stopped at the cap, not by the deadline"
        );
    }
    assert_host_still_works(&component).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_passed_in_never_comes_back_out_in_output_logs_or_stderr() {
    let rt = runtime();
    let component = hostile(&rt);
    let upstream = Upstream::start().await;
    let caps = caps_for(&upstream.origin(), |c| c);
    // An agent that learned the secret elsewhere hands it to a tool, escaped.
    for text in [
        format!("x {SECRET} y"),
        format!("x {} y", SECRET.replace('-', "\\u002d")),
        format!("x {} y", SECRET.replace('-', "%2D")),
    ] {
        let outcome = component
            .call("hostile_echo", &json!({"text": text}), &caps)
            .await
            .unwrap();
        let shown = serde_json::to_string(&outcome).unwrap();
        assert_eq!(
            outcome.output.ok(),
            Some(&json!(format!("x {REDACTED} y"))),
            "{shown}"
        );
        assert!(
            outcome
                .logs
                .iter()
                .any(|l| l.message == format!("echoing x {REDACTED} y")),
            "{shown}"
        );
        assert!(
            outcome.stderr.contains(&format!("echoing x {REDACTED} y")),
            "{shown}"
        );
        assert!(!shown.contains(SECRET), "{shown}");
    }
}

#[test]
fn origins_on_translated_nat64_and_discard_prefixes_are_refused() {
    for (origin, reason) in [
        ("http://[::ffff:0:a9fe:a9fe]/", "SIIT"),
        ("http://[::ffff:0:808:808]/", "SIIT"),
        ("http://[64:ff9b:1::a9fe:a9fe]/", "NAT64"),
        ("http://[64:ff9b:1:ffff::808:808]/", "NAT64"),
        ("http://[100::1]/", "discard"),
    ] {
        let err = HttpCapability::new(HttpConfig::new(origin)).unwrap_err();
        assert!(err.to_string().contains(reason), "{origin}: {err}");
    }
    // A public address beside them still configures.
    assert!(HttpCapability::new(HttpConfig::new("http://[2606:4700::1111]/")).is_ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_outside_the_tools_declared_routes_is_denied_with_nothing_sent() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    let probe = |method: &str, path: &str| json!({"method": method, "path": path});
    // `probe-route` declares only `GET /declared/{name}`.
    let ok = component
        .call("hostile_probe_route", &probe("GET", "/declared/x"), &caps)
        .await
        .expect("call runs");
    assert_eq!(ok.output.ok(), Some(&json!(200)), "{:?}", ok.output);
    assert_eq!(
        upstream.seen().len(),
        1,
        "the declared route reached the upstream"
    );
    for (method, path) in [
        ("GET", "/declared"),
        ("GET", "/declared/x/y"),
        ("GET", "/declared/"),
        ("GET", "/other/x"),
        ("GET", "/"),
        ("HEAD", "/declared/x"),
        // A read tool's POST, PUT, PATCH or DELETE to its own declared path.
        ("POST", "/declared/x"),
        ("PUT", "/declared/x"),
        ("PATCH", "/declared/x"),
        ("DELETE", "/declared/x"),
    ] {
        let outcome = component
            .call("hostile_probe_route", &probe(method, path), &caps)
            .await
            .expect("call runs");
        let output = serde_json::to_value(&outcome.output).unwrap();
        let reason = scout_tests::capability_error(&output, "http", "denied");
        let reason = reason
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path} must be denied, got {output}"));
        assert!(
            reason.contains("route not declared") && reason.contains("GET /declared/{name}"),
            "{method} {path}: {reason}"
        );
        // The trace's record of the exchange shows the refusal, with no status.
        let exchange = outcome
            .http
            .last()
            .expect("the refused request is recorded");
        assert_eq!((exchange.method.as_str(), exchange.status), (method, None));
        assert!(
            exchange
                .error
                .as_deref()
                .is_some_and(|e| e.contains("route not declared"))
        );
    }
    assert_eq!(
        upstream.seen().len(),
        1,
        "no undeclared request reached the upstream: {:?}",
        upstream.seen()
    );
    // A tool that declares no route reaches nothing at all.
    let print = component
        .call("hostile_print", &json!({"bytes": 1}), &caps)
        .await
        .expect("call runs");
    assert!(print.http.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_tools_declared_read_only_post_is_sent_and_shown_prominently() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    let outcome = component
        .call(
            "hostile_query_post",
            &json!({"query": "{ viewer { login } }"}),
            &caps,
        )
        .await
        .expect("call runs");
    assert_eq!(
        outcome.output.ok(),
        Some(&json!(200)),
        "{:?}",
        outcome.output
    );
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].uri.as_str()),
        ("POST", "/graphql")
    );
    // A reviewer cannot miss it: `inspect` marks the route, as allowed
    // (`??`), not as a refused import is (`!!`).
    let text = scout_host::inspect::Report::new(component.info()).to_text();
    assert!(
        text.contains("?? route POST /graphql (read-only)"),
        "{text}"
    );
    assert!(!text.contains("!! route"), "{text}");
    assert!(text.contains("REVIEW: routes marked ??"), "{text}");
    assert!(!text.contains("REFUSED"), "{text}");
    // The same tool sending anything else is still refused.
    let probe = component
        .call(
            "hostile_probe_route",
            &json!({"method": "POST", "path": "/graphql"}),
            &caps,
        )
        .await
        .expect("call runs");
    let output = serde_json::to_value(&probe.output).unwrap();
    assert!(
        scout_tests::capability_error(&output, "http", "denied").is_string(),
        "another tool's read-only POST is not this tool's: {output}"
    );
    assert_eq!(upstream.seen().len(), 1);
}

/// `text` holds nothing but `.` filler, `[REDACTED]` and, at its very end,
/// the beginning of `[REDACTED]`: no character of the secret survived.
fn only_filler_and_redactions(text: &str) -> bool {
    let mut rest = text.replace(REDACTED, "");
    if let Some(at) = rest.find('[') {
        if !REDACTED.starts_with(&rest[at..]) {
            return false;
        }
        rest.truncate(at);
    }
    rest.bytes().all(|b| b == b'.')
}

/// The last 200 bytes of ASCII text.
fn tail(text: &str) -> &str {
    &text[text.len().saturating_sub(200)..]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_written_across_a_cap_leaves_no_part_of_itself() {
    use base64::Engine as _;
    let rt = runtime();
    let component = hostile(&rt);
    let upstream = Upstream::start().await;
    let caps = caps_for(&upstream.origin(), |c| c);
    // stdout, stderr (the runtime's `output_cap`) and a log line are all
    // cut at 4096 bytes here.
    const CAP: usize = 4096;
    assert_eq!(SECRET.len() % 3, 0, "its base64 is whole groups");
    let forms = [
        SECRET.to_string(),
        SECRET.bytes().map(|b| format!("\\u{b:04x}")).collect(),
        SECRET.bytes().map(|b| format!("%{b:02X}")).collect(),
        base64::engine::general_purpose::STANDARD.encode(SECRET),
        base64::engine::general_purpose::URL_SAFE.encode(SECRET),
    ];
    for form in &forms {
        // Every offset at which the form straddles the cap, and one either side.
        for offset in CAP - form.len() - 1..=CAP + 1 {
            let text = format!("{}{form}{}", ".".repeat(offset), ".".repeat(8));
            let outcome = component
                .call("hostile_shout", &json!({"text": text}), &caps)
                .await
                .expect("call runs");
            let where_ = format!("form {form:?} at offset {offset}");
            assert!(outcome.stdout.len() <= CAP, "{where_}");
            assert!(
                only_filler_and_redactions(&outcome.stdout),
                "{where_}: stdout ends {:?}",
                tail(&outcome.stdout)
            );
            assert!(
                only_filler_and_redactions(&outcome.stderr),
                "{where_}: stderr"
            );
            assert_eq!(outcome.logs.len(), 1, "{where_}");
            assert!(outcome.logs[0].message.len() <= CAP, "{where_}");
            assert!(
                only_filler_and_redactions(&outcome.logs[0].message),
                "{where_}: log ends {:?}",
                tail(&outcome.logs[0].message)
            );
            if offset + form.len() > CAP {
                assert!(outcome.output_dropped > 0, "{where_}: the cut is counted");
            }
        }
    }
    assert!(upstream.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_graphql_read_route_is_judged_as_any_upstream_might_read_it() {
    let upstream = Upstream::start().await;
    let rt = runtime();
    let component = hostile(&rt);
    let caps = caps_for(&upstream.origin(), |c| c);
    let send = |params: Value, headers: Value, body: String| {
        let component = &component;
        let caps = &caps;
        async move {
            let outcome = component
                .call(
                    "hostile_graphql_read",
                    &json!({"params": params, "headers": headers, "body": body}),
                    caps,
                )
                .await
                .expect("call runs");
            serde_json::to_value(&outcome.output).unwrap()
        }
    };
    let innocent = r#""query": "{ shop { name } }""#;
    let ok = send(json!([]), json!([]), format!("{{{innocent}}}")).await;
    assert_eq!(ok, json!({"ok": 200}), "an innocent query is sent");
    assert_eq!(upstream.seen().len(), 1);

    let mutation = "mutation { productDelete(input: {id: \"1\"}) { deletedProductId } }";
    for (params, headers, body, why) in [
        // Servers keeping the first of two keys would run the mutation.
        (
            json!([]),
            json!([]),
            format!(r#"{{"query": {mutation:?}, {innocent}}}"#),
            "appears twice",
        ),
        (
            json!([]),
            json!([]),
            format!(r#"{{{innocent}, "variables": {{"query": {mutation:?}, "query": "x"}}}}"#),
            "appears twice",
        ),
        // Servers preferring the URL's parameters.
        (
            json!([["query", mutation]]),
            json!([]),
            format!("{{{innocent}}}"),
            "URL parameter `query`",
        ),
        (
            json!([[
                "extensions",
                r#"{"persistedQuery":{"version":1,"sha256Hash":"ab"}}"#
            ]]),
            json!([]),
            format!("{{{innocent}}}"),
            "URL parameter `extensions`",
        ),
        (
            json!([["documentId", "deleteEverything"]]),
            json!([]),
            format!("{{{innocent}}}"),
            "URL parameter `documentId`",
        ),
        // Persisted documents beside an innocent query.
        (
            json!([]),
            json!([]),
            format!(r#"{{{innocent}, "documentId": "deleteEverything"}}"#),
            "documentId",
        ),
        (
            json!([]),
            json!([]),
            format!(r#"{{{innocent}, "doc_id": "123"}}"#),
            "doc_id",
        ),
        (
            json!([]),
            json!([]),
            format!(
                r#"{{{innocent}, "extensions": {{"persistedQuery": {{"version": 1, "sha256Hash": "ab"}}}}}}"#
            ),
            "extensions",
        ),
        // A body an upstream would read as something other than JSON.
        (
            json!([]),
            json!([["Content-Type", "application/graphql"]]),
            format!("{{{innocent}}}"),
            "application/json",
        ),
    ] {
        let output = send(params.clone(), headers, body.clone()).await;
        let reason = scout_tests::capability_error(&output, "http", "denied");
        let reason = reason
            .as_str()
            .unwrap_or_else(|| panic!("{params} {body} must be denied, got {output}"));
        assert!(reason.contains(why), "{params} {body}: {reason}");
        assert_eq!(
            upstream.seen().len(),
            1,
            "nothing was sent for {params} {body}"
        );
    }
}
