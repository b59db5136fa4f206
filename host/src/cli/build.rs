//! `scout-host build [--dir DIR] [--lang rust|ts|python]`: a connector
//! built into a small component that carries its manifest, checked to load
//! as `serve` would load it. The language is the one `--lang` names, or the
//! one DIR's files mark (`lang.rs`); TypeScript and Python go to their own
//! modules, which end, as any componentizer's output must, in
//! [`finish_component`]: the manifest made from the connector's `wit/`
//! embedded, the load checked, and the same summary printed as for Rust.
//!
//! A Rust crate is built the way the workspace builds its own (`scout-build`):
//! `cargo build --release --target wasm32-wasip2` makes a working component,
//! but a large one (a connector like the template: about 160 KB). This
//! command builds with the smallest-code settings (`opt-level = "z"`, LTO,
//! one codegen unit, stripped), stops the linker at the core module,
//! optimises it with `wasm-opt -Oz` when binaryen is installed, and then
//! makes the component with wit-component. It checks the result loads as
//! `serve` would load it and prints its size.

use super::lang::Language;
use super::{EXIT_ERROR, EXIT_OK};
use anyhow::{Context, Result};
use scout_host::LoadedComponent;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `scout-host build`
#[derive(clap::Args)]
pub struct BuildArgs {
    /// The connector's folder (default: the current directory).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// The connector's language (default: recognised from DIR's files).
    #[arg(long, value_enum)]
    pub lang: Option<Language>,
    /// Where build output goes (default: for Rust `$CARGO_TARGET_DIR` or DIR/target, else DIR/target).
    #[arg(long)]
    pub target_dir: Option<PathBuf>,
    /// Where to write the component (default: TARGET/scout/NAME.wasm).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The `[package] name` of the crate in `dir`.
fn package_name(dir: &Path) -> Result<String> {
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let value: toml::Table = text
        .parse()
        .with_context(|| format!("parsing {}", manifest.display()))?;
    value
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_string)
        .with_context(|| format!("{} has no [package] name", manifest.display()))
}

/// Runs the command: builds the connector in the language `--lang` names
/// or DIR's files mark.
pub fn run(args: BuildArgs) -> Result<i32> {
    let language = match args.lang {
        Some(language) => language,
        None => Language::detect(&args.dir)?,
    };
    match language {
        Language::Rust => build_rust(&args),
        Language::TypeScript => super::typescript::build(&args),
        Language::Python => super::python::build(&args),
    }
}

/// A Rust crate built with cargo and componentized by `scout-build`.
fn build_rust(args: &BuildArgs) -> Result<i32> {
    let name = package_name(&args.dir)?;
    let target_dir = args
        .target_dir
        .clone()
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(|| args.dir.join("target"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let status = Command::new(cargo)
        .current_dir(&args.dir)
        .args([
            "build",
            "--release",
            "--target",
            scout_build::TARGET,
            "--target-dir",
        ])
        .arg(&target_dir)
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "z")
        .env("CARGO_PROFILE_RELEASE_LTO", "true")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
        .env("CARGO_PROFILE_RELEASE_STRIP", "true")
        .env(
            scout_build::CORE_ONLY_FLAGS.0,
            scout_build::CORE_ONLY_FLAGS.1,
        )
        .status()
        .context("running cargo")?;
    if !status.success() {
        eprintln!("cargo build failed ({status})");
        return Ok(EXIT_ERROR);
    }
    let core_path = target_dir
        .join(scout_build::TARGET)
        .join("release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    let core =
        std::fs::read(&core_path).with_context(|| format!("reading {}", core_path.display()))?;
    let scratch = target_dir.join("scout");
    let (component, optimised) =
        scout_build::componentize(&core, &scratch).map_err(anyhow::Error::msg)?;
    let stem = name.strip_prefix("scout-connector-").unwrap_or(&name);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| scratch.join(format!("{stem}.wasm")));
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&out, &component).with_context(|| format!("writing {}", out.display()))?;
    let loaded = super::load(&out)?;
    report(
        &out,
        component.len(),
        &loaded,
        if optimised {
            "optimised with wasm-opt -Oz"
        } else {
            "not optimised: wasm-opt is not installed"
        },
    );
    if !optimised {
        eprintln!(
            "note: wasm-opt (binaryen) is not installed; the component would be smaller optimised (apt-get install binaryen)"
        );
    }
    Ok(EXIT_OK)
}

/// The build's output folder for a connector that is not a Rust crate:
/// `--target-dir`, else DIR/target.
pub fn target_dir(args: &BuildArgs) -> PathBuf {
    args.target_dir
        .clone()
        .unwrap_or_else(|| args.dir.join("target"))
}

/// Where the component of connector `stem` is written: `--out`, else
/// TARGET/scout/STEM.wasm (as for Rust).
pub fn out_path(args: &BuildArgs, stem: &str) -> PathBuf {
    args.out
        .clone()
        .unwrap_or_else(|| target_dir(args).join("scout").join(format!("{stem}.wasm")))
}

/// The connector's world in its WIT folder `wit` (its package must define
/// exactly one, as `Manifest::from_wit` requires): what a componentizer is
/// told to build.
pub fn connector_world(wit: &Path) -> Result<String> {
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve
        .push_dir(wit)
        .with_context(|| format!("reading the connector's WIT in {}", wit.display()))?;
    let package = &resolve.packages[package];
    let mut worlds = package.worlds.keys();
    match (worlds.next(), worlds.next()) {
        (Some(world), None) => Ok(world.clone()),
        (None, _) => anyhow::bail!(
            "the connector's WIT package `{}` in {} defines no world; define one that exports read-tools and/or write-tools",
            package.name,
            wit.display()
        ),
        (Some(_), Some(_)) => anyhow::bail!(
            "the connector's WIT package `{}` in {} defines {} worlds; a connector defines exactly one",
            package.name,
            wit.display(),
            package.worlds.len()
        ),
    }
}

/// The step after any componentizer: the manifest made from the
/// connector's WIT (`wit`, its `world`) embedded into the component at
/// `built`, the result written to `out` and loaded as `serve` would load
/// it, and the build's summary printed (`how` says what made it). Exit 0,
/// or 2 with the host's reason when it would refuse the component.
pub fn finish_component(
    built: &Path,
    wit: &Path,
    world: Option<&str>,
    out: &Path,
    how: &str,
) -> Result<i32> {
    let component = std::fs::read(built).with_context(|| format!("reading {}", built.display()))?;
    match super::manifest::embed(&component, built, wit, world, out)? {
        Ok(embedded) => {
            report(out, embedded.size, &embedded.loaded, how);
            Ok(EXIT_OK)
        }
        Err(refused) => {
            eprintln!("error: {refused:#}");
            Ok(EXIT_ERROR)
        }
    }
}

/// The build's summary: where the component is, its size and tools, `how`
/// it was made; then a note naming any parameter without a description.
fn report(out: &Path, size: usize, loaded: &LoadedComponent, how: &str) {
    println!(
        "{} ({size} bytes, {} tools, {how})",
        out.display(),
        loaded.tools().len(),
    );
    let undescribed = scout_host::runtime::undescribed_parameters(loaded.tools());
    if !undescribed.is_empty() {
        eprintln!(
            "note: {} parameter(s) have no description, so an agent sees only their names: {}\n      describe each under `Parameters:` in its tool's doc comment (`- name: what it means`, `- limit (1 to 100, default 20): ...`)",
            undescribed.len(),
            undescribed.join(", ")
        );
    }
}
