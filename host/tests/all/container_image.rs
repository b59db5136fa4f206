//! The container image, built and run as an operator would: the static
//! (musl) binary built with cargo, the image from the repository's
//! `Containerfile` with `podman build`, run with `podman run` on a
//! read-only root against a PostgreSQL this test starts, with the GitHub
//! component mounted read-only and the fake GitHub on loopback.
//!
//! - `/readyz` answers on the main listener and on the probe listener, the
//!   metrics listener answers `/metrics`, and the image's `HEALTHCHECK`
//!   (`scout-host health`) passes under `podman healthcheck run`; asked
//!   about an address nobody answers, `health` exits 1 and says why.
//! - A session opened over the admin API makes a read through MCP that
//!   reaches the fake GitHub with the brand's token.
//! - The container runs as the image's non-root user on a read-only root:
//!   writing to `/` fails (as that user and as root), writing to its state
//!   volume works.
//! - The image holds the binary and nothing else of size; SIGTERM drains
//!   the host and it exits 0.
//!
//! Needs podman, runc, musl-tools and the musl Rust target (see
//! scout_tests::podman); skipped without them, failed under `CI=true`.
//! Figures (binary and image size, `podman run` to `/readyz`) on stderr.

use super::crash_safety::{ADMIN_TOKEN, Admin, GITHUB_TOKEN, Mcp, ok_text, wait_for};
use scout_tests::fake_github::FakeGitHub;
use scout_tests::podman::{self, Container, Image};
use serde_json::{Value, json};
use std::time::Instant;

