//! `scout-host config reference|schema`: the configuration file before a
//! host reads it. `reference` writes docs/configuration.md from the
//! configuration's types; `schema` prints their JSON Schema (for an editor).

use anyhow::{Context, Result};
use std::path::PathBuf;

/// `scout-host config`
#[derive(clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(clap::Subcommand)]
enum ConfigCommand {
    /// Writes the configuration reference (every key, its type, default
    /// and what it does), generated from the configuration's types.
    Reference {
        /// Where to write it.
        #[arg(long, default_value = "docs/configuration.md")]
        out: PathBuf,
    },
    /// Prints the configuration file's JSON Schema (draft 2020-12), for an
    /// editor that checks TOML against one (taplo, Even Better TOML).
    Schema,
}

/// Runs the subcommand; its exit status.
pub fn run(args: ConfigArgs) -> Result<i32> {
    match args.command {
        ConfigCommand::Reference { out } => {
            let page =
                scout_host::docs::config_reference::configuration_page().map_err(|missing| {
                    anyhow::anyhow!(
                        "the configuration's types do not say enough for the reference:\n  {}",
                        missing.join("\n  ")
                    )
                })?;
            std::fs::write(&out, page).with_context(|| format!("writing {}", out.display()))?;
            println!("wrote {}", out.display());
            Ok(super::EXIT_OK)
        }
        ConfigCommand::Schema => {
            let schema = scout_host::docs::config_reference::configuration_schema();
            println!("{}", serde_json::to_string_pretty(&schema)?);
            Ok(super::EXIT_OK)
        }
    }
}
