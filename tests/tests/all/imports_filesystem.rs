//! The `imports-filesystem` test guest imports the filesystem and the wall
//! clock: inert since issue 54 (a filesystem with no preopened directory,
//! the host's clock), so it loads, is marked so, and finds nothing to read.

use scout_host::{Capabilities, Runtime, RuntimeConfig};
use scout_tests::components;
use serde_json::json;
use std::path::Path;

#[tokio::test(flavor = "multi_thread")]
async fn a_guest_importing_wasi_filesystem_loads_inert_and_opens_nothing() {
    let rt = Runtime::new(RuntimeConfig::default()).expect("runtime");
    let component = rt
        .load_file(Path::new(components::IMPORTS_FILESYSTEM))
        .expect("the filesystem and the wall clock are inert: it loads");
    let imports = &component.info().imports;
    for prefix in [
        "wasi:filesystem/types@",
        "wasi:filesystem/preopens@",
        "wasi:clocks/wall-clock@",
    ] {
        let name = imports
            .iter()
            .find(|n| n.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix} missing from {imports:?}"));
        assert!(scout_host::runtime::import_inert(name), "{name}");
    }
    assert!(component.info().forbidden_imports.is_empty());
    // No preopened directory: `/etc/passwd` cannot be opened.
    let outcome = component
        .call(
            "imports_filesystem_escape",
            &json!({}),
            &Capabilities::default(),
        )
        .await
        .expect("the call runs");
    let err = outcome.output.err().expect("the read fails");
    assert!(err["invalid-input"].is_string(), "{err}");
    assert!(outcome.output.ok().is_none());
}
