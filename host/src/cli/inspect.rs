//! `scout-host inspect`: what a component offers and imports before anyone
//! serves it (a file, or an artifact pulled and checked first), or what a
//! remote MCP server offers now against what an operator reviewed.

use anyhow::{Context, Result};
use scout_host::inspect::Report;
use scout_host::runtime::default_cache_dir;
use scout_host::{Runtime, RuntimeConfig};
use std::path::{Path, PathBuf};

/// `scout-host inspect PATH`
#[derive(clap::Args)]
pub struct InspectArgs {
    /// The component (`.wasm`), `oci://REGISTRY/REPO:TAG` (or
    /// `…@sha256:…`), or `mcp+https://…` (`mcp+http://…`).
    path: PathBuf,
    /// An artifact: require a signature by this public key (repeat for several).
    #[arg(long = "key")]
    keys: Vec<PathBuf>,
    /// An artifact: reach its registry over plain HTTP (loopback or internal only).
    #[arg(long)]
    plain_http: bool,
    /// Prints the stable JSON form (documented in docs/operating.md).
    #[arg(long)]
    json: bool,
    /// A remote server: `serve`'s configuration, whose store holds the
    /// reviews to compare with (the connector whose `mcp` is this URL).
    #[arg(long)]
    config: Option<PathBuf>,
    /// A remote server, or an artifact's registry, on loopback or a
    /// private network (a test server, an internal one).
    #[arg(long)]
    allow_private_network: bool,
}

/// Prints the report; exits 2 when a remote server needs a review or a
/// component imports what it may not (or is no connector).
pub fn run(args: InspectArgs) -> Result<()> {
    if args.path.to_string_lossy().starts_with("mcp+") {
        remote(args)
    } else {
        component(args)
    }
}

fn remote(args: InspectArgs) -> Result<()> {
    let InspectArgs {
        path,
        json,
        config,
        allow_private_network,
        ..
    } = args;
    let url = path.to_string_lossy()["mcp+".len()..].to_string();
    let report = inspect_remote(&url, config.as_deref(), allow_private_network)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    if report.needs_review() {
        std::process::exit(2);
    }
    Ok(())
}

fn component(args: InspectArgs) -> Result<()> {
    let InspectArgs {
        path,
        json,
        keys,
        plain_http,
        allow_private_network,
        ..
    } = args;
    // An artifact is pulled into the cache, every byte checked
    // (and its signature, given keys), and the cached bytes inspected.
    let path = if scout_host::artifact::ArtifactRef::is_artifact(&path.to_string_lossy()) {
        use scout_host::artifact::signature::TrustedKeys;
        use scout_host::artifact::{ArtifactCache, ArtifactRef, pull};
        let reference = ArtifactRef::parse(&path.to_string_lossy())?;
        let trust = if keys.is_empty() {
            None
        } else {
            Some(TrustedKeys::load(&keys)?)
        };
        let pulled = tokio::runtime::Runtime::new()?.block_on(pull(
            &reference,
            &super::artifacts::registry_options(&reference, plain_http, allow_private_network),
            &ArtifactCache::default_location(),
            trust.as_ref(),
        ))?;
        eprintln!(
            "scout-host: {} (layer {}{})",
            pulled.pinned,
            pulled.layer,
            pulled
                .signed_by
                .as_deref()
                .map(|k| format!(", signed by the key in {k}"))
                .unwrap_or_default()
        );
        pulled.path
    } else {
        path
    };
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: default_cache_dir(),
        max_concurrent_calls: 1,
        ..Default::default()
    })?;
    let info = match runtime.inspect_file(&path) {
        Ok(info) => info,
        // Not a connector, or a foreign one: its imports first, then why.
        Err(problem) => {
            let imports = runtime
                .imports_of_file(&path)
                .with_context(|| format!("inspecting {}", path.display()))?;
            let report = scout_host::inspect::RefusedReport::new(&imports, &problem);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.to_text());
            }
            std::process::exit(2);
        }
    };
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

/// `inspect mcp+…`: lists the server and, with `config`, compares with the
/// reviews in `serve`'s store (read only) for the connector at that URL.
fn inspect_remote(
    url: &str,
    config: Option<&Path>,
    allow_private_network: bool,
) -> Result<scout_host::remote::inspect::RemoteReport> {
    let rt = tokio::runtime::Runtime::new()?;
    let Some(config) = config else {
        return rt
            .block_on(scout_host::remote::inspect::inspect(
                url,
                allow_private_network,
                false,
                None,
            ))
            .map_err(anyhow::Error::msg);
    };
    let config = scout_host::serve::ServeConfig::load(config)?;
    let connector = config
        .connectors
        .iter()
        .find(|(_, c)| c.mcp.as_deref() == Some(url))
        .map(|(name, c)| (name.clone(), c.allow_private_network, c.legacy_sse()))
        .with_context(|| format!("no connector in the configuration has `mcp = \"{url}\"`"))?;
    let store = scout_host::store::open(
        config.store_location(),
        &scout_host::credentials::process_env,
        scout_host::store::Access::ReadOnly,
    )?;
    let stored = rt.block_on(store.stored_reviews())?;
    rt.block_on(scout_host::remote::inspect::inspect(
        url,
        allow_private_network || connector.1,
        connector.2,
        Some((&connector.0, store.as_ref(), stored)),
    ))
    .map_err(anyhow::Error::msg)
}
