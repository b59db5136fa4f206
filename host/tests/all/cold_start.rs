//! A start with an empty compile cache (issue 58, item 5): a component is
//! checked on its shape and compiled in the background, so `serve` is
//! ready once every connector's surface is known and a call waits for its
//! own component's compile only.
//!
//! Proved with real components built from source: a cold `serve` of
//! GitHub and two test guests is ready and a call to each runs (each first
//! call waiting for its compile), the compile cache holds every component
//! afterwards, and the next start serves them from it; a component whose
//! code does not validate (its shape does) is served, its calls fail with
//! the compile's error, the error is logged, and another connector's calls
//! run; the surface read from the shape is the surface of the compiled
//! component for every connector of the catalogue.

use crate::common;
use crate::crash_safety::{Admin, Mcp, result_text};
use reqwest::Method;
use scout_host::{Runtime, RuntimeConfig};
use scout_tests::fake_github::FakeGitHub;
use scout_tests::upstream::Upstream;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `serve.toml` in `dir`: GitHub against `github`, and the `hello` and
/// `jsonargs` test guests (no credential) against `upstream`, `jsonargs`
/// from `jsonargs_component`; no review required.
fn config(dir: &Path, github: &str, upstream: &str, jsonargs_component: &Path) -> PathBuf {
    let mut text = scout_tests::serve_config_for_github(github).replacen(
        "database = \"scout.db\"\n",
        "database = \"scout.db\"\nrequire_review = false\n",
        1,
    );
    for (name, component) in [
        ("hello", common::component(scout_tests::components::HELLO)),
        ("jsonargs", jsonargs_component.display().to_string()),
    ] {
        text.push_str(&format!(
            "\n[connectors.{name}]\ncomponent = {component:?}\norigin = {upstream:?}\n\
             allow_private_network = true\ncredential = \"none\"\n"
        ));
    }
    scout_tests::serve::write_config(dir, text)
}

/// `serve` of `config` with its own compile cache `cache`, its debug lines
/// of the runtime logged (each background compile says `compiled`).
fn serve(config: &Path, dir: &Path, cache: &Path) -> scout_tests::ServeProcess {
    common::serve(config)
        .env("SCOUT_CACHE_DIR", cache)
        .env("SCOUT_LOG", "error,scout_host::runtime=debug")
        .current_dir(dir)
        .start()
}

/// `tools/call` of `tool` with `arguments` in `view`'s session, on
/// `connector`'s endpoint: the JSON-RPC response.
async fn call(
    http: &reqwest::Client,
    view: &Value,
    connector: &str,
    tool: &str,
    arguments: Value,
) -> Value {
    Mcp::for_connector(http, view, connector)
        .connect()
        .await
        .request("tools/call", json!({"name": tool, "arguments": arguments}))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// Asserts a `tools/call` response is the tool's success.
fn assert_ran(reply: &Value, tool: &str) {
    assert_eq!(reply["result"]["isError"], false, "{tool}: {reply}");
}

/// The compiled components the cache directory holds.
fn cached(cache: &Path) -> usize {
    std::fs::read_dir(cache)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                .count()
        })
        .unwrap_or(0)
}

