//! `scout-host docs`: the permissions and connectors pages, generated from
//! the code, the components and their fixtures, so they cannot drift from
//! what is served.

use anyhow::{Context, Result};
use scout_host::runtime::default_cache_dir;
use scout_host::{Runtime, RuntimeConfig};
use std::path::PathBuf;

/// `scout-host docs`
#[derive(clap::Args)]
pub struct DocsArgs {
    /// Connector components the pages show.
    #[arg(long = "component")]
    components: Vec<PathBuf>,
    /// Where to write the permissions page.
    #[arg(long, default_value = "docs/permissions.md")]
    out: PathBuf,
    /// Where to write the connectors page.
    #[arg(long, default_value = "docs/connectors.md")]
    connectors_out: PathBuf,
    /// The directory holding each connector's `NAME/fixtures/`.
    #[arg(long, default_value = "connectors")]
    connectors_dir: PathBuf,
    /// `serve`'s configuration: the permissions page then lists its own
    /// roles (`[roles.NAME]`) beside the seed's.
    #[arg(long)]
    config: Option<PathBuf>,
}

/// Writes both pages, saying where.
pub fn run(args: DocsArgs) -> Result<()> {
    let DocsArgs {
        components,
        out,
        connectors_out,
        connectors_dir,
        config,
    } = args;
    let roles = match &config {
        Some(path) => {
            let config = scout_host::config::ServeConfig::load(path)
                .with_context(|| format!("reading {}", path.display()))?;
            scout_host::policy::operator_roles::OperatorRoles::from_config(&config.roles)
                .map_err(anyhow::Error::msg)?
        }
        None => scout_host::policy::operator_roles::OperatorRoles::none(),
    };
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: default_cache_dir(),
        max_concurrent_calls: 1,
        ..Default::default()
    })?;
    let mut infos = Vec::new();
    for path in &components {
        infos.push(
            runtime
                .inspect_file(path)
                .with_context(|| format!("inspecting {}", path.display()))?,
        );
    }
    let catalog = scout_host::policy::Catalog::seed();
    let page = scout_host::docs::permissions_page_with_roles(
        &catalog,
        &infos.iter().map(|i| &i.manifest).collect::<Vec<_>>(),
        &roles,
    );
    std::fs::write(&out, page).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {}", out.display());
    let page = scout_host::docs::connectors_page(
        &catalog,
        &infos.iter().collect::<Vec<_>>(),
        &connectors_dir,
    );
    std::fs::write(&connectors_out, page)
        .with_context(|| format!("writing {}", connectors_out.display()))?;
    println!("wrote {}", connectors_out.display());
    Ok(())
}
