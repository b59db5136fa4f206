//! `scout-host surface`: the tool surface a session of a role would get,
//! computed by the same policy `serve` applies, so an operator can see it
//! without opening a session.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// `scout-host surface --role ROLE`
#[derive(clap::Args)]
pub struct SurfaceArgs {
    /// person-chat, inbound-email, coworker, specialist, goal-agent, goal-reviewer, read-only,
    /// or a role of the configuration's own (`[roles.NAME]`, with --config)
    #[arg(long)]
    role: String,
    /// A saved profile (JSON) for coworker, specialist, goal-agent and goal-reviewer.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Connectors whose credentials resolve, comma-separated (default: every one).
    #[arg(long, conflicts_with = "brand")]
    connected: Option<String>,
    /// A brand whose connections are read from `serve`'s store (needs --config).
    #[arg(long, requires = "config")]
    brand: Option<String>,
    /// `serve`'s configuration file, for --brand.
    #[arg(long, requires = "brand")]
    config: Option<PathBuf>,
    /// Prints JSON.
    #[arg(long)]
    json: bool,
}

/// Prints the surface: one tool name a line, or JSON.
pub fn run(args: SurfaceArgs) -> Result<()> {
    surface(
        &args.role,
        args.profile.as_deref(),
        args.connected.as_deref(),
        args.brand.as_deref().zip(args.config.as_deref()),
        args.json,
    )
}

fn surface(
    role: &str,
    profile: Option<&Path>,
    connected: Option<&str>,
    served_brand: Option<(&str, &Path)>,
    json: bool,
) -> Result<()> {
    use scout_host::policy::operator_roles::OperatorRoles;
    use scout_host::policy::{self, Catalog, Profile, Role, SessionInput, Switches};
    let catalog = Catalog::seed();
    // The configuration's own roles, where one is given, beside the seed's.
    let roles = match served_brand {
        Some((_, config)) => {
            let config = scout_host::serve::ServeConfig::load(config)?;
            OperatorRoles::from_config(&config.roles).map_err(anyhow::Error::msg)?
        }
        None => OperatorRoles::none(),
    };
    let operator = roles.get(role).cloned();
    let role = match &operator {
        Some(operator) => operator.base,
        None => Role::from_name(role)
            .ok_or_else(|| anyhow::anyhow!("unknown role `{role}`: {}", roles.role_names()))?,
    };
    let mut brand = scout_host::docs::full_brand(&catalog);
    if let Some(list) = connected {
        brand.connected = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
    }
    let mut input = SessionInput::new(role)
        .brand(brand)
        .approval_channel(role.can_ask_a_person());
    if let Some(path) = profile {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let profile: Profile = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a profile", path.display()))?;
        input = input.profile(profile);
    } else if role == Role::GoalAgentStep {
        input = input.profile(policy::presets::goal_agent(Default::default()));
    } else if role == Role::GoalReviewer {
        input = input.profile(policy::presets::goal_reviewer());
    }
    if let Some((brand, config)) = served_brand {
        // The brand's own connections, from the store `serve` uses.
        let config = scout_host::serve::ServeConfig::load(config)?;
        let host = scout_host::serve::ServeHost::start(
            config,
            Switches::from_env(),
            scout_host::credentials::process_env,
        )?;
        let resolved = host
            .host()
            .session_input(brand, role, input.profile.clone(), &Default::default())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        input = input.brand(resolved.brand);
    }
    if let Some(operator) = &operator {
        input = operator.narrow(input);
    }
    let surface = policy::surface(&input, &catalog, &Switches::from_env())?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&surface.iter().collect::<Vec<_>>())?
        );
    } else {
        for tool in surface.iter() {
            println!("{}", tool.name);
        }
    }
    Ok(())
}
