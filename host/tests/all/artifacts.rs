//! Connectors as OCI artifacts (issue 33 item 1), through the real
//! `scout-host` binary against a real registry on loopback (the
//! distribution project's `docker-registry`) and a second client nobody here
//! wrote (ORAS's Python client): each reads what the other wrote; every byte
//! is checked against its digest before it is cached; a tag is resolved to a
//! digest once, recorded in the store, and every later start runs those
//! bytes however the tag moves.

use super::common::EVENTUALLY;
use super::crash_safety::{Admin, wait_for};
use crate::common;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `scout-host ARGS` with its artifact cache at `cache`: exit code, stdout
/// (one JSON line when it succeeded) and stderr.
pub(super) fn scout(cache: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(args)
        .env("SCOUT_ARTIFACT_CACHE", cache)
        .env_remove("SCOUT_REGISTRY_USERNAME")
        .env_remove("SCOUT_REGISTRY_PASSWORD")
        .output()
        .expect("run scout-host");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `scout-host push FILE REFERENCE --plain-http`, which must succeed: its JSON.
pub(super) fn push(cache: &Path, file: &str, reference: &str) -> Value {
    let (code, pushed, stderr) = scout(
        cache,
        &[
            "push",
            file,
            reference,
            "--plain-http",
            "--allow-private-network",
        ],
    );
    assert_eq!(code, 0, "push {file} {reference}: {stderr}");
    pushed
}

/// `scout-host pull REFERENCE --output OUT --plain-http`: exit code, JSON,
/// stderr.
fn pull(cache: &Path, reference: &str, out: &Path) -> (i32, Value, String) {
    scout(
        cache,
        &[
            "pull",
            reference,
            "--output",
            out.to_str().unwrap(),
            "--plain-http",
            "--allow-private-network",
        ],
    )
}

/// `scout-host serve --config CONFIG` that must refuse to start, with
/// `cache` as its artifact cache: what it said on stderr.
fn serve_refused(config: &Path, cache: &Path) -> String {
    common::serve_as(config, super::crash_safety::ADMIN_TOKEN, "5c")
        .compile_cache()
        .env("SCOUT_ARTIFACT_CACHE", cache)
        .refused()
}

/// ORAS's Python client (`tests/mcp_client/oci_interop.py`): its JSON line.
fn oras(args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/oci_interop.py");
    let out = Command::new(scout_tests::python())
        .arg(script)
        .args(args)
        .output()
        .expect("run oci_interop.py");
    assert!(
        out.status.success(),
        "oci_interop.py {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}

/// Every file under `dir`.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

#[test]
fn an_artifact_the_host_pushes_another_client_reads_and_the_reverse() {
    let dir = tempfile::tempdir().unwrap();
    let registry = scout_tests::Registry::start(dir.path());
    let cache = dir.path().join("cache");
    let addr = &registry.address.clone();
    let github = std::fs::read(scout_tests::components::GITHUB).unwrap();

    // The host publishes; ORAS reads the WebAssembly layout back.
    let target = format!("oci://{addr}/connectors/github:1");
    let pushed = push(&cache, scout_tests::components::GITHUB, &target);
    let digest = pushed["digest"].as_str().unwrap().to_string();
    assert_eq!(
        pushed["pinned"],
        format!("oci://{addr}/connectors/github@{digest}")
    );
    assert_eq!(pushed["layer"], sha256(&github));
    let read_back = dir.path().join("read-back.wasm");
    let seen = oras(&[
        "read",
        "--registry",
        addr,
        "--target",
        "connectors/github:1",
        "--out",
        read_back.to_str().unwrap(),
    ]);
    assert_eq!(
        seen["media_type"], "application/vnd.oci.image.manifest.v1+json",
        "{seen}"
    );
    assert_eq!(
        seen["config_media_type"], "application/vnd.wasm.config.v0+json",
        "{seen}"
    );
    assert_eq!(seen["layers"].as_array().unwrap().len(), 1, "{seen}");
    assert_eq!(
        seen["layers"][0]["media_type"], "application/wasm",
        "{seen}"
    );
    assert_eq!(seen["config"]["architecture"], "wasm", "{seen}");
    assert_eq!(seen["config"]["os"], "wasip2", "{seen}");
    assert_eq!(seen["config"]["layerDigests"][0], sha256(&github), "{seen}");
    assert_eq!(std::fs::read(&read_back).unwrap(), github);

    // A reviewer inspects the artifact itself: pulled, checked, inspected.
    let (code, report, stderr) = scout(
        &cache,
        &[
            "inspect",
            &target,
            "--json",
            "--plain-http",
            "--allow-private-network",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(report["connector"]["name"], "github", "{report}");
    assert!(
        report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "github_read_file"),
        "{report}"
    );
    assert!(
        stderr.contains(&format!("oci://{addr}/connectors/github@{digest}")),
        "{stderr}"
    );

    // ORAS publishes; the host pulls, checks and caches it.
    let firecrawl = std::fs::read(scout_tests::components::FIRECRAWL).unwrap();
    let theirs = oras(&[
        "push",
        "--registry",
        addr,
        "--target",
        "connectors/firecrawl:2",
        "--file",
        scout_tests::components::FIRECRAWL,
    ]);
    let their_digest = theirs["digest"].as_str().unwrap().to_string();
    let output = dir.path().join("firecrawl.wasm");
    let (code, pulled, stderr) = pull(
        &cache,
        &format!("oci://{addr}/connectors/firecrawl:2"),
        &output,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(pulled["digest"], their_digest.as_str(), "{pulled}");
    assert_eq!(pulled["cached"], false);
    assert_eq!(std::fs::read(&output).unwrap(), firecrawl);
    // The cache is content-addressed: the component under its own digest.
    assert!(
        files_under(&cache)
            .iter()
            .any(|f| f.ends_with(sha256(&firecrawl).trim_start_matches("sha256:"))),
        "{:?}",
        files_under(&cache)
    );

    // Pinned at a digest the cache holds, a pull asks no registry at all.
    drop(registry);
    let again = dir.path().join("again.wasm");
    let (code, cached, stderr) = pull(
        &cache,
        &format!("oci://{addr}/connectors/firecrawl@{their_digest}"),
        &again,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(cached["cached"], true, "{cached}");
    assert_eq!(std::fs::read(&again).unwrap(), firecrawl);
}

#[test]
fn a_tampered_layer_or_another_layout_is_refused_and_nothing_is_cached() {
    let dir = tempfile::tempdir().unwrap();
    let registry = scout_tests::Registry::start(dir.path());
    let addr = registry.address.as_str();
    let publisher_cache = dir.path().join("publisher");
    let target = format!("oci://{addr}/connectors/github:1");
    let pushed = push(&publisher_cache, scout_tests::components::GITHUB, &target);

    // Plain HTTP is used only where the caller says so.
    let cache = dir.path().join("cache");
    let out = dir.path().join("out.wasm");
    let (code, _, stderr) = scout(
        &cache,
        &[
            "pull",
            &target,
            "--output",
            out.to_str().unwrap(),
            "--allow-private-network",
        ],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("the registry answered"), "{stderr}");

    // A registry on loopback is asked nothing unless the caller allows its
    // network, as for every request the host makes.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let silent = listener.local_addr().unwrap();
    let (code, _, stderr) = scout(
        &cache,
        &[
            "pull",
            &format!("oci://{silent}/connectors/github:1"),
            "--output",
            out.to_str().unwrap(),
            "--plain-http",
        ],
    );
    assert_ne!(code, 0);
    assert!(
        stderr.contains("127.0.0.1 is a") && stderr.contains("allow_private_network = true"),
        "{stderr}"
    );
    assert!(
        listener.accept().is_err(),
        "no connection reached the registry"
    );

    // The layer's bytes are changed in the registry's storage.
    let blob = registry.blob_file(pushed["layer"].as_str().unwrap());
    let mut bytes = std::fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, &bytes).unwrap();
    let (code, _, stderr) = pull(&cache, &target, &out);
    assert_ne!(code, 0, "a tampered layer is refused");
    assert!(
        stderr.contains("component layer does not match its digest"),
        "{stderr}"
    );
    assert!(files_under(&cache).is_empty(), "{:?}", files_under(&cache));
    assert!(!out.exists());

    // Pinned at another digest than the registry's manifest has.
    let wrong = format!("oci://{addr}/connectors/github@sha256:{}", "0".repeat(64));
    let (code, _, stderr) = pull(&cache, &wrong, &out);
    assert_ne!(code, 0, "{stderr}");
    assert!(files_under(&cache).is_empty(), "{:?}", files_under(&cache));

    // An artifact in another layout (a plain file with ORAS's defaults) is
    // not a component artifact.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a component").unwrap();
    oras(&[
        "push",
        "--registry",
        addr,
        "--target",
        "notes/readme:1",
        "--file",
        text.to_str().unwrap(),
        "--media-type",
        "text/plain",
        "--config-media-type",
        "application/vnd.oci.image.config.v1+json",
    ]);
    let (code, _, stderr) = pull(&cache, &format!("oci://{addr}/notes/readme:1"), &out);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("not a WebAssembly component artifact"),
        "{stderr}"
    );
    assert!(files_under(&cache).is_empty(), "{:?}", files_under(&cache));

    // A file that is not a component is not published.
    let (code, _, stderr) = scout(
        &cache,
        &[
            "push",
            text.to_str().unwrap(),
            &format!("oci://{addr}/notes/other:1"),
            "--plain-http",
            "--allow-private-network",
        ],
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("not a WebAssembly component"), "{stderr}");
}

/// The digest recorded for `reference` in the SQLite store at `db`.
fn recorded_pin(db: &Path, reference: &str) -> Option<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT digest FROM artifact_pins WHERE reference = ?1",
        [reference],
        |row| row.get(0),
    )
    .ok()
}

#[tokio::test]
async fn serve_runs_the_digest_a_tag_was_first_resolved_to_however_the_tag_moves() {
    let dir = tempfile::tempdir().unwrap();
    let registry = scout_tests::Registry::start(dir.path());
    let addr = registry.address.clone();
    let cache = dir.path().join("cache");
    let tag = format!("oci://{addr}/connectors/github:stable");
    let first = push(&cache, scout_tests::components::GITHUB, &tag);
    let first_digest = first["digest"].as_str().unwrap().to_string();
    let config = scout_tests::serve::write_config(
        dir.path(),
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\n\n[registries.\"{addr}\"]\nplain_http = true\nallow_private_network = true\n\n[connectors.github]\ncomponent = \"{tag}\"\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n"
        ),
    );
    let env = [("SCOUT_ARTIFACT_CACHE", cache.to_string_lossy().into_owned())];
    let serve = common::serve(&config).envs(&env).start();
    let http = reqwest::Client::new();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    let (status, reviews) = admin
        .request(reqwest::Method::GET, "/v1/reviews", None)
        .await;
    assert_eq!(status, 200, "{reviews}");
    assert!(
        reviews["connectors"]["github"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["tool"] == "github_read_file")),
        "the component from the registry is served: {reviews}"
    );
    let banner = format!("running {first_digest}");
    wait_for("the banner naming the digest", EVENTUALLY, async || {
        serve.stderr().contains(&banner).then_some(())
    })
    .await;
    drop(serve);
    let db = dir.path().join("scout.db");
    assert_eq!(
        recorded_pin(&db, &tag).as_deref(),
        Some(first_digest.as_str())
    );

    // The tag moves to other bytes (another connector altogether): a host
    // started on the same store still runs the recorded digest.
    let moved = push(
        &dir.path().join("other-cache"),
        scout_tests::components::FIRECRAWL,
        &tag,
    );
    assert_ne!(moved["digest"], first_digest.as_str());
    let serve = common::serve(&config).envs(&env).start();
    let banner = format!("running {first_digest}");
    wait_for("the banner naming the digest", EVENTUALLY, async || {
        serve.stderr().contains(&banner).then_some(())
    })
    .await;
    drop(serve);
    assert_eq!(
        recorded_pin(&db, &tag).as_deref(),
        Some(first_digest.as_str())
    );

    // The audit reads the same deployment offline: the recorded digest's
    // bytes from the shared cache, no registry asked.
    drop(registry);
    let audit_with = |cache: &Path| {
        Command::new(env!("CARGO_BIN_EXE_scout-host"))
            .args(["audit", "--role", "person-chat", "--json", "--config"])
            .arg(&config)
            .env("SCOUT_ARTIFACT_CACHE", cache)
            .env("SCOUT_STORE_KEY", "5c".repeat(32))
            .output()
            .unwrap()
    };
    let audit = audit_with(&cache);
    assert!(
        audit.status.success(),
        "{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    let report: Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert!(
        report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "mcp__github__github_read_file"),
        "{report}"
    );
    // With an empty cache it names the connector and what to do.
    let refused = audit_with(&dir.path().join("empty-cache"));
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("connector `github`") && stderr.contains("`scout-host pull` it"),
        "{stderr}"
    );

    // A reference the configuration cannot use is refused at start, naming
    // the connector and what to write.
    std::fs::write(
        &config,
        "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\n\n[connectors.github]\ncomponent = \"oci://github:1\"\norigin = \"http://127.0.0.1:9\"\n",
    )
    .unwrap();
    let stderr = serve_refused(&config, &dir.path().join("cache"));
    assert!(
        stderr.contains("connectors.github.component") && stderr.contains("oci://REGISTRY/"),
        "{stderr}"
    );
}

