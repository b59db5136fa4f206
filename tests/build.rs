//! Builds every connector and test guest from source for wasm32-wasip2 and
//! records where each component landed (`target/connectors/NAME.wasm`,
//! `target/test-guests/NAME.wasm`) for the tests, the demo and the benches.

use scout_build::{Kind, Spec};
use std::path::PathBuf;

const SPECS: &[Spec] = &[
    Spec {
        name: "github",
        package: "scout-connector-github",
        dir: "connectors/github",
        kind: Kind::Connector,
    },
    Spec {
        name: "agentmail",
        package: "scout-connector-agentmail",
        dir: "connectors/agentmail",
        kind: Kind::Connector,
    },
    Spec {
        name: "figma",
        package: "scout-connector-figma",
        dir: "connectors/figma",
        kind: Kind::Connector,
    },
    Spec {
        name: "railway",
        package: "scout-connector-railway",
        dir: "connectors/railway",
        kind: Kind::Connector,
    },
    Spec {
        name: "tailscale",
        package: "scout-connector-tailscale",
        dir: "connectors/tailscale",
        kind: Kind::Connector,
    },
    Spec {
        name: "googleads",
        package: "scout-connector-googleads",
        dir: "connectors/googleads",
        kind: Kind::Connector,
    },
    Spec {
        name: "microsoftads",
        package: "scout-connector-microsoftads",
        dir: "connectors/microsoftads",
        kind: Kind::Connector,
    },
    Spec {
        name: "firecrawl",
        package: "scout-connector-firecrawl",
        dir: "connectors/firecrawl",
        kind: Kind::Connector,
    },
    Spec {
        name: "contentsquare",
        package: "scout-connector-contentsquare",
        dir: "connectors/contentsquare",
        kind: Kind::Connector,
    },
    Spec {
        name: "writer",
        package: "scout-connector-writer",
        dir: "connectors/writer",
        kind: Kind::Connector,
    },
    Spec {
        name: "seo",
        package: "scout-connector-seo",
        dir: "connectors/seo",
        kind: Kind::Connector,
    },
    Spec {
        name: "searchconsole",
        package: "scout-connector-searchconsole",
        dir: "connectors/searchconsole",
        kind: Kind::Connector,
    },
    Spec {
        name: "sheets",
        package: "scout-connector-sheets",
        dir: "connectors/sheets",
        kind: Kind::Connector,
    },
    Spec {
        name: "analytics",
        package: "scout-connector-analytics",
        dir: "connectors/analytics",
        kind: Kind::Connector,
    },
    Spec {
        name: "cloudflare",
        package: "scout-connector-cloudflare",
        dir: "connectors/cloudflare",
        kind: Kind::Connector,
    },
    Spec {
        name: "dataforseo",
        package: "scout-connector-dataforseo",
        dir: "connectors/dataforseo",
        kind: Kind::Connector,
    },
    Spec {
        name: "shopify",
        package: "scout-connector-shopify",
        dir: "connectors/shopify",
        kind: Kind::Connector,
    },
    Spec {
        name: "hostile",
        package: "scout-guest-hostile",
        dir: "tests/guests/hostile",
        kind: Kind::TestGuest,
    },
    Spec {
        name: "imports-sockets",
        package: "scout-guest-imports-sockets",
        dir: "tests/guests/imports-sockets",
        kind: Kind::TestGuest,
    },
    Spec {
        name: "capabilities",
        package: "scout-guest-capabilities",
        dir: "tests/guests/capabilities",
        kind: Kind::TestGuest,
    },
    Spec {
        name: "imports-filesystem",
        package: "scout-guest-imports-filesystem",
        dir: "tests/guests/imports-filesystem",
        kind: Kind::TestGuest,
    },
];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace_root = manifest_dir.parent().unwrap().to_path_buf();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target_root =
        scout_build::target_root_of(&out_dir).expect("OUT_DIR is inside a cargo target directory");

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

    println!("cargo:rerun-if-env-changed=SCOUT_COMPONENTS");
    // `SCOUT_COMPONENTS=shopify,hostile` builds only those (while another
    // connector of the workspace is half-written); the others keep the path
    // of their last build, which may be stale or missing.
    let only: Option<Vec<String>> = std::env::var("SCOUT_COMPONENTS")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    let chosen: Vec<Spec> = SPECS
        .iter()
        .filter(|s| only.as_ref().is_none_or(|o| o.iter().any(|n| n == s.name)))
        .cloned()
        .collect();
    let built = match scout_build::build(&workspace_root, &target_root, &chosen) {
        Ok(paths) => paths,
        Err(e) => panic!("{e}"),
    };
    let paths: Vec<PathBuf> = SPECS
        .iter()
        .map(
            |spec| match chosen.iter().position(|c| c.name == spec.name) {
                Some(i) => built[i].clone(),
                None => scout_build::artifact_path(&target_root, spec),
            },
        )
        .collect();
    let mut src = String::from("// Generated by build.rs: where each component was built.\n");
    let paths_for_list = paths.clone();
    for (spec, path) in SPECS.iter().zip(paths) {
        let konst = spec.name.to_uppercase().replace('-', "_");
        src.push_str(&format!(
            "/// `{}` ({})\npub const {konst}: &str = {:?};\n",
            spec.name,
            spec.dir,
            path.display().to_string()
        ));
    }
    let connectors: Vec<String> = SPECS
        .iter()
        .zip(&paths_for_list)
        .filter(|(spec, _)| spec.kind == Kind::Connector)
        .map(|(_, path)| format!("{:?}", path.display().to_string()))
        .collect();
    src.push_str(&format!("/// Every connector component built, in build order.\npub const CONNECTORS: &[&str] = &[{}];\n", connectors.join(", ")));
    std::fs::write(out_dir.join("components.rs"), src).unwrap();
}
