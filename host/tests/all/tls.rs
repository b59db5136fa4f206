//! TLS in the process (`[tls]`), through the real `serve` binary.
//!
//! Certificates are made by `openssl` for each test: an authority and
//! leaves for 127.0.0.1 and localhost, each with its own serial and key,
//! served from a folder reached through a symlink the way Kubernetes
//! mounts a Secret (`live -> gen-N`), so a rotation is the symlink swap a
//! kubelet makes. The main listener serves HTTPS (HTTP/1.1 and h2) to
//! clients trusting the authority and nothing to plain HTTP; the official
//! Python client opens a session and calls a tool over it; a new pair is
//! served to new connections without a restart; a broken one leaves the
//! old pair served and counts in `scout_tls_reload_failures_total`; a
//! missing key file stops the start, naming it.

use crate::common::{self, EVENTUALLY};
use crate::crash_safety::{ADMIN_TOKEN, GITHUB_TOKEN};
use reqwest::header::AUTHORIZATION;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The `openssl` configuration the certificates are made with: no system
/// defaults, only these extensions.
const OPENSSL_CONFIG: &str = "[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[leaf]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
";

/// A throwaway authority in `dir/pki`, and the leaves it signs.
struct Pki {
    dir: PathBuf,
}

/// `None`, with the reason on stderr, when `openssl` or `curl` is not on
/// PATH and `CI` is not `true`; on CI their absence fails the test.
fn tools_or_skip() -> bool {
    for (tool, version) in [("openssl", "version"), ("curl", "--version")] {
        let found = Command::new(tool)
            .arg(version)
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            let why = format!("no {tool} on PATH; install it (`apt-get install {tool}`)");
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("CI=true, but the TLS tests cannot run: {why}");
            }
            eprintln!("skipped a TLS test: {why}");
            return false;
        }
    }
    true
}

fn run(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

impl Pki {
    fn new(root: &Path) -> Pki {
        let dir = root.join("pki");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("openssl.cnf"), OPENSSL_CONFIG).unwrap();
        let pki = Pki { dir };
        pki.openssl(&[
            "req",
            "-x509",
            "-config",
            "openssl.cnf",
            "-extensions",
            "ca",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "7",
            "-subj",
            "/CN=scout-tls-test-authority",
        ]);
        pki
    }

    fn openssl(&self, args: &[&str]) {
        run(Command::new("openssl").current_dir(&self.dir).args(args));
    }

    /// The authority's certificate (PEM), what clients trust.
    fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// A new leaf with serial `serial` and a key of its own: its
    /// certificate and key files.
    fn leaf(&self, serial: u32) -> (PathBuf, PathBuf) {
        let (key, csr, cert) = (
            format!("leaf-{serial}.key"),
            format!("leaf-{serial}.csr"),
            format!("leaf-{serial}.pem"),
        );
        self.openssl(&[
            "req",
            "-new",
            "-config",
            "openssl.cnf",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            "/CN=127.0.0.1",
        ]);
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            &serial.to_string(),
            "-days",
            "7",
            "-extfile",
            "openssl.cnf",
            "-extensions",
            "leaf",
            "-out",
            &cert,
        ]);
        (self.dir.join(cert), self.dir.join(key))
    }
}

/// The DER of a PEM certificate file, to compare with what is served.
fn der(cert_file: &Path) -> Vec<u8> {
    CertificateDer::from_pem_file(cert_file)
        .unwrap_or_else(|e| panic!("{}: {e}", cert_file.display()))
        .to_vec()
}

/// The folder `serve` reads its pair from, `tls/live`, a symlink to one
/// generation `tls/gen-N` as a Kubernetes Secret volume is.
struct Mounted {
    tls: PathBuf,
    generation: u32,
}

impl Mounted {
    fn new(dir: &Path, cert: &Path, key: &Path) -> Mounted {
        let mut mounted = Mounted {
            tls: dir.join("tls"),
            generation: 0,
        };
        std::fs::create_dir_all(&mounted.tls).unwrap();
        mounted.swap_in(cert, key);
        mounted
    }

    /// Writes the pair into a new generation and swaps `live` over to it
    /// in one rename, as the kubelet does.
    fn swap_in(&mut self, cert: &Path, key: &Path) {
        self.generation += 1;
        let generation = format!("gen-{}", self.generation);
        let folder = self.tls.join(&generation);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::copy(cert, folder.join("cert.pem")).unwrap();
        std::fs::copy(key, folder.join("key.pem")).unwrap();
        let next = self.tls.join("live.next");
        let _ = std::fs::remove_file(&next);
        std::os::unix::fs::symlink(&generation, &next).unwrap();
        std::fs::rename(&next, self.tls.join("live")).unwrap();
    }
}

