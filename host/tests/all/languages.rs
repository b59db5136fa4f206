//! Connectors in other languages behind the same boundary (issue 54): a
//! JavaScript guest built by componentize-js and a Python guest built by
//! componentize-py (pinned, provisioned under the target directory by
//! `scout_tests::componentizers`), their manifests embedded by
//! `scout-host manifest` from their WIT, loaded and called through the
//! real binary over a loopback upstream; and hostile guests of both
//! languages, which reach for the network past the `http` handle, refused
//! at load naming the import.

use scout_host::runtime::default_cache_dir;
use scout_host::{Capabilities, HttpCapability, HttpConfig, Runtime, RuntimeConfig};
use scout_tests::componentizers::{build_js, build_py, build_py_without_sockets, guest_dir};
use scout_tests::upstream::Upstream;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn scout_host(args: &[&str]) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(args)
        .env_remove("SCOUT_LOG")
        .output()
        .expect("run scout-host");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Runs off the async runtime, so the upstream keeps answering.
async fn scout_host_async(args: Vec<String>) -> Run {
    tokio::task::spawn_blocking(move || {
        scout_host(&args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap()
}

/// A fresh directory under the cargo target directory.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("languages-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// `scout-host manifest` of the guest `name` of `language`, world `world`.
fn embed(language: &str, name: &str, world: &str, built: &Path, out: &Path) -> Run {
    let wit = guest_dir(language, name).join("wit");
    scout_host(&[
        "manifest",
        "--wit",
        path(&wit),
        "--world",
        world,
        path(built),
        "-o",
        path(out),
    ])
}

/// Calls `tool` of `component` live against `origin`, as an author would.
async fn call(component: &Path, tool: &str, args: Value, origin: &str) -> Run {
    scout_host_async(vec![
        "call".to_string(),
        path(component).to_string(),
        tool.to_string(),
        args.to_string(),
        "--origin".to_string(),
        origin.to_string(),
        "--allow-private-network".to_string(),
    ])
    .await
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The `MILLIS RANDOM` a guest's `now` tool answered.
fn clock_and_random(run: &Run) -> (u64, String) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let output: Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    let text = output["ok"].as_str().expect("an ok string").to_string();
    let (millis, random) = text.split_once(' ').expect("MILLIS RANDOM");
    (millis.parse().expect("millis"), random.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_javascript_connector_gets_its_manifest_and_reads_over_loopback_with_inert_wasi() {
    let dir = temp_dir("js");
    let built = dir.join("hello-js.wasm");
    // The runtime's stdio, randomness and clocks on; its own network off.
    build_js("hello", "hello-js", &["http", "fetch-event"], &built).unwrap();

    // Without the manifest the host refuses it, naming the command to run.
    let bare = scout_host(&["inspect", path(&built)]);
    assert_eq!(bare.code, 2, "{}", bare.stderr);
    assert!(
        bare.stdout.contains("scout-host manifest --wit"),
        "{}",
        bare.stdout
    );

    let component = dir.join("hello-js.connector.wasm");
    let embedded = embed("js", "hello", "hello-js", &built, &component);
    assert_eq!(embedded.code, 0, "{}", embedded.stderr);
    assert!(
        embedded.stdout.contains("hello-js with 2 tools")
            && embedded.stdout.contains("capabilities: http, log")
            && embedded.stdout.contains("wasi:clocks/wall-clock@")
            && embedded.stdout.contains("wasi:random/random@"),
        "{}",
        embedded.stdout
    );

    // `inspect` shows the manifest made from the WIT and marks the inert imports.
    let inspected = scout_host(&["inspect", "--json", path(&component)]);
    assert_eq!(inspected.code, 0, "{}", inspected.stderr);
    let report: Value = serde_json::from_str(&inspected.stdout).unwrap();
    assert_eq!(report["connector"]["package"], "scout:hello-js@0.1.0");
    let greet = &report["tools"][0];
    assert_eq!(greet["name"], "hello_js_greet");
    assert_eq!(greet["routes"][0]["path"], "/hello/{name}");
    assert_eq!(
        greet["input_schema"]["properties"]["name"]["description"],
        "who is greeted (letters only)."
    );
    let imports = report["imports"].as_array().unwrap();
    let inert: Vec<&str> = imports
        .iter()
        .filter(|i| i["inert"] == true)
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(
        inert
            .iter()
            .any(|i| i.starts_with("wasi:clocks/wall-clock@"))
            && inert.iter().any(|i| i.starts_with("wasi:random/random@")),
        "{inert:?}"
    );
    assert!(imports.iter().all(|i| i["allowed"] == true), "{imports:?}");
    assert!(
        imports
            .iter()
            .filter(|i| i["name"].as_str().unwrap().starts_with("scout:"))
            .all(|i| i.get("inert").is_none())
    );

    // A read through the host's `http` handle, to the loopback upstream.
    let upstream = Upstream::start().await;
    let read = call(
        &component,
        "greet",
        json!({"name": "ada"}),
        &upstream.origin(),
    )
    .await;
    assert_eq!(read.code, 0, "{}", read.stderr);
    let output: Value = serde_json::from_str(&read.stdout).unwrap();
    assert_eq!(output["ok"], "ok");
    assert!(
        read.stderr.contains("GET /hello/ada -> 200"),
        "{}",
        read.stderr
    );
    // `console.log` is captured, as a Rust guest's stdout is.
    assert!(
        read.stderr.contains("guest stdout: greeted ada"),
        "{}",
        read.stderr
    );
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);

    // The clock and randomness are the host's at each call, never the
    // values the build snapshot holds.
    let before = now_ms();
    let first = clock_and_random(&call(&component, "now", json!({}), &upstream.origin()).await);
    let second = clock_and_random(&call(&component, "now", json!({}), &upstream.origin()).await);
    let after = now_ms();
    for (millis, _) in [&first, &second] {
        assert!(
            (before..=after).contains(millis),
            "{millis} not in {before}..={after}"
        );
    }
    assert_ne!(first.1, second.1, "the same random number twice");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The imports `inspect --json` lists of `component`, which must load.
fn inspected_imports(component: &Path) -> Vec<Value> {
    let inspected = scout_host(&["inspect", "--json", path(component)]);
    assert_eq!(inspected.code, 0, "{}", inspected.stderr);
    let report: Value = serde_json::from_str(&inspected.stdout).unwrap();
    report["imports"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_connector_with_its_larger_runtime_loads_and_reads_over_loopback() {
    let dir = temp_dir("py");
    let built = dir.join("hello-py.wasm");
    // componentize-py's default WASI, its sockets satisfied inside the
    // component by functions that trap (not `--stub-wasi`, which would
    // fix the clocks and the random seed at build time).
    build_py_without_sockets("hello", "hello-py", &built).unwrap();
    let component = dir.join("hello-py.connector.wasm");
    let embedded = embed("py", "hello", "hello-py", &built, &component);
    // 17 core instances, two memories (the trapping sockets' own) and
    // componentize-py's own `exports`: loaded, in a pool no larger for any
    // other connector.
    assert_eq!(embedded.code, 0, "{}", embedded.stderr);
    assert!(
        embedded.stdout.contains("hello-py with 2 tools")
            && embedded.stdout.contains("wasi:clocks/wall-clock@")
            && embedded.stdout.contains("wasi:random/random@")
            && !embedded.stdout.contains("wasi:sockets"),
        "{}",
        embedded.stdout
    );
    // Nothing of the network among its imports; the clock and randomness
    // are the inert ones the host links.
    let imports = inspected_imports(&component);
    assert!(
        imports
            .iter()
            .all(|i| i["allowed"] == true
                && !i["name"].as_str().unwrap().starts_with("wasi:sockets/")),
        "{imports:?}"
    );
    for inert in ["wasi:clocks/wall-clock@", "wasi:random/random@"] {
        assert!(
            imports
                .iter()
                .any(|i| i["inert"] == true && i["name"].as_str().unwrap().starts_with(inert)),
            "{inert} not an inert import: {imports:?}"
        );
    }

    let upstream = Upstream::start().await;
    let read = call(
        &component,
        "greet",
        json!({"name": "grace"}),
        &upstream.origin(),
    )
    .await;
    assert_eq!(read.code, 0, "{}", read.stderr);
    let output: Value = serde_json::from_str(&read.stdout).unwrap();
    assert_eq!(output["ok"], "ok");
    assert!(
        read.stderr.contains("GET /hello/grace -> 200"),
        "{}",
        read.stderr
    );
    assert!(
        read.stderr.contains("log[info]: greeted grace"),
        "{}",
        read.stderr
    );
    assert_eq!(upstream.seen().len(), 1);

    // The clock and randomness are the host's at each call, never the
    // values the build's snapshot holds.
    let before = now_ms();
    let first = clock_and_random(&call(&component, "now", json!({}), &upstream.origin()).await);
    let second = clock_and_random(&call(&component, "now", json!({}), &upstream.origin()).await);
    let after = now_ms();
    for (millis, _) in [&first, &second] {
        assert!(
            (before..=after).contains(millis),
            "{millis} not in {before}..={after}"
        );
    }
    assert_ne!(first.1, second.1, "the same random number twice");

    // In a host of four slots, a call of it holds two (17 core instances
    // at 16 a slot): calls at once take turns instead of exhausting the
    // pool, and each gets a fresh instance.
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: default_cache_dir(),
        max_concurrent_calls: 4,
        ..Default::default()
    })
    .unwrap();
    let loaded = Arc::new(runtime.load_file(&component).unwrap());
    let caps = Capabilities::with_http(
        HttpCapability::new(HttpConfig::new(upstream.origin()).allow_private_network(true))
            .unwrap(),
    );
    let calls: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|name| {
            let (loaded, caps) = (loaded.clone(), caps.clone());
            tokio::spawn(async move {
                loaded
                    .call("hello_py_greet", &json!({"name": name}), &caps)
                    .await
            })
        })
        .collect();
    for call in calls {
        let outcome = call.await.unwrap().expect("the call runs");
        assert_eq!(outcome.output.ok(), Some(&json!("ok")));
    }
    assert_eq!(upstream.seen().len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_guest_without_its_sockets_loads_and_its_socket_traps_at_the_call() {
    let dir = temp_dir("hostile-py-without-sockets");
    // The hostile guest that the host refuses at load when built as it is
    // (below), its sockets now satisfied inside it by functions that trap.
    let built = dir.join("hostile-py.wasm");
    build_py_without_sockets("hostile", "hostile-py", &built).unwrap();
    let component = dir.join("hostile-py.connector.wasm");
    let embedded = embed("py", "hostile", "hostile-py", &built, &component);
    assert_eq!(embedded.code, 0, "{}", embedded.stderr);
    let imports = inspected_imports(&component);
    assert!(
        imports
            .iter()
            .all(|i| i["allowed"] == true
                && !i["name"].as_str().unwrap().starts_with("wasi:sockets/")),
        "{imports:?}"
    );

    // Its socket to the upstream traps at the call, in the stub's
    // `create-tcp-socket` (the backtrace names it): nothing reaches it.
    let upstream = Upstream::start().await;
    let escape = call(
        &component,
        "escape",
        json!({"url": upstream.origin()}),
        &upstream.origin(),
    )
    .await;
    assert_ne!(escape.code, 0, "{}", escape.stdout);
    assert!(
        escape.stderr.contains("the connector trapped")
            && escape
                .stderr
                .contains("wasi:sockets/tcp-create-socket@0.2|create-tcp-socket"),
        "{}",
        escape.stderr
    );
    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hostile_javascript_and_python_guests_reaching_the_network_are_refused_at_load() {
    let dir = temp_dir("hostile");
    // componentize-js with its `fetch` on: wasi:http.
    let js = dir.join("hostile-js.wasm");
    build_js("hostile", "hostile-js", &["fetch-event"], &js).unwrap();
    // componentize-py without stubs: its runtime's sockets.
    let py = dir.join("hostile-py.wasm");
    build_py("hostile", "hostile-py", false, &py).unwrap();
    for (language, world, built, refused) in [
        (
            "js",
            "hostile-js",
            &js,
            &["wasi:http/outgoing-handler@", "wasi:http/types@"][..],
        ),
        (
            "py",
            "hostile-py",
            &py,
            &["wasi:sockets/tcp@", "wasi:sockets/ip-name-lookup@"][..],
        ),
    ] {
        let out = dir.join(format!("{world}.connector.wasm"));
        let embedded = embed(language, "hostile", world, built, &out);
        assert_eq!(embedded.code, 2, "{world}: {}", embedded.stdout);
        assert!(
            embedded
                .stderr
                .contains("component imports what the contract does not give"),
            "{world}: {}",
            embedded.stderr
        );
        for import in refused {
            assert!(
                embedded.stderr.contains(import),
                "{world} refused without naming {import}: {}",
                embedded.stderr
            );
        }
        // `inspect` marks the same imports refused, the inert ones not.
        let inspected = scout_host(&["inspect", "--json", path(&out)]);
        assert_eq!(inspected.code, 2, "{}", inspected.stderr);
        let report: Value = serde_json::from_str(&inspected.stdout).unwrap();
        for import in report["imports"].as_array().unwrap() {
            let name = import["name"].as_str().unwrap();
            let reaches_out = name.starts_with("wasi:http/") || name.starts_with("wasi:sockets/");
            assert_eq!(import["allowed"], !reaches_out, "{world}: {import}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