/// `scout-host keygen` under `dir`: the PREFIX's `.key` and `.pub`.
pub(super) fn keygen(dir: &Path, prefix: &str) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["keygen", "--output"])
        .arg(dir.join(prefix))
        .env("COSIGN_PASSWORD", SIGNING_PASSWORD)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = dir.join(format!("{prefix}.key"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600,
        "the private key is its owner's alone"
    );
    (
        key.display().to_string(),
        dir.join(format!("{prefix}.pub")).display().to_string(),
    )
}

const SIGNING_PASSWORD: &str = "correct horse battery staple";

/// `scout-host sign REFERENCE --key KEY --plain-http`.
pub(super) fn sign(cache: &Path, reference: &str, key: &str) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args([
            "sign",
            reference,
            "--key",
            key,
            "--plain-http",
            "--allow-private-network",
        ])
        .env("SCOUT_ARTIFACT_CACHE", cache)
        .env("COSIGN_PASSWORD", SIGNING_PASSWORD)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn only_an_artifact_signed_by_a_configured_key_is_pulled_or_served() {
    let dir = tempfile::tempdir().unwrap();
    let registry = scout_tests::Registry::start(dir.path());
    let addr = registry.address.clone();
    let (signer_key, signer_pub) = keygen(dir.path(), "signer");
    let (other_key, _) = keygen(dir.path(), "other");
    let publisher = dir.path().join("publisher");
    let tag = format!("oci://{addr}/connectors/github:1");
    let pushed = push(&publisher, scout_tests::components::GITHUB, &tag);
    let digest = pushed["digest"].as_str().unwrap().to_string();
    let out = dir.path().join("out.wasm");
    let pull_signed = |cache: &Path| {
        scout(
            cache,
            &[
                "pull",
                &tag,
                "--output",
                out.to_str().unwrap(),
                "--key",
                &signer_pub,
                "--plain-http",
                "--allow-private-network",
            ],
        )
    };

    // Unsigned: refused, nothing cached.
    let cache = dir.path().join("unsigned");
    let (code, _, stderr) = pull_signed(&cache);
    assert_ne!(code, 0);
    assert!(stderr.contains("signature refused: unsigned"), "{stderr}");
    assert!(files_under(&cache).is_empty());
    assert!(!out.exists());

    // Signed by a key nobody configured: refused, nothing cached.
    let (code, _, stderr) = sign(&publisher, &tag, &other_key);
    assert_eq!(code, 0, "{stderr}");
    let cache = dir.path().join("wrong-key");
    let (code, _, stderr) = pull_signed(&cache);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("but by none of the configured keys"),
        "{stderr}"
    );
    assert!(files_under(&cache).is_empty());

    // Signed by the configured key (the other signature stays beside it).
    let (code, signed, stderr) = sign(&publisher, &tag, &signer_key);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(signed["digest"], digest.as_str());
    let signature_tag = format!("{}.sig", digest.replace(':', "-"));
    assert_eq!(
        signed["signature"],
        format!("oci://{addr}/connectors/github:{signature_tag}")
    );
    let cache = dir.path().join("signed");
    let (code, pulled, stderr) = pull_signed(&cache);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(pulled["digest"], digest.as_str());
    assert_eq!(pulled["signed_by"], signer_pub.as_str());
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(scout_tests::components::GITHUB).unwrap()
    );

    // Another implementation reads the signatures in cosign's layout and
    // verifies them with the public key: one layer per signer, the payload
    // naming the repository and this digest.
    let seen = oras(&[
        "cosign",
        "--registry",
        &addr,
        "--target",
        &format!("connectors/github:{signature_tag}"),
        "--key",
        &signer_pub,
    ]);
    let layers = seen["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 2, "{seen}");
    for layer in layers {
        assert_eq!(
            layer["media_type"], "application/vnd.dev.cosign.simplesigning.v1+json",
            "{seen}"
        );
        let critical = &layer["payload"]["critical"];
        assert_eq!(critical["image"]["docker-manifest-digest"], digest.as_str());
        assert_eq!(
            critical["identity"]["docker-reference"],
            format!("{addr}/connectors/github")
        );
        assert_eq!(critical["type"], "cosign container image signature");
    }
    assert_eq!(
        layers.iter().filter(|l| l["verified"] == true).count(),
        1,
        "exactly the signer's signature verifies with the signer's key: {seen}"
    );

    // A signed artifact whose layer was changed after signing: refused.
    let tampered = format!("oci://{addr}/connectors/firecrawl:1");
    let firecrawl = push(&publisher, scout_tests::components::FIRECRAWL, &tampered);
    assert_eq!(sign(&publisher, &tampered, &signer_key).0, 0);
    let blob = registry.blob_file(firecrawl["layer"].as_str().unwrap());
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[10] ^= 0x55;
    std::fs::write(&blob, bytes).unwrap();
    let cache = dir.path().join("tampered");
    let (code, _, stderr) = scout(
        &cache,
        &[
            "pull",
            &tampered,
            "--output",
            out.to_str().unwrap(),
            "--key",
            &signer_pub,
            "--plain-http",
            "--allow-private-network",
        ],
    );
    assert_ne!(code, 0);
    assert!(
        stderr.contains("component layer does not match its digest"),
        "{stderr}"
    );
    assert!(files_under(&cache).is_empty());

    // `serve` with the host's `require_signature`: the signed component
    // is served; an unsigned one stops the start, naming the connector.
    let serve_cache = dir.path().join("serve-cache");
    let env = [(
        "SCOUT_ARTIFACT_CACHE",
        serve_cache.to_string_lossy().into_owned(),
    )];
    let head = format!(
        "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\nrequire_signature = true\nsignature_keys = [\"signer.pub\"]\n\n[registries.\"{addr}\"]\nplain_http = true\nallow_private_network = true\n\n"
    );
    let config = scout_tests::serve::write_config(
        dir.path(),
        format!(
            "{head}[connectors.github]\ncomponent = \"oci://{addr}/connectors/github@{digest}\"\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n"
        ),
    );
    let serve = common::serve(&config).envs(&env).start();
    let banner = format!("running {digest}");
    wait_for("the banner naming the digest", EVENTUALLY, async || {
        serve.stderr().contains(&banner).then_some(())
    })
    .await;
    drop(serve);
    let unsigned = format!("oci://{addr}/connectors/figma:1");
    push(&publisher, scout_tests::components::FIGMA, &unsigned);
    std::fs::write(
        &config,
        format!(
            "{head}[connectors.figma]\ncomponent = \"{unsigned}\"\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n"
        ),
    )
    .unwrap();
    let stderr = serve_refused(&config, &serve_cache);
    assert!(
        stderr.contains("figma") && stderr.contains("signature refused: unsigned"),
        "{stderr}"
    );
    // A file carries no signature: refused where one is required.
    std::fs::write(
        &config,
        format!(
            "{head}[connectors.github]\ncomponent = {:?}\norigin = \"http://127.0.0.1:9\"\n",
            scout_tests::components::GITHUB
        ),
    )
    .unwrap();
    let stderr = serve_refused(&config, &dir.path().join("cache"));
    assert!(
        stderr.contains("only an OCI artifact carries one"),
        "{stderr}"
    );
}