/// A configuration serving the GitHub component to `github` over TLS from
/// `tls/live`, its files named relative to the configuration file.
fn write_config(dir: &Path, github: &str, key_file: &str) -> PathBuf {
    let component = Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .expect("the GitHub component was built");
    scout_tests::serve::write_config(
        dir,
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\nrequire_review = false\n\
             probe_listen = \"127.0.0.1:0\"\nshutdown_grace_secs = 600\n\n\
             [tls]\ncert_file = \"tls/live/cert.pem\"\nkey_file = {key_file:?}\nreload_secs = 1\n\n\
             [connectors.github]\ncomponent = {:?}\norigin = {github:?}\nallow_private_network = true\n",
            component.display().to_string(),
        ),
    )
}

/// A client trusting only the test's authority, making a new connection
/// for every request, and keeping each response's peer certificate.
fn trusting(ca_file: &Path) -> reqwest::Client {
    let ca = std::fs::read(ca_file).unwrap();
    reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .tls_info(true)
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// The certificate the host serves a new connection now (DER).
async fn served_certificate(ca_file: &Path, base: &str) -> Vec<u8> {
    let response = trusting(ca_file)
        .get(format!("{base}/livez"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {base}/livez over TLS: {e:?}"));
    assert_eq!(response.status(), 200);
    response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|info| info.peer_certificate())
        .expect("the peer certificate")
        .to_vec()
}

/// Polls `what` until it holds, within [`EVENTUALLY`] (a bound only a
/// hang reaches: each reload is a second apart).
async fn eventually<F: AsyncFnMut() -> bool>(what: &str, mut holds: F) {
    let started = Instant::now();
    while !holds().await {
        assert!(started.elapsed() < EVENTUALLY, "{what}: never happened");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `scout_tls_reload_failures_total` now, from `/metrics` over TLS.
async fn reload_failures(http: &reqwest::Client, base: &str) -> u64 {
    let text = http
        .get(format!("{base}/metrics"))
        .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("scout_tls_reload_failures_total "))
        .unwrap_or_else(|| panic!("the failure counter in /metrics: {text}"))
        .trim()
        .parse()
        .unwrap()
}

/// `curl --http2` of `url`: the HTTP version it spoke and the status.
fn curl_http2(ca_file: &Path, url: &str) -> String {
    let output = Command::new("curl")
        .args([
            "--http2",
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
        ])
        .arg("--cacert")
        .arg(ca_file)
        .args(["-H", &format!("Authorization: Bearer {ADMIN_TOKEN}")])
        .arg(url)
        .output()
        .expect("run curl");
    assert!(
        output.status.success(),
        "curl {url}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_serves_the_admin_api_and_mcp_and_rotates_its_certificate_without_a_restart() {
    if !tools_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let (first_cert, first_key) = pki.leaf(1001);
    let mut mounted = Mounted::new(dir.path(), &first_cert, &first_key);
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let config = write_config(dir.path(), &github.origin(), "tls/live/key.pem");
    let mut serve = common::serve(&config).start();
    let base = serve.base.clone();
    assert!(base.starts_with("https://127.0.0.1:"), "{base}");
    let ca = pki.ca_file();
    let http = trusting(&ca);

    // (a) The probes and the admin API over HTTPS.
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let (status, body) = admin(&http, &base, reqwest::Method::GET, "/v1/sessions", None).await;
    assert_eq!(status, 200, "{body}");
    // h2 is offered (ALPN) and serves the same router.
    assert_eq!(curl_http2(&ca, &format!("{base}/readyz")), "2 200");
    assert_eq!(curl_http2(&ca, &format!("{base}/v1/sessions")), "2 200");
    // Plain HTTP to the TLS port gets no answer.
    let plain = base.replacen("https://", "http://", 1);
    let refused = reqwest::Client::new()
        .get(format!("{plain}/readyz"))
        .timeout(Duration::from_secs(30))
        .send()
        .await;
    assert!(refused.is_err(), "plain HTTP was answered: {refused:?}");
    // A client that does not trust the authority refuses the host.
    let stranger = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .build()
        .unwrap()
        .get(format!("{base}/readyz"))
        .send()
        .await;
    assert!(stranger.is_err(), "{stranger:?}");
    // The probe listener stays plain HTTP.
    let probes = serve
        .stderr()
        .lines()
        .find_map(|l| l.strip_prefix("scout-host: probes (/livez, /readyz) on "))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| panic!("a probe listener line: {}", serve.stderr()));
    assert!(probes.starts_with("http://"), "{probes}");
    let probed = reqwest::get(format!("{probes}/readyz")).await.unwrap();
    assert_eq!(probed.status(), 200);

    // (b) The official Python client: a session and a tool call over HTTPS.
    let (status, body) = admin(
        &http,
        &base,
        reqwest::Method::PUT,
        "/v1/brands/acme/connections/github",
        Some(json!({"secret": GITHUB_TOKEN})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, session) = admin(
        &http,
        &base,
        reqwest::Method::POST,
        "/v1/sessions",
        Some(json!({"brand": "acme", "role": "person-chat"})),
    )
    .await;
    assert_eq!(status, 201, "{session}");
    let url = session["mcp"]["github"].as_str().unwrap().to_string();
    assert!(
        url.starts_with(&format!("{base}/mcp/")),
        "the endpoint is announced under https: {url}"
    );
    let calls = json!([{"tool": "github_read_file", "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"}}]);
    let summary = python_calls(&ca, &url, session["token"].as_str().unwrap(), &calls).await;
    let answer = &summary["answers"][0];
    assert_eq!(answer["is_error"], false, "{summary}");
    assert_eq!(github.requests().len(), 1, "the read reached GitHub once");

    // (c) Rotation: a new leaf (new serial, new key) swapped in is what a
    // new connection gets, from the same process.
    assert_eq!(served_certificate(&ca, &base).await, der(&first_cert));
    let (second_cert, second_key) = pki.leaf(1002);
    mounted.swap_in(&second_cert, &second_key);
    let second = der(&second_cert);
    eventually(
        "the new certificate served to a new connection",
        async || served_certificate(&ca, &base).await == second,
    )
    .await;
    assert!(
        serve.exited_within(Duration::ZERO).await.is_none(),
        "the host never restarted"
    );

    // (d) A replacement whose key is not the certificate's: counted, and
    // the pair in use stays served.
    let failed_before = reload_failures(&http, &base).await;
    let (third_cert, _) = pki.leaf(1003);
    mounted.swap_in(&third_cert, &first_key);
    eventually("the broken pair counted", async || {
        reload_failures(&http, &base).await > failed_before
    })
    .await;
    assert_eq!(
        served_certificate(&ca, &base).await,
        second,
        "the pair in use is still served"
    );
    let (status, body) = admin(&http, &base, reqwest::Method::GET, "/v1/sessions", None).await;
    assert_eq!(status, 200, "{body}");
    assert!(serve.exited_within(Duration::ZERO).await.is_none());

    // A SIGTERM drains as on plain HTTP: a kept-alive TLS connection is
    // closed by the graceful shutdown, not held until the grace (600 s,
    // beyond the wait's bound) cuts it, and the host exits 0.
    let kept_alive = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&std::fs::read(&ca).unwrap()).unwrap())
        .build()
        .unwrap();
    let ready = kept_alive
        .get(format!("{base}/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    serve.signal("TERM");
    let status = serve
        .exited_within(EVENTUALLY)
        .await
        .expect("the host stops after a SIGTERM");
    assert!(status.success(), "{status:?}\n{}", serve.stderr());
    drop(kept_alive);
}

#[test]
fn a_missing_key_file_stops_the_start_naming_it() {
    if !tools_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let (cert, key) = pki.leaf(2001);
    Mounted::new(dir.path(), &cert, &key);
    let config = write_config(dir.path(), "http://127.0.0.1:9", "tls/live/absent.key");
    let stderr = common::serve(&config).refused();
    let named = dir.path().join("tls/live/absent.key");
    assert!(
        stderr.contains(&format!("key_file = \"{}\"", named.display())),
        "{stderr}"
    );
    assert!(stderr.contains("set it to a readable PEM file"), "{stderr}");
}

async fn admin(
    http: &reqwest::Client,
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http
        .request(method, format!("{base}{path}"))
        .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// `tests/mcp_client/calls.py` with `SSL_CERT_FILE` naming the authority
/// (httpx trusts it then): its JSON summary.
async fn python_calls(ca_file: &Path, url: &str, token: &str, calls: &Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/calls.py");
    let mut command = Command::new(scout_tests::python());
    command
        .arg(&script)
        .args([
            "--url",
            url,
            "--token",
            token,
            "--calls",
            &calls.to_string(),
        ])
        .env("SSL_CERT_FILE", ca_file);
    let output = tokio::task::spawn_blocking(move || command.output().expect("run calls.py"))
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "calls.py over https failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("a JSON summary");
    assert_eq!(summary["ok"], true, "{summary}");
    summary
}
