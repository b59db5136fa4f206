//! Builds every connector and test guest from source for wasm32-wasip2 and
//! records where each component landed (`target/connectors/NAME.wasm`,
//! `target/test-guests/NAME.wasm`) for the tests, the demo and the benches.
//!
//! Nothing is listed by hand: every crate under `connectors/` is a
//! connector and every crate under `tests/guests/` a test guest (the
//! workspace's members include both folders by glob). Besides the paths,
//! `components.rs` holds `foreach_connector!` and `foreach_guest!`, which
//! hand a macro every name: the tests generate one module of tests per
//! connector from it, and `assert_test_exists!` fails the build of the
//! tests when a connector or guest has no tests of its own.

use scout_build::{Kind, Spec};
use std::path::{Path, PathBuf};

/// The crates under `root/dir`, as build specs of `kind`, sorted by name.
fn discover(root: &Path, dir: &str, kind: Kind) -> Vec<Spec> {
    let mut specs = Vec::new();
    let entries = std::fs::read_dir(root.join(dir)).unwrap_or_else(|e| panic!("{dir}: {e}"));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let manifest = path.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest).expect("read Cargo.toml");
        let package = package_name(&text)
            .unwrap_or_else(|| panic!("{}: no [package] name", manifest.display()));
        let name = path
            .file_name()
            .unwrap()
            .to_str()
            .expect("UTF-8 name")
            .to_string();
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        specs.push(Spec {
            name: leak(name.clone()),
            package: leak(package),
            dir: leak(format!("{dir}/{name}")),
            kind,
        });
    }
    specs.sort_by_key(|s| s.name);
    specs
}

/// The `name = "..."` of the `[package]` table.
fn package_name(cargo_toml: &str) -> Option<String> {
    let mut in_package = false;
    for line in cargo_toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some(rest) = line.strip_prefix("name")
            && let Some(value) = rest.trim_start().strip_prefix('=')
        {
            return Some(value.trim().trim_matches('"').to_string());
        }
    }
    None
}

/// `github` → `github`, `imports-sockets` → `imports_sockets`.
fn ident(name: &str) -> String {
    name.replace('-', "_")
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace_root = manifest_dir.parent().unwrap().to_path_buf();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target = std::env::var("TARGET").ok();
    let target_root =
        scout_build::target_root_of(&out_dir, target.as_deref()).unwrap_or_else(|| {
            panic!(
                "OUT_DIR {} is not laid out as cargo lays out a target directory",
                out_dir.display()
            )
        });
    // Test binaries find the same directory without looking for cargo's tag.
    println!(
        "cargo:rustc-env=SCOUT_TARGET_ROOT={}",
        target_root.display()
    );

    for dir in [
        "wit",
        "sdk/src",
        "sdk/macros",
        "sdk/manifest",
        "sdk/Cargo.toml",
        "connectors",
        "tests/guests",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace_root.join(dir).display()
        );
    }
    println!(
        "cargo:rerun-if-changed={}",
        workspace_root.join("Cargo.lock").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        workspace_root.join("Cargo.toml").display()
    );
    println!("cargo:rerun-if-env-changed=WASM_OPT");

    let mut specs = discover(&workspace_root, "connectors", Kind::Connector);
    specs.extend(discover(&workspace_root, "tests/guests", Kind::TestGuest));

    println!("cargo:rerun-if-env-changed=SCOUT_COMPONENTS");
    // `SCOUT_COMPONENTS=shopify,hostile` builds only those (while another
    // connector of the workspace is half-written); the others keep the path
    // of their last build, which may be stale or missing.
    let only: Option<Vec<String>> = std::env::var("SCOUT_COMPONENTS")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    let chosen: Vec<Spec> = specs
        .iter()
        .filter(|s| only.as_ref().is_none_or(|o| o.iter().any(|n| n == s.name)))
        .cloned()
        .collect();
    let built = match scout_build::build(&workspace_root, &target_root, &chosen) {
        Ok(paths) => paths,
        Err(e) => panic!("{e}"),
    };
    let paths: Vec<PathBuf> = specs
        .iter()
        .map(
            |spec| match chosen.iter().position(|c| c.name == spec.name) {
                Some(i) => built[i].clone(),
                None => scout_build::artifact_path(&target_root, spec),
            },
        )
        .collect();
    let mut src = String::from("// Generated by build.rs: where each component was built.\n");
    for (spec, path) in specs.iter().zip(&paths) {
        let konst = ident(spec.name).to_uppercase();
        src.push_str(&format!(
            "/// `{}` ({})\npub const {konst}: &str = {:?};\n",
            spec.name,
            spec.dir,
            path.display().to_string()
        ));
    }
    let of_kind = |kind: Kind| -> Vec<(&Spec, &PathBuf)> {
        specs
            .iter()
            .zip(&paths)
            .filter(|(spec, _)| spec.kind == kind)
            .collect()
    };
    let connectors = of_kind(Kind::Connector);
    let listed: Vec<String> = connectors
        .iter()
        .map(|(_, path)| format!("{:?}", path.display().to_string()))
        .collect();
    src.push_str(&format!(
        "/// Every connector component built, by name.\npub const CONNECTORS: &[&str] = &[{}];\n",
        listed.join(", ")
    ));
    for (kind, mac) in [
        (Kind::Connector, "foreach_connector"),
        (Kind::TestGuest, "foreach_guest"),
    ] {
        let items: Vec<String> = of_kind(kind)
            .iter()
            .map(|(spec, path)| format!("{} => {:?}", ident(spec.name), path.display().to_string()))
            .collect();
        src.push_str(&format!(
            "/// Hands `$mac` every {} as `name => \"path/to/name.wasm\"`.\n#[macro_export]\nmacro_rules! {mac} {{\n    ($mac:ident) => {{\n        $mac!({});\n    }};\n}}\n",
            if kind == Kind::Connector { "connector" } else { "test guest" },
            items.join(", ")
        ));
    }
    std::fs::write(out_dir.join("components.rs"), src).unwrap();
}
