//! `scout-host build [--dir CRATE]`: a connector crate built into a small
//! component, the way the workspace builds its own (`scout-build`).
//!
//! `cargo build --release --target wasm32-wasip2` makes a working component,
//! but a large one (a connector like the template: about 160 KB). This
//! command builds with the smallest-code settings (`opt-level = "z"`, LTO,
//! one codegen unit, stripped), stops the linker at the core module,
//! optimises it with `wasm-opt -Oz` when binaryen is installed, and then
//! makes the component with wit-component. It checks the result loads as
//! `serve` would load it and prints its size.

use super::{EXIT_ERROR, EXIT_OK};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `scout-host build`
#[derive(clap::Args)]
pub struct BuildArgs {
    /// The connector's crate (default: the current directory).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Cargo's target directory (default: `$CARGO_TARGET_DIR` or DIR/target).
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

/// Runs the command.
pub fn run(args: BuildArgs) -> Result<i32> {
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
    println!(
        "{} ({} bytes, {} tools, {})",
        out.display(),
        component.len(),
        loaded.tools().len(),
        if optimised {
            "optimised with wasm-opt -Oz"
        } else {
            "not optimised: wasm-opt is not installed"
        }
    );
    let undescribed = scout_host::runtime::undescribed_parameters(loaded.tools());
    if !undescribed.is_empty() {
        eprintln!(
            "note: {} parameter(s) have no description, so an agent sees only their names: {}\n      describe each under `Parameters:` in its tool's doc comment (`- name: what it means`, `- limit (1 to 100, default 20): ...`)",
            undescribed.len(),
            undescribed.join(", ")
        );
    }
    if !optimised {
        eprintln!(
            "note: wasm-opt (binaryen) is not installed; the component would be smaller optimised (apt-get install binaryen)"
        );
    }
    Ok(EXIT_OK)
}
