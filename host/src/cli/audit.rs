//! `scout-host audit`: what a session of a role could actually cause,
//! made here from files and this process's environment, or asked of a
//! running host (`--host`, in `audit_host`).

use anyhow::Result;
use std::path::PathBuf;

/// `scout-host audit --role ROLE`
#[derive(clap::Args)]
pub struct AuditArgs {
    /// person-chat, inbound-email, coworker, specialist, goal-agent, goal-reviewer, read-only,
    /// or a role of the configuration's own (`[roles.NAME]`, with --config or --host)
    #[arg(long)]
    role: String,
    /// A profile (JSON: the body of PUT /v1/brands/{b}/profiles/{name}, or the
    /// profile itself), for a coworker or a specialist, e.g.
    /// {"kind": "coworker", "profile": {"name": "seo", "tools": ["Read", ...],
    /// "grant": {"connectors": ["dataforseo"], "allowances": {"dataforseo":
    /// {"perRunUsd": 1.0, "perDayUsd": 3.0}}}, "limits": {"runBudgetUsd": 0.5,
    /// "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 1}}}
    #[arg(long)]
    profile: Option<PathBuf>,
    /// `serve`'s configuration file: its connectors, origins and credentials, and its store.
    #[arg(
        long,
        required_unless_present_any = ["components", "host"],
        conflicts_with_all = ["components", "host"]
    )]
    config: Option<PathBuf>,
    /// Audits what a running host serves, with its switches, through its
    /// admin API (`GET /v1/audit`), instead of files and this process's
    /// environment.
    #[arg(long, conflicts_with_all = ["components", "profile"])]
    host: Option<String>,
    /// With --host: the environment variable holding an admin or viewer credential.
    #[arg(long, default_value = "SCOUT_ADMIN_TOKEN", requires = "host")]
    token_env: String,
    /// With --host: the name of one of the brand's saved profiles.
    #[arg(long, requires_all = ["host", "brand"])]
    saved_profile: Option<String>,
    /// Connector components to audit without a configuration (repeat for several).
    #[arg(long = "component")]
    components: Vec<PathBuf>,
    /// A brand whose connections and coworkers are read from the store
    /// (with --config or --host).
    #[arg(long)]
    brand: Option<String>,
    /// Connections no session used for this many days are stale.
    #[arg(long, default_value_t = scout_host::authority::DEFAULT_STALE_DAYS)]
    stale_days: u64,
    /// Prints the stable JSON form (documented in docs/operating.md).
    #[arg(long)]
    json: bool,
}

/// Prints the audit, readable or as its stable JSON.
pub fn run(args: AuditArgs) -> Result<()> {
    let AuditArgs {
        role,
        profile,
        config,
        host,
        token_env,
        saved_profile,
        components,
        brand,
        stale_days,
        json,
    } = args;
    if let Some(host) = host {
        return super::audit_host::run(&super::audit_host::Asked {
            host,
            token_env,
            role,
            brand,
            saved_profile,
            stale_days,
            json,
        });
    }
    if brand.is_some() && config.is_none() {
        anyhow::bail!(
            "`--brand` reads that brand's connections from a store: give `--config FILE` (serve's) or `--host URL`"
        );
    }
    let audit = scout_host::authority::from_command_line(
        &scout_host::authority::CommandLine {
            role,
            profile,
            brand,
            config,
            components,
            stale_days,
        },
        &scout_host::policy::Switches::from_env(),
        scout_host::credentials::process_env,
    )?;
    if json {
        println!("{}", serde_json::to_string_pretty(&audit)?);
    } else {
        print!("{}", audit.to_text());
    }
    Ok(())
}
