//! The `scout-host` command line.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use scout_host::inspect::Report;
use scout_host::runtime::default_cache_dir;
use scout_host::{Runtime, RuntimeConfig};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "scout-host", version, about = "Runs Scout connectors as WebAssembly components")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Shows a component's tools, schemas, WITHHELD list and imports.
    Inspect {
        /// The component (`.wasm`).
        path: PathBuf,
        /// Prints the stable JSON form (documented in README.md).
        #[arg(long)]
        json: bool,
    },
    /// Prints the operator switches as read from the environment, and any
    /// value not understood (the banner `serve` will print at start).
    Switches,
    /// Runs the GitHub connector against a loopback GitHub-format server.
    #[cfg(feature = "demo")]
    Demo,
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("SCOUT_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Inspect { path, json } => {
            let runtime = Runtime::new(RuntimeConfig { cache_dir: default_cache_dir(), max_concurrent_calls: 1, ..Default::default() })?;
            let info = runtime.inspect_file(&path).with_context(|| format!("inspecting {}", path.display()))?;
            let report = Report::new(&info);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.to_text());
            }
            if !info.forbidden_imports.is_empty() {
                std::process::exit(2);
            }
            Ok(())
        }
        Command::Switches => {
            print!("{}", scout_host::policy::Switches::from_env().banner());
            Ok(())
        }
        #[cfg(feature = "demo")]
        Command::Demo => {
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(scout_host::demo::run())
        }
    }
}