/// Reviews bound to the bytes (issue 33 item 3): a review records the
/// component's digest and what the tool may do; a new version whose tool
/// changed a route is held back under review with the change in words,
/// the unchanged tools keep their reviews, and a tool the new version no
/// longer has is listed as removed.
#[tokio::test]
async fn a_new_version_puts_its_changed_tools_back_under_review_and_says_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = std::fs::read(scout_tests::components::GITHUB).unwrap();
    let v2 = scout_tests::patch_bytes(
        &v1,
        b"\"path\":\"/repos/{owner}/{repo}/git/refs\"}",
        b"\"path\":\"/repos/{owner}/{repo}/git/tags\"}",
    );
    assert_ne!(v1, v2, "the route is in the component's manifest");
    let component = dir.path().join("github.wasm");
    std::fs::write(&component, &v1).unwrap();
    let config = scout_tests::serve::write_config(
        dir.path(),
        format!(
            "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\n\n[connectors.github]\ncomponent = {:?}\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n",
            component.display().to_string()
        ),
    );
    let reviews = async |admin: &Admin| -> Value {
        let (status, body) = admin
            .request(reqwest::Method::GET, "/v1/reviews", None)
            .await;
        assert_eq!(status, 200, "{body}");
        body
    };
    let tool = |body: &Value, name: &str| -> Value {
        body["connectors"]["github"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tool"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name}: {body}"))
    };

    // Version 1, every tool reviewed as it is.
    let serve = common::serve(&config).start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    // The brand's connection, and every tool reviewed as GET shows it.
    admin.set_up().await;
    let reviewed = reviews(&admin).await;
    let branch = tool(&reviewed, "github_create_branch");
    assert_eq!(branch["status"], "reviewed", "{branch}");
    assert_eq!(branch["component"], sha256(&v1));
    assert_eq!(branch["reviewed_component"], sha256(&v1));
    assert!(
        branch["routes"]
            .as_array()
            .unwrap()
            .contains(&Value::from("POST /repos/{owner}/{repo}/git/refs")),
        "{branch}"
    );
    drop(serve);

    // Version 2 changes one route of one tool; and the store holds a
    // review of a tool it no longer has.
    std::fs::write(&component, &v2).unwrap();
    let db = dir.path().join("scout.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "INSERT INTO tool_reviews (connector, tool, digest, approved_by, approved_at_ms) VALUES ('github', 'github_merge_pull_request', 'd', 'ops', 0)",
            [],
        )
        .unwrap();
    let serve = common::serve(&config).start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    let after = reviews(&admin).await;
    let branch = tool(&after, "github_create_branch");
    assert_eq!(branch["status"], "changed", "{branch}");
    assert_eq!(branch["component"], sha256(&v2));
    assert_eq!(branch["reviewed_component"], sha256(&v1));
    assert_eq!(
        branch["changes"],
        serde_json::json!([
            "routes added: POST /repos/{owner}/{repo}/git/tags",
            "routes removed: POST /repos/{owner}/{repo}/git/refs"
        ]),
        "{branch}"
    );
    let read = tool(&after, "github_read_file");
    assert_eq!(
        read["status"], "reviewed",
        "an unchanged tool keeps its review"
    );
    assert_eq!(read["changes"], serde_json::json!([]));
    assert_eq!(
        after["removed"]["github"],
        serde_json::json!(["github_merge_pull_request"]),
        "{after}"
    );

    // Held: a new session is not offered the changed tool, and is the rest.
    let view = admin.session().await;
    let offered: Vec<&str> = view["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert!(
        !offered.contains(&"mcp__github__github_create_branch"),
        "{offered:?}"
    );
    assert!(
        offered.contains(&"mcp__github__github_read_file"),
        "{offered:?}"
    );
    drop(serve);
}

