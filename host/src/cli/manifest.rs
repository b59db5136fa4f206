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
use scout_manifest::{Manifest, SECTION};
use std::path::PathBuf;

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
    let manifest = Manifest::from_wit(&args.wit, args.world.as_deref())
        .with_context(|| format!("the connector's WIT in {}", args.wit.display()))?;
    let component =
        std::fs::read(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let with_manifest =
        scout_build::with_custom_section(&component, SECTION, manifest.to_json().as_bytes())
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("{} is not a component", args.input.display()))?;
    std::fs::write(&args.output, &with_manifest)
        .with_context(|| format!("writing {}", args.output.display()))?;
    let loaded = match super::load(&args.output) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!(
                "error: wrote {}, but the host will not load it: {e:#}",
                args.output.display()
            );
            return Ok(EXIT_ERROR);
        }
    };
    let info = loaded.info();
    let inert: Vec<&str> = info
        .imports
        .iter()
        .filter(|i| scout_host::runtime::import_inert(i))
        .map(String::as_str)
        .collect();
    println!(
        "wrote {} ({} bytes): {} with {} tools; capabilities: {}; inert WASI: {}",
        args.output.display(),
        with_manifest.len(),
        manifest.connector,
        info.tools.len(),
        none_if_empty(&info.capabilities()),
        none_if_empty(&inert),
    );
    Ok(EXIT_OK)
}

fn none_if_empty(items: &[&str]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}
