//! `scout-host build` and `new` for a connector in TypeScript.
//!
//! A TypeScript connector is `src/index.ts` (exporting `readTools` and/or
//! `writeTools`, as componentize-js expects of the WIT's `read-tools` and
//! `write-tools`) beside its `wit/`, importing the SDK as `scout-sdk` and
//! the contract's interfaces as `scout:connector/...@0.2.0`. The build
//! bundles it and the SDK into one ES module with esbuild (which strips the
//! types; the contract's imports stay imports), makes a component of it
//! with componentize-js, and ends in the step every language shares
//! ([`super::build::finish_component`]): the manifest from `wit/`, the load
//! check. Both tools are pinned here and provisioned once
//! ([`super::toolchain`]).

use super::build::{self, BuildArgs};
use super::new::{Names, NewArgs};
use super::{EXIT_ERROR, toolchain};
use anyhow::{Context, Result};
use std::path::Path;
use std::process::Command;

/// The esbuild release that bundles a connector.
pub const ESBUILD: &str = "esbuild@0.28.2";
/// The componentize-js release that makes the component (the one the
/// host's language tests pass with).
pub const COMPONENTIZE_JS: &str = "@bytecodealliance/componentize-js@0.23.0";

/// The runtime features componentize-js leaves out: the connector reaches
/// its service only through the contract's `http` handle. Standard output,
/// randomness and the clocks stay in: the host links them inert.
const DISABLED_FEATURES: &[&str] = &["http", "fetch-event"];

/// Builds the TypeScript connector in `args.dir`: exit 0 built and
/// loadable, 2 when a step fails (its tool's own message above).
pub fn build(args: &BuildArgs) -> Result<i32> {
    let dir = &args.dir;
    let entry = Path::new("src/index.ts");
    if !dir.join(entry).is_file() {
        anyhow::bail!(
            "{} has no src/index.ts: a TypeScript connector's tools are exported from there (start one with `scout-host new NAME --lang ts`)",
            dir.display()
        );
    }
    let wit = dir.join("wit");
    let world = build::connector_world(&wit)?;
    let tools = toolchain::npm_tools(&[ESBUILD, COMPONENTIZE_JS])?;
    let bin = tools.join("node_modules/.bin");
    let scratch = build::target_dir(args).join("scout");
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let scratch = scratch
        .canonicalize()
        .with_context(|| format!("resolving {}", scratch.display()))?;
    let bundle = scratch.join(format!("{world}.bundle.js"));
    let status = Command::new(bin.join("esbuild"))
        .current_dir(dir)
        .arg(entry)
        .args([
            "--bundle",
            "--format=esm",
            "--platform=neutral",
            "--external:scout:*",
            "--log-level=warning",
        ])
        .arg(format!("--outfile={}", bundle.display()))
        .status()
        .context("running esbuild (`scout-host build` provisioned it; remove the toolchain folder to provision it again)")?;
    if !status.success() {
        eprintln!("error: esbuild could not bundle src/index.ts ({status}); see its message above");
        return Ok(EXIT_ERROR);
    }
    let built = scratch.join(format!("{world}.componentized.wasm"));
    let status = Command::new(bin.join("componentize-js"))
        .current_dir(dir)
        .arg(&bundle)
        .arg("--wit")
        .arg("wit")
        .args(["--world-name", &world])
        .arg("--disable")
        .args(DISABLED_FEATURES)
        .arg("--out")
        .arg(&built)
        .status()
        .context("running componentize-js (`scout-host build` provisioned it; install Node.js 20+ if `node` is missing)")?;
    if !status.success() {
        eprintln!(
            "error: componentize-js could not make a component of src/index.ts for world `{world}` ({status}); see its message above"
        );
        return Ok(EXIT_ERROR);
    }
    let out = build::out_path(args, &world);
    build::finish_component(
        &built,
        &wit,
        Some(&world),
        &out,
        "bundled by esbuild 0.28.2, componentized by componentize-js 0.23.0",
    )
}

/// Scaffolds a TypeScript connector named `names` into `dir`.
pub fn scaffold(_args: &NewArgs, _names: &Names, _dir: &Path) -> Result<i32> {
    anyhow::bail!(
        "scaffolding a connector in TypeScript is not available in this version of scout-host yet"
    )
}