/// A component artifact as a registry the test writes serves it.
struct Served {
    manifest: Vec<u8>,
    layer: String,
    component: Vec<u8>,
}

/// The WebAssembly layout of the component at `file`: its manifest and
/// layer digest.
fn served(file: &str) -> Served {
    let component = std::fs::read(file).unwrap();
    let layer = sha256(&component);
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": "application/vnd.wasm.config.v0+json",
            "digest": sha256(b"{}"),
            "size": 2,
        },
        "layers": [{
            "mediaType": "application/wasm",
            "digest": layer,
            "size": component.len(),
        }],
    }))
    .unwrap();
    Served {
        manifest,
        layer,
        component,
    }
}

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// The repository a registry path (`/v2/REPOSITORY/…`) names.
fn repository_of(path: &str) -> &str {
    path.split('/').nth(2).unwrap_or_default()
}

/// `scout-host ARGS` with `env` too: exit code and stderr.
fn scout_with(cache: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(args)
        .env("SCOUT_ARTIFACT_CACHE", cache)
        .env_remove("SCOUT_REGISTRY_USERNAME")
        .env_remove("SCOUT_REGISTRY_PASSWORD")
        .envs(env.iter().copied())
        .output()
        .expect("run scout-host");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 52 item 4: a registry's redirect is a request the host makes, so
/// the address rules hold for wherever it points, each target by its own
/// allowance (a registry allowed a private network lends it to nobody):
/// a pull a redirect would take to loopback (written as an address, or as
/// a name that resolves there), to the cloud metadata address, or round
/// in circles is refused, naming where and why, before any connection is
/// made there, for a manifest as for a layer; nothing is cached.
#[test]
fn a_registry_redirect_reaches_no_address_the_rules_refuse() {
    use scout_tests::fake_registry::{FakeRegistry, Reply};
    let dir = tempfile::tempdir().unwrap();
    // Stands in for the metadata address: loopback, another port than the
    // registry's, which nobody allowed.
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    elsewhere.set_nonblocking(true).unwrap();
    let target = elsewhere.local_addr().unwrap();
    let artifact = served(scout_tests::components::GITHUB);
    let manifest = artifact.manifest.clone();
    let registry = FakeRegistry::start(move |request| {
        let path = request.path.as_str();
        let is_manifest = path.contains("/manifests/");
        match repository_of(path) {
            "to-loopback" => Reply::redirect(307, &format!("http://{target}/v2/x/manifests/1")),
            "to-a-name" => Reply::redirect(
                307,
                &format!("http://localhost:{}/v2/x/manifests/1", target.port()),
            ),
            "to-metadata" => Reply::redirect(
                307,
                "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
            ),
            "layer-to-loopback" if is_manifest => Reply::ok(OCI_MANIFEST, manifest.clone()),
            "layer-to-loopback" => Reply::redirect(307, &format!("http://{target}/blob")),
            "in-circles" => Reply::redirect(302, path),
            _ => Reply::status(404, Vec::new()),
        }
    });
    let addr = registry.address.clone();
    let cache = dir.path().join("cache");
    let out = dir.path().join("out.wasm");
    let target = target.to_string();
    let localhost = format!("localhost:{}", target.rsplit(':').next().unwrap());
    for (repository, expected) in [
        (
            "to-loopback",
            vec![
                format!("to http://{target}"),
                "127.0.0.1 is a loopback address".into(),
            ],
        ),
        (
            "to-a-name",
            vec![
                format!("to http://{localhost}"),
                "localhost resolves to".into(),
                "loopback address".into(),
            ],
        ),
        (
            "to-metadata",
            vec!["to http://169.254.169.254".into(), "cloud metadata".into()],
        ),
        (
            "layer-to-loopback",
            vec![
                format!("to http://{target}"),
                "127.0.0.1 is a loopback address".into(),
            ],
        ),
        ("in-circles", vec!["more than 5 redirects".into()]),
    ] {
        let reference = format!("oci://{addr}/{repository}:1");
        let (code, stderr) = scout_with(
            &cache,
            &[
                "pull",
                &reference,
                "--output",
                out.to_str().unwrap(),
                "--plain-http",
                "--allow-private-network",
            ],
            &[],
        );
        assert_ne!(code, 0, "{repository}: {stderr}");
        assert!(
            stderr.contains("the registry pointed the host to"),
            "{repository}: {stderr}"
        );
        for part in expected {
            assert!(stderr.contains(&part), "{repository}: `{part}` in {stderr}");
        }
        // The registry itself was asked: it is its redirect that was refused.
        assert!(
            registry
                .requests()
                .iter()
                .any(|r| repository_of(&r.path) == repository),
            "{repository}"
        );
    }
    assert!(
        elsewhere.accept().is_err(),
        "no connection reached where the redirects pointed"
    );
    assert!(files_under(&cache).is_empty(), "nothing was cached");
    assert!(!out.exists());
}

/// Issue 52 item 4: a blob a registry hands to a CDN the operator allowed
/// is fetched there, and the registry's credential (the basic credential
/// the token endpoint got, the bearer token the registry got) never
/// travels with it; where the CDN is not allowed, `serve` refuses to start
/// and the CDN is never connected to.
#[tokio::test]
async fn a_blob_redirected_to_a_cdn_is_fetched_there_without_the_registry_credential() {
    use scout_tests::fake_registry::{FakeRegistry, Reply};
    const TOKEN: &str = "registry-token-7f3a";
    const PASSWORD: &str = "hunter2-registry-secret";
    let dir = tempfile::tempdir().unwrap();
    let artifact = served(scout_tests::components::GITHUB);
    let component = artifact.component.clone();
    let cdn =
        FakeRegistry::start(move |_| Reply::ok("application/octet-stream", component.clone()));
    let cdn_addr = cdn.address.clone();
    let manifest = artifact.manifest.clone();
    let layer = artifact.layer.clone();
    use base64::Engine;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("robot:{PASSWORD}"))
    );
    let expected_basic = basic.clone();
    let registry = FakeRegistry::start(move |request| {
        let host = request.header("host").unwrap_or_default().to_string();
        if request.path.starts_with("/token") {
            return if request.header("authorization") == Some(expected_basic.as_str()) {
                Reply::ok("application/json", format!(r#"{{"token":"{TOKEN}"}}"#))
            } else {
                Reply::status(401, Vec::new())
            };
        }
        if request.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
            return Reply::status(
                401,
                vec![(
                    "WWW-Authenticate".into(),
                    format!(
                        r#"Bearer realm="http://{host}/token",service="fake",scope="repository:connectors/github:pull""#
                    ),
                )],
            );
        }
        if request.path.contains("/manifests/") {
            Reply::ok(OCI_MANIFEST, manifest.clone())
        } else if request.path.ends_with(&format!("/blobs/{layer}")) {
            Reply::redirect(307, &format!("http://{cdn_addr}/blobs/{layer}?signed=1"))
        } else {
            Reply::status(404, Vec::new())
        }
    });
    let addr = registry.address.clone();
    let cache = dir.path().join("cache");
    let config = dir.path().join("serve.toml");
    let write_config = |cdn_allowed: bool| {
        let cdn_section = if cdn_allowed {
            format!(
                "[registries.\"{}\"]\nallow_private_network = true\n\n",
                cdn.address
            )
        } else {
            String::new()
        };
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\n\n[registries.\"{addr}\"]\nplain_http = true\nallow_private_network = true\n\n{cdn_section}[connectors.github]\ncomponent = \"oci://{addr}/connectors/github:1\"\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n"
            ),
        )
        .unwrap();
    };
    let env = [
        ("SCOUT_ARTIFACT_CACHE", cache.to_string_lossy().into_owned()),
        ("SCOUT_REGISTRY_USERNAME", "robot".to_string()),
        ("SCOUT_REGISTRY_PASSWORD", PASSWORD.to_string()),
    ];

    // The CDN not allowed a private network: refused, never connected to.
    write_config(false);
    let mut refused = common::serve_as(&config, super::crash_safety::ADMIN_TOKEN, "5c")
        .compile_cache()
        .envs(&env)
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run scout-host serve");
    // A serve that followed the redirect would start and keep running.
    let deadline = std::time::Instant::now() + EVENTUALLY;
    let status = loop {
        if let Some(status) = refused.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline || cdn.connections() > 0 {
            let _ = refused.kill();
            let _ = refused.wait();
            panic!(
                "serve did not refuse the redirect ({} connection(s) reached the CDN)",
                cdn.connections()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(!status.success(), "serve started");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut refused.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        stderr.contains(&format!("pointed the host to http://{}", cdn.address))
            && stderr.contains("loopback address"),
        "{stderr}"
    );
    assert_eq!(cdn.connections(), 0, "the CDN was never connected to");
    assert!(files_under(&cache).is_empty(), "nothing was cached");

    // Allowed: the blob comes from the CDN, and the component is served.
    write_config(true);
    let serve = common::serve(&config).envs(&env).start();
    let admin = Admin {
        http: reqwest::Client::new(),
        base: serve.base.clone(),
    };
    let (status, reviews) = admin
        .request(reqwest::Method::GET, "/v1/reviews", None)
        .await;
    assert_eq!(status, 200, "{reviews}");
    assert!(
        reviews["connectors"]["github"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["tool"] == "github_read_file")),
        "the component the CDN handed over is served: {reviews}"
    );
    drop(serve);
    let asked = registry.requests();
    assert!(
        asked
            .iter()
            .any(|r| r.path.starts_with("/token")
                && r.header("authorization") == Some(basic.as_str())),
        "the token endpoint the registry named got the credential: {asked:?}"
    );
    assert!(
        asked.iter().any(|r| r.path.contains("/blobs/")
            && r.header("authorization") == Some(&format!("Bearer {TOKEN}"))),
        "the registry got its token for the blob: {asked:?}"
    );
    let fetched = cdn.requests();
    assert!(!fetched.is_empty(), "the CDN was asked for the blob");
    for request in &fetched {
        assert_eq!(request.header("authorization"), None, "{request:?}");
        for (name, value) in &request.headers {
            assert!(
                !value.contains(TOKEN) && !value.contains(PASSWORD) && !value.contains(&basic[6..]),
                "the CDN got the registry's credential in `{name}`"
            );
        }
    }
}

