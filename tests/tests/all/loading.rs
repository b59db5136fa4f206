//! Loading: the manifest must match the exports, bad arguments never reach
//! the guest, and compiled components are cached on disk.

use scout_host::{CallError, Capabilities, LoadError, Runtime, RuntimeConfig};
use scout_tests::components;
use serde_json::json;
use std::path::{Path, PathBuf};

fn runtime(cache_dir: Option<PathBuf>) -> Runtime {
    Runtime::new(RuntimeConfig {
        cache_dir,
        max_concurrent_calls: 4,
        ..Default::default()
    })
    .expect("runtime")
}

fn github_bytes() -> Vec<u8> {
    std::fs::read(components::GITHUB).expect("github component was built")
}

use scout_tests::patch_bytes as patch;

#[test]
fn a_component_without_a_manifest_is_refused() {
    let bytes = patch(
        &github_bytes(),
        b"scout-connector-manifest",
        b"scout-connector-manifesX",
    );
    let err = runtime(None).load_bytes(&bytes).err().expect("refused");
    assert!(matches!(err, LoadError::Manifest(_)), "{err:?}");
}

#[test]
fn a_manifest_that_disagrees_with_the_exports_is_refused() {
    // The manifest describes `commenx`, the component exports `comment`.
    let bytes = patch(
        &github_bytes(),
        br#""function":"comment""#,
        br#""function":"commenx""#,
    );
    let err = runtime(None).load_bytes(&bytes).err().expect("refused");
    assert!(
        matches!(&err, LoadError::Mismatch(m) if m.contains("comment")),
        "{err:?}"
    );
}

#[test]
fn a_manifest_that_turns_a_write_tool_into_a_read_tool_is_refused() {
    let bytes = github_bytes();
    let manifest = scout_host::runtime::read_manifest(&bytes).unwrap();
    assert!(
        manifest
            .tools
            .iter()
            .any(|t| t.function == "create-branch" && t.effect == scout_host::Effect::Write)
    );
    let bytes = patch(
        &bytes,
        br#""function":"create-branch","effect":"write""#,
        br#""function":"create-branch","effect":"read" "#,
    );
    let err = runtime(None).load_bytes(&bytes).err().expect("refused");
    assert!(
        matches!(
            err,
            LoadError::Mismatch(_) | LoadError::Manifest(_) | LoadError::ManifestInvalid(_)
        ),
        "{err:?}"
    );
}