/// The store key the container is given (64 hex digits).
const STORE_KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The user the image runs as (Containerfile's `USER`).
const IMAGE_USER: &str = "65532:65532";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_serves_a_session_against_postgres_as_non_root_on_a_read_only_root() {
    if podman::available().is_none() {
        return;
    }
    let Some(db) = scout_tests::pg::database_or_skip("container image") else {
        return;
    };

    let binary = tokio::task::spawn_blocking(|| podman::static_binary("container"))
        .await
        .unwrap();
    let binary_bytes = std::fs::metadata(&binary).unwrap().len();
    let tag = format!("localhost/scout-host-test:{}", std::process::id());
    let image = tokio::task::spawn_blocking({
        let binary = binary.clone();
        move || Image::build(&binary, &tag)
    })
    .await
    .unwrap();

    // What the image says about itself.
    let config: Value = serde_json::from_str(&image.inspect("{{json .Config}}")).unwrap();
    assert_eq!(config["User"], IMAGE_USER, "{config}");
    for port in ["7420/tcp", "7421/tcp", "9464/tcp"] {
        assert!(
            config["ExposedPorts"].get(port).is_some(),
            "{port} exposed: {config}"
        );
    }
    assert_eq!(
        config["Labels"]["org.opencontainers.image.title"], "scout-host",
        "{config}"
    );
    let healthcheck: Value = serde_json::from_str(&image.inspect("{{json .HealthCheck}}")).unwrap();
    assert_eq!(
        healthcheck["Test"],
        json!(["CMD", "/usr/local/bin/scout-host", "health"]),
        "the HEALTHCHECK survives the build (--format docker): {healthcheck}"
    );
    // The binary and nothing else of size: no base image, no shell.
    let image_bytes: u64 = image.inspect("{{.Size}}").parse().unwrap();
    assert!(
        image_bytes >= binary_bytes && image_bytes < binary_bytes + 64 * 1024,
        "an image of {image_bytes} bytes for a binary of {binary_bytes}"
    );

    // The deployment around it: PostgreSQL, the fake GitHub, the config.
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let [listen, probe, metrics] = [(); 3].map(|_| scout_tests::haproxy::free_port());
    let dir = tempfile::tempdir().unwrap();
    let config_file = dir.path().join("serve.toml");
    std::fs::write(
        &config_file,
        format!(
            "listen = \"127.0.0.1:{listen}\"\nprobe_listen = \"127.0.0.1:{probe}\"\n\
             metrics_listen = \"127.0.0.1:{metrics}\"\nrequire_review = true\n\
             admin_token_env = \"SCOUT_ADMIN_TOKEN\"\nstore_key_env = \"SCOUT_STORE_KEY\"\n\n\
             [store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\n\n\
             [connectors.github]\ncomponent = \"/components/github.wasm\"\norigin = {:?}\n\
             credential = \"bearer\"\nallow_private_network = true\n",
            github.origin()
        ),
    )
    .unwrap();
    let component = std::path::Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .expect("the GitHub component was built");
    let mut args: Vec<String> = vec![
        "--read-only".into(),
        "-v".into(),
        format!("{}:/etc/scout-host/serve.toml:ro", config_file.display()),
        "-v".into(),
        format!("{}:/components/github.wasm:ro", component.display()),
        "-e".into(),
        format!("SCOUT_ADMIN_TOKEN={ADMIN_TOKEN}"),
        "-e".into(),
        format!("SCOUT_STORE_KEY={STORE_KEY}"),
        "-e".into(),
        format!("SCOUT_PG_URL={}", db.url()),
        "-e".into(),
        format!("SCOUT_HEALTH_URL=http://127.0.0.1:{probe}/readyz"),
    ];
    // The cluster's unix socket, at the same path inside.
    if !db.socket_dir().as_os_str().is_empty() {
        let socket_dir = db.socket_dir().display().to_string();
        args.extend(["-v".into(), format!("{socket_dir}:{socket_dir}")]);
    }

    let name = format!("scout-host-test-{}", std::process::id());
    let started = Instant::now();
    let container = tokio::task::spawn_blocking({
        let tag = image.tag.clone();
        move || Container::run(&name, &args, &tag)
    })
    .await
    .unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let ready_url = format!("http://127.0.0.1:{probe}/readyz");
    wait_for(
        "/readyz 200 on the probe listener",
        crate::common::EVENTUALLY,
        async || {
            let answer = http.get(&ready_url).send().await.ok()?;
            (answer.status() == 200).then_some(())
        },
    )
    .await;
    eprintln!(
        "container_image: binary {binary_bytes} bytes, image {image_bytes} bytes, \
         podman run to /readyz 200 in {} ms",
        started.elapsed().as_millis()
    );
    let base = format!("http://127.0.0.1:{listen}");
    let main_ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(main_ready.status(), 200, "{}", container.logs());
    let scraped = http
        .get(format!("http://127.0.0.1:{metrics}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), 200);
    assert!(scraped.text().await.unwrap().contains("# EOF"));

    // The image's own health check, as podman runs it; and `health`
    // refusing an address nobody answers.
    let health = podman::output(
        "podman healthcheck run",
        podman::podman().args(["healthcheck", "run", &container.name]),
    );
    assert!(
        health.status.success(),
        "healthcheck: {}{}",
        String::from_utf8_lossy(&health.stdout),
        String::from_utf8_lossy(&health.stderr)
    );
    let nobody = format!(
        "http://127.0.0.1:{}/readyz",
        scout_tests::haproxy::free_port()
    );
    let unhealthy = container.exec(
        &[],
        &["/usr/local/bin/scout-host", "health", "--url", &nobody],
    );
    assert_eq!(unhealthy.status.code(), Some(1));
    let reason = String::from_utf8_lossy(&unhealthy.stderr);
    assert!(
        reason.contains(&nobody) && reason.contains("no answer"),
        "{reason}"
    );

    // A session and a read through MCP, reaching the fake GitHub.
    let admin = Admin {
        http: http.clone(),
        base: base.clone(),
    };
    admin.set_up().await;
    let view = admin.session().await;
    let mcp = Mcp::new(&http, &view).connect().await;
    let reply = mcp
        .request(
            "tools/call",
            json!({"name": "github_read_file", "arguments":
                {"owner": "octo", "repo": "hello", "path": "README.md"}}),
        )
        .await
        .unwrap();
    let text = ok_text(&reply).unwrap_or_else(|| panic!("a read answered: {reply}"));
    assert!(text.contains("# Hello"), "{text}");
    let reads: Vec<_> = github
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/contents/README.md"))
        .collect();
    assert_eq!(reads.len(), 1, "one read upstream");
    assert_eq!(
        reads[0].header("authorization"),
        Some(format!("Bearer {GITHUB_TOKEN}").as_str())
    );

    // Non-root on a read-only root.
    assert_eq!(container.inspect("{{.Config.User}}"), IMAGE_USER);
    assert_eq!(container.inspect("{{.HostConfig.ReadonlyRootfs}}"), "true");
    let processes = podman::checked(
        "podman top",
        podman::podman().args(["top", &container.name, "huser", "user"]),
    );
    let users: Vec<&str> = processes.lines().skip(1).collect();
    assert!(
        !users.is_empty()
            && users
                .iter()
                .all(|line| !line.split_whitespace().any(|u| u == "0" || u == "root")),
        "every process non-root: {processes}"
    );
    for (user, what) in [(IMAGE_USER, "the image's user"), ("0", "root")] {
        let wrote = container.exec(
            &["--user", user, "-e", "COSIGN_PASSWORD=not-a-secret"],
            &["/usr/local/bin/scout-host", "keygen", "--output", "/probe"],
        );
        let stderr = String::from_utf8_lossy(&wrote.stderr);
        assert!(!wrote.status.success(), "{what} wrote to /: {stderr}");
        assert!(stderr.contains("Read-only file system"), "{what}: {stderr}");
    }
    let state = container.exec(
        &["-e", "COSIGN_PASSWORD=not-a-secret"],
        &[
            "/usr/local/bin/scout-host",
            "keygen",
            "--output",
            "/var/lib/scout-host/probe",
        ],
    );
    assert!(
        state.status.success(),
        "the state volume is writable: {}",
        String::from_utf8_lossy(&state.stderr)
    );

    // SIGTERM: the host drains and exits 0.
    podman::checked(
        "podman stop",
        podman::podman().args(["stop", "--time", "60", &container.name]),
    );
    assert_eq!(
        container.inspect("{{.State.ExitCode}}"),
        "0",
        "{}",
        container.logs()
    );
    drop(container);
    drop(image);
}
