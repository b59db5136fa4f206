//! `scout-host serve` and `switches`: the host itself, over HTTP or one
//! session over stdio, and the banner of switches it starts with. `serve`
//! starts the process's log, as its configuration says.

use anyhow::Result;
use scout_host::logs::LogFormat;
use scout_host::serve::{ConfigFileError, ServeConfig};
use std::path::PathBuf;

/// `scout-host serve --config FILE`
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The configuration file (TOML; see docs/operating.md).
    #[arg(long)]
    config: PathBuf,
    /// Serves one session over stdio: needs --brand, --role and --connector.
    #[arg(long)]
    stdio: bool,
    /// stdio: the brand the session acts for.
    #[arg(long, requires = "stdio")]
    brand: Option<String>,
    /// stdio: the session's role (a seed role's name, or one of `[roles.NAME]`).
    #[arg(long, requires = "stdio")]
    role: Option<String>,
    /// stdio: a saved profile of the brand.
    #[arg(long, requires = "stdio")]
    profile: Option<String>,
    /// stdio: the connector served.
    #[arg(long, requires = "stdio")]
    connector: Option<String>,
}

/// Serves until stopped. The log is as the configuration says: the file is
/// read once, here, before the log starts (one it cannot read is reported
/// with the log in text).
pub fn run(args: ServeArgs) -> Result<()> {
    let config = ServeConfig::load(&args.config);
    let format = match &config {
        Ok(config) => config.log_format,
        Err(_) => LogFormat::Text,
    };
    scout_host::logs::init(format);
    let served = serve(config, args);
    // In JSON, the reason it stopped is a JSON line too.
    if let Err(e) = &served
        && format == LogFormat::Json
    {
        tracing::error!(target: scout_host::logs::START, error = %format!("{e:#}"), "serve stopped");
        std::process::exit(1);
    }
    served
}

fn serve(config: Result<ServeConfig, ConfigFileError>, args: ServeArgs) -> Result<()> {
    let ServeArgs {
        config: _,
        stdio,
        brand,
        role,
        profile,
        connector,
    } = args;
    let config = config?;
    let switches = scout_host::policy::Switches::from_env();
    // The banner goes to stderr: in stdio mode stdout is the protocol.
    scout_host::logs::banner(&switches.banner());
    let host = scout_host::serve::ServeHost::start(
        config,
        switches,
        scout_host::credentials::process_env,
    )?;
    // A stdio server has one client, whose calls mostly come one
    // at a time: one worker, so a call's wake-ups do not bounce
    // between idle workers (measured: 0.89x the server CPU per
    // read of two workers on two cores). `TOKIO_WORKER_THREADS`
    // still decides when set. Over HTTP, one worker per core.
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if stdio && std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        runtime.worker_threads(1);
    }
    let rt = runtime.enable_all().build()?;
    if stdio {
        let (Some(brand), Some(role), Some(connector)) = (brand, role, connector) else {
            anyhow::bail!("--stdio needs --brand, --role and --connector");
        };
        let request = scout_host::serve::OpenSession {
            brand,
            role,
            profile,
            ..Default::default()
        };
        rt.block_on(scout_host::serve::run_stdio(host, request, connector))
    } else {
        rt.block_on(scout_host::serve::run(host))
    }
}

/// `scout-host switches`: the operator switches as read from the
/// environment (the banner `serve` prints at start).
pub fn switches() -> Result<()> {
    print!("{}", scout_host::policy::Switches::from_env().banner());
    Ok(())
}
