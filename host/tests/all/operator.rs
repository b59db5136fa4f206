//! What an operator wires the host into (issue 35), through the real
//! binary: a metrics listener a scraper reaches without the admin token.

use super::crash_safety::{ADMIN_TOKEN, GITHUB_TOKEN};
use crate::common;
use scout_tests::ServeProcess;
use scout_tests::fake_github::FakeGitHub;
use std::time::Duration;

const METRICS_TOKEN: &str = "metrics-only-token-0123456789";

/// The address `serve` printed for its metrics listener (on stderr, read
/// by a thread of its own: waited for).
fn metrics_base(serve: &ServeProcess) -> String {
    let started = std::time::Instant::now();
    loop {
        let stderr = serve.stderr();
        if let Some(base) = stderr
            .lines()
            .find_map(|l| l.strip_prefix("scout-host: metrics (/metrics) on "))
            .and_then(|rest| rest.split(',').next())
        {
            return base.trim().to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "a metrics listener line: {stderr}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn status(http: &reqwest::Client, url: &str, bearer: Option<&str>) -> (u16, String) {
    let mut request = http.get(url);
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let answer = request.send().await.unwrap();
    let code = answer.status().as_u16();
    (code, answer.text().await.unwrap())
}

/// `metrics_listen` serves `/metrics` without the admin credential and
/// nothing else; the main listener's `/metrics` still asks for one. With
/// `metrics_token_env`, that token alone reads the listener, and it opens
/// nothing on the main listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scraper_reads_metrics_on_their_own_listener_without_the_admin_token() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();

    // Open, for a loopback or pod address.
    let config = dir.path().join("open.toml");
    std::fs::write(
        &config,
        format!(
            "metrics_listen = \"127.0.0.1:0\"\n{}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    )
    .unwrap();
    let serve = common::serve(&config).start();
    let metrics = metrics_base(&serve);
    let banner = serve.stderr();
    assert!(banner.contains(", without a credential"), "{banner}");
    // The start banner names the store, who signs in, and where spans go.
    assert!(
        banner.contains("scout-host: store SQLite (")
            && banner.contains("admin API: the admin token (OIDC off)")
            && banner.contains("OTLP span export off"),
        "{banner}"
    );
    let (code, text) = status(&http, &format!("{metrics}/metrics"), None).await;
    assert_eq!(code, 200, "{text}");
    assert!(text.contains("scout_build_info"), "{text}");
    assert!(
        text.trim_end().ends_with("# EOF"),
        "OpenMetrics text: {text}"
    );
    for path in ["/v1/health", "/v1/sessions", "/livez", "/v1/approvals"] {
        let (code, _) = status(&http, &format!("{metrics}{path}"), Some(ADMIN_TOKEN)).await;
        assert_eq!(
            code, 404,
            "the metrics listener serves only /metrics: {path}"
        );
    }
    let (code, _) = status(&http, &format!("{}/metrics", serve.base), None).await;
    assert_eq!(
        code, 401,
        "the main listener's /metrics still asks for a credential"
    );
    drop(serve);

    // With a token of its own.
    let config = dir.path().join("token.toml");
    std::fs::write(
        &config,
        format!(
            "metrics_listen = \"127.0.0.1:0\"\nmetrics_token_env = \"SCOUT_METRICS_TOKEN\"\n{}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    )
    .unwrap();
    let serve = common::serve(&config)
        .envs(&[("SCOUT_METRICS_TOKEN", METRICS_TOKEN.to_string())])
        .start();
    let metrics = metrics_base(&serve);
    let url = format!("{metrics}/metrics");
    assert_eq!(status(&http, &url, None).await.0, 401);
    assert_eq!(
        status(&http, &url, Some("not-the-metrics-token-0000"))
            .await
            .0,
        401
    );
    assert_eq!(
        status(&http, &url, Some(ADMIN_TOKEN)).await.0,
        401,
        "the admin token is not the scraper's"
    );
    let (code, text) = status(&http, &url, Some(METRICS_TOKEN)).await;
    assert_eq!(code, 200, "{text}");
    assert!(text.contains("scout_build_info"), "{text}");
    for path in ["/metrics", "/v1/sessions", "/v1/health"] {
        let (code, _) = status(&http, &format!("{}{path}", serve.base), Some(METRICS_TOKEN)).await;
        assert_eq!(
            code, 401,
            "the metrics token opens nothing on the main listener: {path}"
        );
    }
    drop(serve);
}

/// A metrics token that is the admin token, or one with no listener to
/// guard, is refused at start with what to do.
#[test]
fn serve_refuses_a_metrics_token_it_cannot_keep_apart() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("serve.toml");
    for (top, token, says) in [
        (
            "metrics_listen = \"127.0.0.1:0\"\nmetrics_token_env = \"SCOUT_METRICS_TOKEN\"\n",
            ADMIN_TOKEN,
            "SCOUT_METRICS_TOKEN holds the admin token: give the scraper a token of its own",
        ),
        (
            "metrics_token_env = \"SCOUT_METRICS_TOKEN\"\n",
            METRICS_TOKEN,
            "metrics_token_env guards metrics_listen, which is not set",
        ),
        (
            "metrics_listen = \"127.0.0.1:0\"\nmetrics_token_env = \"SCOUT_METRICS_TOKEN\"\n",
            "short",
            "SCOUT_METRICS_TOKEN must be at least 16 characters",
        ),
    ] {
        std::fs::write(&config, format!("{top}listen = \"127.0.0.1:0\"\n")).unwrap();
        let stderr = common::serve_as(&config, crate::crash_safety::ADMIN_TOKEN, "5c")
            .envs(&[("SCOUT_METRICS_TOKEN", token)])
            .refused();
        assert!(stderr.contains(says), "{says:?} in {stderr}");
    }
}

/// `log_format = "json"`: every line `serve` writes on stderr is one JSON
/// object, the start banner included; each admin API and MCP request is
/// one access-log line with its method, its route as declared, its status,
/// its duration and who it was verified as, and never a token or an
/// argument.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_is_one_json_object_a_line_with_an_access_line_per_request() {
    use super::crash_safety::{Admin, Mcp, ok_text};
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("json.toml");
    std::fs::write(
        &config,
        format!(
            "log_format = \"json\"\n{}",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    )
    .unwrap();
    // The default filter, as a host started without SCOUT_LOG has it.
    let serve = common::serve(&config)
        .envs(&[(
            "SCOUT_LOG",
            "warn,scout_host::access=info,scout_host::start=info".to_string(),
        )])
        .start();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    admin.set_up().await;
    let view = admin.session().await;
    let id = view["id"].as_str().unwrap().to_string();
    let mcp = Mcp::new(&http, &view).connect().await;
    let canary = "canary-argument-4471";
    let read = mcp
        .request(
            "tools/call",
            serde_json::json!({"name": "github_read_file",
                   "arguments": {"owner": "octo", "repo": "hello", "path": format!("{canary}.md")}}),
        )
        .await
        .unwrap();
    assert!(ok_text(&read).is_none(), "no such file upstream: {read}");
    let unauthorized = http
        .get(format!("{}/v1/sessions", serve.base))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorized.status().as_u16(), 401);

    let lines: Vec<serde_json::Value> = super::crash_safety::wait_for(
        "the access lines of the requests made",
        crate::common::EVENTUALLY,
        async || {
            let stderr = serve.stderr();
            let lines: Vec<serde_json::Value> = stderr
                .lines()
                .map(|l| {
                    serde_json::from_str(l)
                        .unwrap_or_else(|e| panic!("not one JSON object ({e}): {l}"))
                })
                .collect();
            // Each request's line, once written (a thread reads stderr).
            let logged = |method: &str, route: &str, status: u64| {
                lines.iter().any(|l| {
                    l["target"] == "scout_host::access"
                        && l["fields"]["method"] == method
                        && l["fields"]["route"] == route
                        && l["fields"]["status"] == status
                })
            };
            (logged("POST", "/v1/sessions", 201)
                && logged("POST", "/mcp/{session}/{connector}", 200)
                && logged("GET", "/v1/sessions", 401))
            .then_some(lines)
        },
    )
    .await;
    let banner: Vec<&str> = lines
        .iter()
        .filter(|l| l["target"] == "scout_host::start")
        .filter_map(|l| l["fields"]["message"].as_str())
        .collect();
    assert!(
        banner.iter().any(|m| m.starts_with("store SQLite (")),
        "the start banner, as JSON: {banner:?}"
    );
    let access: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["target"] == "scout_host::access")
        .map(|l| &l["fields"])
        .collect();
    let find = |method: &str, route: &str, status: u64| {
        access
            .iter()
            .find(|a| a["method"] == method && a["route"] == route && a["status"] == status)
            .unwrap_or_else(|| panic!("{method} {route} {status} in {access:#?}"))
    };
    assert_eq!(find("POST", "/v1/sessions", 201)["caller"], "admin-token");
    assert_eq!(
        find("POST", "/mcp/{session}/{connector}", 200)["caller"],
        format!("session {id}")
    );
    assert_eq!(find("GET", "/v1/sessions", 401)["caller"], "-");
    assert!(
        access.iter().all(|a| a["duration_ms"].is_u64()),
        "{access:#?}"
    );
    let stderr = serve.stderr();
    for secret in [
        ADMIN_TOKEN,
        view["token"].as_str().unwrap(),
        canary,
        GITHUB_TOKEN,
    ] {
        assert!(!stderr.contains(secret), "{secret:?} reached the log");
    }
    drop(serve);
}

/// A `listen` address another program holds is named, with what to do.
#[test]
fn serve_names_the_address_already_in_use() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(dir.path(), format!("listen = \"{address}\"\n"));
    let stderr = common::serve_as(&config, crate::crash_safety::ADMIN_TOKEN, "5c").refused();
    assert!(
        stderr.contains(&format!("{address} is already in use"))
            && stderr.contains("set `listen` to another address"),
        "{stderr}"
    );
    drop(taken);
}

/// In JSON, a host that cannot start says why in a JSON line too.
#[test]
fn a_start_that_fails_is_a_json_line_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        "log_format = \"json\"\nmetrics_token_env = \"SCOUT_METRICS_TOKEN\"\nlisten = \"127.0.0.1:0\"\n",
    );
    let stderr = common::serve_as(&config, crate::crash_safety::ADMIN_TOKEN, "5c")
        .envs(&[("SCOUT_METRICS_TOKEN", METRICS_TOKEN)])
        .refused();
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let stopped = lines
        .iter()
        .find(|l| l["fields"]["message"] == "serve stopped")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        stopped["fields"]["error"]
            .as_str()
            .unwrap()
            .contains("metrics_token_env guards metrics_listen"),
        "{stopped}"
    );
}

/// A `metrics_listen` address another program holds is named.
#[test]
fn serve_names_a_metrics_address_it_cannot_bind() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        format!("listen = \"127.0.0.1:0\"\nmetrics_listen = \"{address}\"\n"),
    );
    let stderr = common::serve_as(&config, crate::crash_safety::ADMIN_TOKEN, "5c").refused();
    assert!(
        stderr.contains(&format!("metrics_listen = \"{address}\" cannot be bound")),
        "{stderr}"
    );
    drop(taken);
}
