//! `scout-host manifest --wit DIR [--world W] IN.wasm -o OUT.wasm`: the
//! manifest of a connector written in another language, embedded into the
//! component its componentizer built (componentize-js, componentize-py).
//!
//! The manifest is made from the connector's WIT by the same function the
//! Rust SDK's `export!` calls at compile time (`Manifest::from_wit`), so a
//! connector in any language carries the same descriptions, parameter
//! docs and ranges, routes, gates, WITHHELD list and billing. The result is
//! then loaded as `serve` would load it: a component the host would refuse
//! is reported here, with why.

use super::{EXIT_ERROR, EXIT_OK};
use anyhow::{Context, Result};
use scout_host::LoadedComponent;
use scout_manifest::{Manifest, SECTION};
use std::path::{Path, PathBuf};

/// `scout-host manifest`
#[derive(clap::Args)]
pub struct ManifestArgs {
    /// The connector's WIT folder (its package, with `deps/`).
    #[arg(long)]
    pub wit: PathBuf,
    /// The connector's world, when its package defines more than one.
    #[arg(long)]
    pub world: Option<String>,
    /// The component the componentizer built.
    pub input: PathBuf,
    /// Where to write the component with its manifest (may be INPUT).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// Runs the command: exit 0 written and loadable, 2 otherwise.
pub fn run(args: ManifestArgs) -> Result<i32> {
    let component =
        std::fs::read(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let embedded = match embed(
        &component,
        &args.input,
        &args.wit,
        args.world.as_deref(),
        &args.output,
    )? {
        Ok(embedded) => embedded,
        Err(refused) => {
            eprintln!("error: {refused:#}");
            return Ok(EXIT_ERROR);
        }
    };
    let info = embedded.loaded.info();
    let inert: Vec<&str> = info
        .imports
        .iter()
        .filter(|i| scout_host::runtime::import_inert(i))
        .map(String::as_str)
        .collect();
    println!(
        "wrote {} ({} bytes): {} with {} tools; capabilities: {}; inert WASI: {}",
        args.output.display(),
        embedded.size,
        embedded.manifest.connector,
        info.tools.len(),
        none_if_empty(&info.capabilities()),
        none_if_empty(&inert),
    );
    Ok(EXIT_OK)
}

/// A component with its manifest embedded, written and loaded.
pub struct Embedded {
    /// The manifest made from the WIT.
    pub manifest: Manifest,
    /// The written component's size in bytes.
    pub size: usize,
    /// The component as `serve` loaded it.
    pub loaded: LoadedComponent,
}

/// The step after any componentizer: the manifest made from the
/// connector's WIT (`wit`, its `world`) embedded into `component` (read
/// from `input`, named in errors), written to `output`, and loaded as
/// `serve` would load it. The outer error is one before anything was
/// written (the WIT, a file that is not a component, the write); the inner
/// one says the host refuses what was written, and why.
pub fn embed(
    component: &[u8],
    input: &Path,
    wit: &Path,
    world: Option<&str>,
    output: &Path,
) -> Result<Result<Embedded>> {
    let manifest = Manifest::from_wit(wit, world)
        .with_context(|| format!("the connector's WIT in {}", wit.display()))?;
    let with_manifest =
        scout_build::with_custom_section(component, SECTION, manifest.to_json().as_bytes())
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("{} is not a component", input.display()))?;
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(output, &with_manifest)
        .with_context(|| format!("writing {}", output.display()))?;
    Ok(super::load(output)
        .with_context(|| format!("wrote {}, but the host will not load it", output.display()))
        .map(|loaded| Embedded {
            manifest,
            size: with_manifest.len(),
            loaded,
        }))
}

fn none_if_empty(items: &[&str]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}