#[test]
fn garbage_is_refused_with_a_clear_error() {
    let err = runtime(None)
        .load_bytes(b"\0asm not really")
        .err()
        .expect("refused");
    assert!(matches!(err, LoadError::Compile(_)), "{err:?}");
    let err = runtime(None)
        .load_file(Path::new("/nonexistent/x.wasm"))
        .err()
        .expect("refused");
    assert!(matches!(err, LoadError::Read { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn compiled_components_are_cached_on_disk_by_hash_and_engine() {
    let dir = std::env::temp_dir().join(format!("scout-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rt = runtime(Some(dir.clone()));
    let bytes = github_bytes();
    let entry = dir.join(format!("{}.cwasm", rt.cache_key(&bytes)));
    assert!(!entry.exists());
    // The first load reads the surface from the component's shape; its
    // compile (in the background) writes the entry once it ends.
    let first = rt.load_bytes(&bytes).expect("first load");
    first.compiled().await.expect("the background compile ends");
    assert!(
        entry.is_file(),
        "the compiled component was written to {}",
        entry.display()
    );
    let modified = std::fs::metadata(&entry).unwrap().modified().unwrap();
    let component = rt.load_bytes(&bytes).expect("second load reads the cache");
    assert_eq!(
        std::fs::metadata(&entry).unwrap().modified().unwrap(),
        modified,
        "the entry was reused, not rewritten"
    );
    assert!(component.tool("github_read_file").is_some());
    // A corrupt entry is dropped and the component compiled again.
    std::fs::write(&entry, b"corrupt").unwrap();
    let again = rt
        .load_bytes(&bytes)
        .expect("a corrupt cache entry is not fatal");
    again.compiled().await.expect("compiled again");
    assert_ne!(std::fs::read(&entry).unwrap(), b"corrupt");
    // Another component gets another key.
    let other = std::fs::read(components::HOSTILE).unwrap();
    assert_ne!(rt.cache_key(&other), rt.cache_key(&bytes));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn arguments_that_do_not_fit_the_wit_types_never_reach_the_guest() {
    let rt = runtime(None);
    let component = rt.load_bytes(&github_bytes()).unwrap();
    let caps = Capabilities::default();
    let cases = [
        (
            "github_read_file",
            json!({"owner": "octo", "repo": "hello"}),
            "$.path",
            "missing",
        ),
        (
            "github_read_file",
            json!({"owner": 7, "repo": "hello", "path": "a"}),
            "$.owner",
            "string",
        ),
        (
            "github_read_file",
            json!({"owner": "o", "repo": "r", "path": "a", "extra": 1}),
            "$.extra",
            "unknown",
        ),
        (
            "github_list_issues",
            json!({"owner": "o", "repo": "r", "limit": 300}),
            "$.limit",
            "0 to 255",
        ),
        (
            "github_list_issues",
            json!({"owner": "o", "repo": "r", "state": "merged"}),
            "$.state",
            "open, closed, all",
        ),
        (
            "github_read_issue",
            json!({"owner": "o", "repo": "r", "number": -1}),
            "$.number",
            "integer",
        ),
        (
            "github_read_issue",
            json!({"owner": "o", "repo": "r", "number": 1.5}),
            "$.number",
            "integer",
        ),
        (
            "github_commit_files",
            json!({"owner": "o", "repo": "r", "branch": "b", "message": "m", "files": [{"path": "a", "content": "x"}, {"path": 3, "content": "y"}]}),
            "$.files[1].path",
            "string",
        ),
        (
            "github_read_file",
            json!(["not", "an", "object"]),
            "$",
            "object",
        ),
    ];
    for (tool, args, path, message) in cases {
        match component.call(tool, &args, &caps).await {
            Err(CallError::InvalidArguments {
                path: p,
                message: m,
            }) => {
                assert_eq!(p, path, "{tool} {args}");
                assert!(m.contains(message), "{tool} {args}: {m}");
            }
            other => panic!("{tool} {args}: expected invalid arguments, got {other:?}"),
        }
    }
    let err = component
        .call("github_merge_pull_request", &json!({}), &caps)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownTool(_)), "{err:?}");
}

#[test]
fn a_manifest_giving_a_read_tool_an_unsafe_route_is_refused() {
    let bytes = std::fs::read(components::HOSTILE).expect("hostile guest was built");
    let manifest = scout_host::runtime::read_manifest(&bytes).unwrap();
    let probe = manifest
        .tools
        .iter()
        .find(|t| t.function == "probe-route")
        .expect("probe-route is described");
    assert_eq!(probe.routes[0].to_string(), "GET /declared/{name}");
    // Same length, so the section stays well formed: a hand-edited manifest
    // cannot give a read tool a PUT, whatever the SDK would have refused.
    let bytes = patch(
        &bytes,
        br#""method":"GET","path":"/declared/"#,
        br#""method":"PUT","path":"/declared/"#,
    );
    let err = runtime(None).load_bytes(&bytes).err().expect("refused");
    assert!(
        matches!(&err, LoadError::ManifestInvalid(e) if e.to_string().contains("probe-route") && e.to_string().contains("PUT /declared/{name}")),
        "{err:?}"
    );
}

#[test]
fn a_manifest_of_the_old_contract_is_refused_with_what_to_do() {
    let bytes = patch(&github_bytes(), br#"{"format":2,"#, br#"{"format":1,"#);
    let err = runtime(None).load_bytes(&bytes).err().expect("refused");
    assert!(
        matches!(&err, LoadError::ManifestInvalid(e) if e.to_string().contains("format 1") && e.to_string().contains("0.2.0")),
        "{err:?}"
    );
}