/// Issue 52 item 5: every size limit holds while the body streams: a
/// manifest, a signature manifest or a layer past its limit is refused
/// naming the limit, whether the registry declares the length (refused
/// before the body is read) or not (reading stops at the limit), and the
/// host reads about the limit, not the 256 MiB the registry would send.
#[test]
fn an_oversized_manifest_signature_or_layer_is_refused_while_it_streams() {
    use scout_tests::fake_registry::{FakeRegistry, Reply};
    const HUGE: u64 = 256 << 20;
    let dir = tempfile::tempdir().unwrap();
    let (_, signer_pub) = keygen(dir.path(), "signer");
    let artifact = served(scout_tests::components::GITHUB);
    let manifest = artifact.manifest.clone();
    let registry = FakeRegistry::start(move |request| {
        let path = request.path.as_str();
        let endless = |declare_length| Reply::Endless {
            total: HUGE,
            declare_length,
        };
        match repository_of(path) {
            "streamed" => endless(false),
            "declared" => endless(true),
            "big-layer" | "big-signature" if path.ends_with("/manifests/1") => {
                Reply::ok(OCI_MANIFEST, manifest.clone())
            }
            "big-layer" => endless(false),
            "big-signature" => endless(false),
            _ => Reply::status(404, Vec::new()),
        }
    });
    let addr = registry.address.clone();
    let cache = dir.path().join("cache");
    let out = dir.path().join("out.wasm");
    let digest = sha256(&artifact.manifest);
    let manifest_limit = "limit of 262144 bytes".to_string();
    let layer_limit = format!("limit of {} bytes", artifact.component.len());
    for (repository, streamed_path, what, limit) in [
        (
            "streamed",
            "/v2/streamed/manifests/1".to_string(),
            "the manifest is past",
            &manifest_limit,
        ),
        (
            "declared",
            "/v2/declared/manifests/1".to_string(),
            "the manifest is past",
            &manifest_limit,
        ),
        (
            "big-layer",
            format!("/v2/big-layer/blobs/{}", artifact.layer),
            "the component layer",
            &layer_limit,
        ),
        (
            "big-signature",
            format!(
                "/v2/big-signature/manifests/{}.sig",
                digest.replace(':', "-")
            ),
            "the signature manifest is past",
            &manifest_limit,
        ),
    ] {
        let reference = format!("oci://{addr}/{repository}:1");
        let mut args = vec![
            "pull",
            &reference,
            "--output",
            out.to_str().unwrap(),
            "--plain-http",
            "--allow-private-network",
        ];
        if repository == "big-signature" {
            args.extend(["--key", &signer_pub]);
        }
        let (code, stderr) = scout_with(&cache, &args, &[]);
        assert_ne!(code, 0, "{repository}: {stderr}");
        assert!(
            stderr.contains(what) && stderr.contains(limit.as_str()),
            "{repository}: {stderr}"
        );
        // The host went away; the registry's writes stopped about the
        // limit (plus what the kernel's socket buffers hold), far short of
        // the whole body.
        let deadline = std::time::Instant::now() + EVENTUALLY;
        let streamed = loop {
            match registry.streamed(&streamed_path) {
                Some(s) if s.finished => break s,
                _ if std::time::Instant::now() > deadline => {
                    panic!("{repository}: the registry is still writing {streamed_path}")
                }
                _ => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        };
        eprintln!(
            "{repository}: the registry wrote {} of {HUGE} bytes",
            streamed.written
        );
        assert!(
            streamed.written < 32 << 20,
            "{repository}: the host read {} of {HUGE} bytes",
            streamed.written
        );
    }
    assert!(files_under(&cache).is_empty(), "nothing was cached");
    assert!(!out.exists());
}