/// Ready, and a session of acme's person chat.
async fn ready_session(process: &scout_tests::ServeProcess, http: &reqwest::Client) -> Value {
    let ready = http
        .get(format!("{}/readyz", process.base))
        .send()
        .await
        .expect("GET /readyz");
    assert_eq!(ready.status().as_u16(), 200, "ready");
    let admin = Admin {
        http: http.clone(),
        base: process.base.clone(),
    };
    let (status, body) = admin
        .request(
            Method::PUT,
            "/v1/brands/acme/connections/github",
            Some(json!({"secret": crate::crash_safety::GITHUB_TOKEN})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, view) = admin
        .request(
            Method::POST,
            "/v1/sessions",
            Some(json!({"brand": "acme", "role": "person-chat"})),
        )
        .await;
    assert_eq!(status, 201, "{view}");
    view
}

/// A copy of component `bytes` with one function body of its code
/// replaced by one that does not validate (`i32.add` on an empty stack),
/// the same length: its shape (no function bodies) is unchanged, its real
/// compile fails.
fn with_an_invalid_function_body(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let wasmparser::Payload::CodeSectionEntry(body) = payload.expect("a valid component") {
            let range = body.range();
            let range = usize::try_from(range.start).expect("an offset in memory")
                ..usize::try_from(range.end).expect("an offset in memory");
            if range.end - range.start < 3 {
                continue;
            }
            assert_eq!(bytes[range.end - 1], 0x0b, "a body ends with `end`");
            out[range.start] = 0x00; // no locals
            for byte in &mut out[range.start + 1..range.end - 1] {
                *byte = 0x6a; // i32.add
            }
            return out;
        }
    }
    panic!("the component has no function body of 3 bytes or more")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_start_is_ready_each_first_call_waits_for_its_compile_and_the_cache_is_filled() {
    let github = FakeGitHub::start(crate::crash_safety::GITHUB_TOKEN).await;
    let upstream = Upstream::start().await;
    let dir = scout_tests::serve::fresh_dir("cold-start");
    let cache = dir.join("cache");
    let jsonargs = PathBuf::from(common::component(scout_tests::components::JSONARGS));
    let config = config(&dir, &github.origin(), &upstream.origin(), &jsonargs);
    let http = common::client();

    let process = serve(&config, &dir, &cache);
    let view = ready_session(&process, &http).await;
    let read = call(
        &http,
        &view,
        "github",
        "github_read_file",
        json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
    )
    .await;
    assert_ran(&read, "github_read_file");
    assert!(result_text(&read).contains("Hello"), "{read}");
    let greeted = call(&http, &view, "hello", "hello_greet", json!({"name": "Ada"})).await;
    assert_ran(&greeted, "hello_greet");
    let queried = call(
        &http,
        &view,
        "jsonargs",
        "jsonargs_query",
        json!({"filter": {"status": "open"}}),
    )
    .await;
    assert_ran(&queried, "jsonargs_query");
    // Each component's compile ended before its call ran, and put it in the
    // cache: all three are there, and each was compiled in the background.
    assert_eq!(cached(&cache), 3, "every component compiled into the cache");
    let log = process.stderr();
    for connector in ["github", "hello", "jsonargs"] {
        assert!(
            log.lines()
                .any(|l| l.contains("compiled") && l.contains(&format!("connector={connector}"))),
            "{connector} compiled in the background: {log}"
        );
    }
    drop(process);

    // The next start loads each component compiled, from the cache.
    let process = serve(&config, &dir, &cache);
    let view = ready_session(&process, &http).await;
    let greeted = call(
        &http,
        &view,
        "hello",
        "hello_greet",
        json!({"name": "Grace"}),
    )
    .await;
    assert_ran(&greeted, "hello_greet");
    let log = process.stderr();
    assert!(
        !log.lines().any(|l| l.contains(" compiled")),
        "nothing compiled on a warm start: {log}"
    );
    assert_eq!(cached(&cache), 3);
    drop(process);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_that_fails_its_background_compile_fails_its_own_calls_only() {
    let github = FakeGitHub::start(crate::crash_safety::GITHUB_TOKEN).await;
    let upstream = Upstream::start().await;
    let dir = scout_tests::serve::fresh_dir("cold-start-invalid");
    let cache = dir.join("cache");
    let broken = dir.join("jsonargs-invalid.wasm");
    let bytes = std::fs::read(common::component(scout_tests::components::JSONARGS)).unwrap();
    std::fs::write(&broken, with_an_invalid_function_body(&bytes)).unwrap();
    let config = config(&dir, &github.origin(), &upstream.origin(), &broken);
    let http = common::client();

    // Served: its surface is read from its shape.
    let process = serve(&config, &dir, &cache);
    let view = ready_session(&process, &http).await;
    assert!(view["mcp"]["jsonargs"].is_string(), "{view}");
    let failed = call(
        &http,
        &view,
        "jsonargs",
        "jsonargs_query",
        json!({"filter": {"status": "open"}}),
    )
    .await;
    let text = format!("{failed}");
    assert!(
        text.contains("did not compile") && text.contains("not a valid component"),
        "the call fails with the compile's error: {failed}"
    );
    assert!(
        upstream.seen().is_empty(),
        "nothing ran: {:?}",
        upstream.seen()
    );
    // Its next call fails the same way; another connector's calls run.
    let again = call(
        &http,
        &view,
        "jsonargs",
        "jsonargs_query",
        json!({"filter": {}}),
    )
    .await;
    assert!(format!("{again}").contains("did not compile"), "{again}");
    let greeted = call(&http, &view, "hello", "hello_greet", json!({"name": "Ada"})).await;
    assert_ran(&greeted, "hello_greet");
    let read = call(
        &http,
        &view,
        "github",
        "github_read_file",
        json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
    )
    .await;
    assert_ran(&read, "github_read_file");
    let log = process.stderr();
    assert!(
        log.lines().any(|l| l.contains("did not compile")
            && l.contains("connector=jsonargs")
            && l.contains("not a valid component")),
        "the failed compile is logged: {log}"
    );
    // The host is still up and ready.
    let ready = http
        .get(format!("{}/readyz", process.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status().as_u16(), 200);
    // Nothing of the broken component is cached; the two others are.
    assert_eq!(cached(&cache), 2);
    drop(process);
    let _ = std::fs::remove_dir_all(&dir);
}

/// For every connector of the catalogue, what a load from the shape serves
/// (tools, schemas, imports) is what a load of the compiled component
/// serves, and the shape's calls run once compiled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_surface_read_from_the_shape_is_the_compiled_components() {
    let dir = scout_tests::serve::fresh_dir("cold-start-shape");
    // Compiled at load: a runtime whose cache already holds the component.
    let warm = Runtime::new(RuntimeConfig {
        cache_dir: Some(dir.join("warm")),
        max_concurrent_calls: 2,
        ..Default::default()
    })
    .unwrap();
    for path in scout_tests::components::CONNECTORS {
        let bytes = std::fs::read(path).unwrap();
        // Compiled at load (and cached) by `inspect`, then loaded from the cache.
        warm.inspect_file(Path::new(path)).unwrap();
        let compiled = warm.load_bytes(&bytes).unwrap();
        // A cold runtime of its own, so nothing is cached: the shape.
        let cold = Runtime::new(RuntimeConfig {
            cache_dir: None,
            max_concurrent_calls: 2,
            ..Default::default()
        })
        .unwrap();
        let shaped = cold.load_bytes(&bytes).unwrap();
        let surface = |c: &scout_host::runtime::LoadedComponent| -> Value {
            json!({
                "name": c.name(),
                "imports": c.info().imports,
                "sha256": c.info().sha256,
                "tools": c.tools().iter().map(|t| json!({
                    "name": t.name,
                    "effect": t.effect.as_str(),
                    "input": t.input_schema,
                    "output": t.output_schema,
                    "wrapped": t.output_wrapped,
                })).collect::<Vec<_>>(),
            })
        };
        assert_eq!(surface(&shaped), surface(&compiled), "{path}");
        assert_eq!(shaped.compile_error(), None, "{path}");
        shaped
            .compiled()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        shaped.instantiate_fresh().await.unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// In the library: a component loaded from its shape whose compile fails
/// says why, to every call and to `compile_error`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_compile_is_the_error_of_every_call() {
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: None,
        max_concurrent_calls: 2,
        ..Default::default()
    })
    .unwrap();
    let bytes = std::fs::read(scout_tests::components::HELLO).unwrap();
    let broken = runtime
        .load_bytes(&with_an_invalid_function_body(&bytes))
        .expect("its shape loads");
    let error = broken.compiled().await.expect_err("its compile fails");
    assert!(
        matches!(error, scout_host::CallError::NotCompiled(_)),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("not a valid component"),
        "{error}"
    );
    assert!(broken.compile_error().is_some());
    let call = broken
        .call("hello_now", &json!({}), &Default::default())
        .await
        .expect_err("no call runs");
    assert_eq!(call.to_string(), error.to_string());
}

/// While a host loads its connectors (`Runtime::hold_compiles`, taken by
/// `Deployment::from_config`), the components loaded from their shape are
/// not compiled: their shapes' own compiles would otherwise wait behind
/// the real ones on wasmtime's shared pool. Once the hold is dropped they
/// compile in the background, with no call asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compiles_wait_while_a_host_loads_and_start_when_it_is_done() {
    let dir = scout_tests::serve::fresh_dir("cold-start-hold");
    let cache = dir.join("cache");
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.clone()),
        max_concurrent_calls: 2,
        ..Default::default()
    })
    .unwrap();
    let hold = runtime.hold_compiles();
    let loaded: Vec<_> = [
        scout_tests::components::HELLO,
        scout_tests::components::GITHUB,
    ]
    .iter()
    .map(|path| runtime.load_file(Path::new(path)).unwrap())
    .collect();
    // However slow the machine, nothing may be compiled while held.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(cached(&cache), 0, "no compile while the hold is taken");
    drop(hold);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while cached(&cache) < 2 && std::time::Instant::now() < until {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(cached(&cache), 2, "both compiled once the hold was dropped");
    for component in &loaded {
        assert_eq!(component.compile_error(), None);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
