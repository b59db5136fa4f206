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
//!
//! The SDK (`sdk/typescript/`) and the template (`sdk/template-ts/`) are
//! embedded in the binary, so `new` works wherever the binary goes: the
//! scaffold vendors the SDK into `vendor/scout-sdk/` (its `tsconfig.json`
//! maps `scout-sdk` there for editors), and `build` resolves `scout-sdk` to
//! that copy, or, in a connector without one, to the binary's own copy
//! written under its target folder. The SDK declares no side effects and
//! keeps each capability in its own module, so a bundle imports only the
//! capabilities the connector uses, and its WIT world decides which it may.

use super::build::{self, BuildArgs};
use super::new::{self, CONTRACT, Names, NewArgs, STARTER_FIXTURE, TEMPLATE_WIT};
use super::{EXIT_ERROR, EXIT_OK, toolchain};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
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

/// The TypeScript SDK's files, by path inside it.
const SDK: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../../sdk/typescript/README.md"),
    ),
    (
        "package.json",
        include_str!("../../../sdk/typescript/package.json"),
    ),
    (
        "src/index.ts",
        include_str!("../../../sdk/typescript/src/index.ts"),
    ),
    (
        "src/errors.ts",
        include_str!("../../../sdk/typescript/src/errors.ts"),
    ),
    (
        "src/args.ts",
        include_str!("../../../sdk/typescript/src/args.ts"),
    ),
    (
        "src/capability.ts",
        include_str!("../../../sdk/typescript/src/capability.ts"),
    ),
    (
        "src/http.ts",
        include_str!("../../../sdk/typescript/src/http.ts"),
    ),
    (
        "src/graphql.ts",
        include_str!("../../../sdk/typescript/src/graphql.ts"),
    ),
    (
        "src/meter.ts",
        include_str!("../../../sdk/typescript/src/meter.ts"),
    ),
    (
        "src/folder.ts",
        include_str!("../../../sdk/typescript/src/folder.ts"),
    ),
    (
        "src/log.ts",
        include_str!("../../../sdk/typescript/src/log.ts"),
    ),
    (
        "src/pages.ts",
        include_str!("../../../sdk/typescript/src/pages.ts"),
    ),
    (
        "src/tools.ts",
        include_str!("../../../sdk/typescript/src/tools.ts"),
    ),
    (
        "src/contract/scout-connector-types.d.ts",
        include_str!("../../../sdk/typescript/src/contract/scout-connector-types.d.ts"),
    ),
    (
        "src/contract/scout-connector-http.d.ts",
        include_str!("../../../sdk/typescript/src/contract/scout-connector-http.d.ts"),
    ),
    (
        "src/contract/scout-connector-meter.d.ts",
        include_str!("../../../sdk/typescript/src/contract/scout-connector-meter.d.ts"),
    ),
    (
        "src/contract/scout-connector-folder.d.ts",
        include_str!("../../../sdk/typescript/src/contract/scout-connector-folder.d.ts"),
    ),
    (
        "src/contract/scout-connector-log.d.ts",
        include_str!("../../../sdk/typescript/src/contract/scout-connector-log.d.ts"),
    ),
    (
        "src/contract/runtime.d.ts",
        include_str!("../../../sdk/typescript/src/contract/runtime.d.ts"),
    ),
];

/// The template's own files (its WIT is the Rust template's: one example service).
const TEMPLATE: &[(&str, &str)] = &[
    (
        "src/index.ts",
        include_str!("../../../sdk/template-ts/src/index.ts"),
    ),
    (
        "package.json",
        include_str!("../../../sdk/template-ts/package.json"),
    ),
    (
        "tsconfig.json",
        include_str!("../../../sdk/template-ts/tsconfig.json"),
    ),
    (
        ".gitignore",
        include_str!("../../../sdk/template-ts/.gitignore"),
    ),
];

/// Where a scaffold's vendored SDK lives, relative to it.
pub const VENDORED_SDK: &str = "vendor/scout-sdk";

/// The SDK's entry, relative to the SDK's folder.
const SDK_ENTRY: &str = "src/index.ts";

