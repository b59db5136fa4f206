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
    /// Prints the tool surface a session of ROLE would get.
    Surface {
        /// person-chat, inbound-email, coworker, specialist, goal-agent, goal-reviewer, read-only
        #[arg(long)]
        role: String,
        /// A saved profile (JSON) for coworker, specialist, goal-agent and goal-reviewer.
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Connectors whose credentials resolve, comma-separated (default: every one).
        #[arg(long)]
        connected: Option<String>,
        /// Prints JSON.
        #[arg(long)]
        json: bool,
    },
    /// Writes the permissions page (Markdown) generated from the code and the components.
    Docs {
        /// Connector components whose WITHHELD lists the page shows.
        #[arg(long = "component")]
        components: Vec<PathBuf>,
        /// Where to write it.
        #[arg(long, default_value = "docs/permissions.md")]
        out: PathBuf,
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
        Command::Surface { role, profile, connected, json } => surface(&role, profile.as_deref(), connected.as_deref(), json),
        Command::Docs { components, out } => {
            let runtime = Runtime::new(RuntimeConfig { cache_dir: default_cache_dir(), max_concurrent_calls: 1, ..Default::default() })?;
            let mut manifests = Vec::new();
            for path in &components {
                manifests.push(runtime.inspect_file(path).with_context(|| format!("inspecting {}", path.display()))?.manifest);
            }
            let page = scout_host::docs::permissions_page(&scout_host::policy::Catalog::seed(), &manifests.iter().collect::<Vec<_>>());
            std::fs::write(&out, page).with_context(|| format!("writing {}", out.display()))?;
            println!("wrote {}", out.display());
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

fn surface(role: &str, profile: Option<&std::path::Path>, connected: Option<&str>, json: bool) -> Result<()> {
    use scout_host::policy::{self, Catalog, Harness, Profile, Role, Route, SessionInput, Switches};
    let catalog = Catalog::seed();
    let role = match role {
        "person-chat" => Role::PersonChat,
        "inbound-email" => Role::InboundEmailTurn,
        "coworker" => Role::CoworkerRun { route: Route::Standard },
        "specialist" => Role::SpecialistRun { route: Route::Standard },
        "goal-agent" => Role::GoalAgentStep,
        "goal-reviewer" => Role::GoalReviewer,
        "read-only" => Role::ReadOnlyRoute { harness: Harness::Default },
        other => anyhow::bail!(
            "unknown role `{other}`: person-chat, inbound-email, coworker, specialist, goal-agent, goal-reviewer, read-only"
        ),
    };
    let mut brand = scout_host::docs::full_brand(&catalog);
    if let Some(list) = connected {
        brand.connected = list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
    }
    let mut input = SessionInput::new(role).brand(brand).approval_channel(role.can_ask_a_person());
    if let Some(path) = profile {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let profile: Profile = serde_json::from_str(&text).with_context(|| format!("{} is not a profile", path.display()))?;
        input = input.profile(profile);
    } else if role == Role::GoalAgentStep {
        input = input.profile(policy::presets::goal_agent(Default::default()));
    } else if role == Role::GoalReviewer {
        input = input.profile(policy::presets::goal_reviewer());
    }
    let surface = policy::surface(&input, &catalog, &Switches::from_env())?;
    if json {
        println!("{}", serde_json::to_string_pretty(&surface.iter().collect::<Vec<_>>())?);
    } else {
        for tool in surface.iter() {
            println!("{}", tool.name);
        }
    }
    Ok(())
}