/// The module `scout-sdk` resolves to when bundling the connector in
/// `dir`: its vendored copy, or else the binary's own written under
/// `scratch`.
fn sdk_entry(dir: &Path, scratch: &Path) -> Result<PathBuf> {
    let vendored = dir.join(VENDORED_SDK).join(SDK_ENTRY);
    if vendored.is_file() {
        return vendored
            .canonicalize()
            .with_context(|| format!("resolving {}", vendored.display()));
    }
    let copy = scratch.join("scout-sdk-ts");
    for (rel, text) in SDK {
        let path = copy.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(copy.join(SDK_ENTRY))
}

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
    let sdk = sdk_entry(dir, &scratch)?;
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
        .arg(format!("--alias:scout-sdk={}", sdk.display()))
        .arg(format!("--outfile={}", bundle.display()))
        .status()
        .context("running esbuild (`scout-host build` provisioned it; remove the toolchain folder to provision it again)")?;
    if !status.success() {
        eprintln!("error: esbuild could not bundle src/index.ts ({status}); see its message above");
        return Ok(EXIT_ERROR);
    }
    let built = scratch.join(format!("{world}.componentized.wasm"));
    let componentized = Command::new(bin.join("componentize-js"))
        .current_dir(dir)
        .arg(&bundle)
        .arg("--wit")
        .arg("wit")
        .args(["--world-name", &world])
        .arg("--disable")
        .args(DISABLED_FEATURES)
        .arg("--out")
        .arg(&built)
        .output()
        .context("running componentize-js (`scout-host build` provisioned it; install Node.js 20+ if `node` is missing)")?;
    if !componentized.status.success() {
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&componentized.stdout),
            String::from_utf8_lossy(&componentized.stderr)
        );
        eprint!("{said}");
        eprintln!(
            "error: componentize-js could not make a component of src/index.ts for world `{world}` ({}); see its message above",
            componentized.status
        );
        if let Some(interface) = missing_contract_import(&said) {
            eprintln!(
                "note: the code imports `{interface}`, which world `{world}` does not: include the capability's world in wit/ (`include scout:connector/with-CAPABILITY@0.2.0;`), or do not use it"
            );
        }
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

/// The contract interface componentize-js could not load (`Error loading
/// module "scout:connector/meter@0.2.0"`): one the code imports that the
/// connector's world does not.
fn missing_contract_import(said: &str) -> Option<&str> {
    let at = said.find("Error loading module \"scout:connector/")?;
    let rest = &said[at + "Error loading module \"".len()..];
    rest.split('"').next()
}

/// The files of the scaffold named `names`, relative to its folder.
pub fn files(names: &Names) -> Vec<(PathBuf, String)> {
    let wasm = format!("target/scout/{}.wasm", names.name);
    let wit = format!("wit/{}.wit", names.name);
    let mut files: Vec<(PathBuf, String)> = TEMPLATE
        .iter()
        .map(|(rel, text)| {
            let text = names
                .substitute(text)
                .replace("target/scout/example.wasm", &wasm)
                .replace("wit/example.wit", &wit);
            (PathBuf::from(rel), text)
        })
        .collect();
    files.push((PathBuf::from(&wit), names.substitute(TEMPLATE_WIT)));
    for (file, text) in CONTRACT {
        files.push((
            Path::new("wit/deps/scout-connector").join(file),
            text.to_string(),
        ));
    }
    files.push((
        PathBuf::from("fixtures/cases.json"),
        new::starter_cases(names),
    ));
    files.push((
        PathBuf::from("fixtures/items.json"),
        STARTER_FIXTURE.replace("src/lib.rs", "src/index.ts"),
    ));
    for (rel, text) in SDK {
        files.push((Path::new(VENDORED_SDK).join(rel), text.to_string()));
    }
    files
}

/// Scaffolds a TypeScript connector named `names` into `dir` (checked
/// empty by `new`).
pub fn scaffold(_args: &NewArgs, names: &Names, dir: &Path) -> Result<i32> {
    let files = files(names);
    new::write_files(dir, &files)?;
    let wasm = format!("target/scout/{}.wasm", names.name);
    println!(
        "created connector `{}` in TypeScript in {} ({} files)",
        names.name,
        dir.display(),
        files.len()
    );
    println!("next:");
    println!("  cd {}", dir.display());
    println!(
        "  scout-host build                                # -> {wasm} (esbuild, componentize-js: provisioned once with npm)"
    );
    println!("  scout-host test {wasm} --fixtures fixtures");
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::missing_contract_import;

    #[test]
    fn an_import_outside_the_world_is_named() {
        let said = "Exception while evaluating top-level script\nReferenceError: Error loading module \"scout:connector/meter@0.2.0\" (resolved path \"target/scout/scout:connector/meter@0.2.0\"): No such file or directory\n";
        assert_eq!(
            missing_contract_import(said),
            Some("scout:connector/meter@0.2.0")
        );
        assert_eq!(missing_contract_import("SyntaxError: x"), None);
    }
}
