//! `scout-host policy check|test|schema`: operators' Cedar policies before
//! a change (issue 56, item 5). `check` validates a candidate against the
//! schema generated from the deployment, the way `serve` compiles its
//! policies at start; `test` replays the calls a store recorded under the
//! candidate and prints the decisions that would change; `schema` prints
//! what a policy may name. The same what-if is the admin API's
//! `POST /v1/policies/test`, through the same replay
//! (`policy::operator::replay`).

use anyhow::{Context, Result};
use scout_host::policy::operator::replay::{self, Selection};
use scout_host::policy::operator::{
    DeploymentSchema, OperatorPolicies, PolicyDoc, PolicyErrors, PolicyRevision, PolicySource,
};
use std::path::{Path, PathBuf};

/// `scout-host policy`
#[derive(clap::Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    command: PolicyCommand,
}

#[derive(clap::Subcommand)]
enum PolicyCommand {
    /// Validates CANDIDATE (a `.cedar` file, or a directory of them) with
    /// the deployment's other policies against the schema generated from
    /// its connectors; prints every error with file:line:column and policy
    /// id (exit 1), else each policy and the tools it applies to (exit 0).
    Check {
        /// The candidate policy document, or a directory of `.cedar` documents.
        candidate: PathBuf,
        #[command(flatten)]
        deployment: DeploymentArgs,
        #[command(flatten)]
        naming: Naming,
    },
    /// Replays the calls the configuration's store recorded under
    /// CANDIDATE (with the same recorded history and time) and prints each
    /// call whose decision would change, then a summary. A call whose
    /// arguments cannot be opened (the store key, `store_key_env`, unset)
    /// is replayed without them, and a candidate policy reading them is
    /// reported as undecidable, never guessed. Exit 0 (a change is not an
    /// error), 1 for an invalid candidate, 2 for usage or the store.
    Test {
        /// The candidate policy document, or a directory of `.cedar` documents.
        candidate: PathBuf,
        /// `serve`'s configuration file: its connectors, policies and store.
        #[arg(long)]
        config: PathBuf,
        /// Only this session's calls.
        #[arg(long)]
        session: Option<String>,
        /// Only calls after this trace row (`seq`, as `trace export` counts)
        /// or since this time (RFC 3339, e.g. 2026-12-01T00:00:00Z).
        #[arg(long)]
        since: Option<String>,
        /// Prints the report as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        naming: Naming,
    },
    /// Prints the Cedar schema generated from the deployment: one action
    /// per served tool (its MCP name), its arguments typed from the WIT.
    Schema {
        #[command(flatten)]
        deployment: DeploymentArgs,
    },
}

/// Where the deployment's connectors come from.
#[derive(clap::Args)]
struct DeploymentArgs {
    /// `serve`'s configuration file: its connectors and policies.
    #[arg(
        long,
        required_unless_present = "components",
        conflicts_with = "components"
    )]
    config: Option<PathBuf>,
    /// Connector components, without a configuration (repeat for several).
    #[arg(long = "component")]
    components: Vec<PathBuf>,
}

/// Which document a candidate file replaces.
#[derive(clap::Args)]
struct Naming {
    /// The name of the document the candidate file replaces (as `[policy]
    /// files` names it, `policies/github.cedar`, or an API document's
    /// name). Default: its path relative to the configuration's folder
    /// when it lies there (a document edited in place replaces itself),
    /// else its file name (added beside the others).
    #[arg(long, value_name = "NAME")]
    replaces: Option<String>,
}

/// Runs the subcommand; its exit status.
pub fn run(args: PolicyArgs) -> Result<i32> {
    match args.command {
        PolicyCommand::Check {
            candidate,
            deployment,
            naming,
        } => check(&candidate, &deployment, naming.replaces.as_deref()),
        PolicyCommand::Test {
            candidate,
            config,
            session,
            since,
            json,
            naming,
        } => test(
            &candidate,
            &config,
            naming.replaces.as_deref(),
            session,
            since.as_deref(),
            json,
        ),
        PolicyCommand::Schema { deployment } => {
            let deployed = Deployed::load(&deployment)?;
            print!("{}", deployed.schema.text());
            Ok(super::EXIT_OK)
        }
    }
}

/// What a deployment puts before its policies: the schema of what it
/// serves and the documents in force.
struct Deployed {
    schema: DeploymentSchema,
    /// The documents in force besides the candidate: the configuration's
    /// (`[policy] files`), and with a store, those stored through the API.
    docs: Vec<PolicyDoc>,
    /// The store's change count of API documents (0 without a store).
    api_change: i64,
}

impl Deployed {
    /// The deployment of `--config` (its store's API documents too, when
    /// it has a store already) or of `--component`s.
    fn load(args: &DeploymentArgs) -> Result<Deployed> {
        let Some(path) = &args.config else {
            return Deployed::of_components(&args.components);
        };
        let config = scout_host::serve::ServeConfig::load(path)?;
        let no_store = config.store.backend == scout_host::config::StoreBackend::Sqlite
            && !config.database.exists();
        if no_store {
            return Deployed::of_config(&config, None);
        }
        let store = open_store(&config)?;
        Deployed::of_config(&config, Some(store.as_ref()))
    }

    /// The folder the configuration's document names are relative to.
    fn base(args: &DeploymentArgs) -> Option<PathBuf> {
        args.config
            .as_ref()
            .map(|config| config.parent().unwrap_or(Path::new(".")).to_path_buf())
    }

    /// The components' schema: no policies in force.
    fn of_components(paths: &[PathBuf]) -> Result<Deployed> {
        let components = paths
            .iter()
            .map(|path| super::load(path))
            .collect::<Result<Vec<_>>>()?;
        let schema = DeploymentSchema::of(&components.iter().collect::<Vec<_>>())
            .context("generating the policy schema")?;
        Ok(Deployed {
            schema,
            docs: Vec::new(),
            api_change: 0,
        })
    }

    /// The connectors `config` serves, loaded as `serve` loads them (an
    /// artifact from the cache, at the digest `store` recorded for its tag),
    /// and the documents in force: the configuration's (`[policy] files`),
    /// then those `store` holds from the admin API that the file does not
    /// own, as every host compiles them. A remote MCP server's tools are
    /// what it lists to a running host: they are not in this schema (the
    /// admin API's what-if, `POST /v1/policies/test`, validates against
    /// the host's).
    fn of_config(
        config: &scout_host::serve::ServeConfig,
        store: Option<&dyn scout_host::store::Store>,
    ) -> Result<Deployed> {
        let mut config = config.clone();
        if let Some(store) = store {
            scout_host::store::block(scout_host::deployment::use_cached_artifacts(
                &mut config,
                store,
                &scout_host::artifact::ArtifactCache::default_location(),
            ))?;
        }
        let runtime = scout_host::Runtime::new(scout_host::RuntimeConfig {
            cache_dir: scout_host::runtime::default_cache_dir(),
            max_concurrent_calls: 1,
            ..Default::default()
        })
        .context("starting the runtime")?;
        let deployment = scout_host::deployment::Deployment::from_config(
            &runtime,
            &config,
            &scout_host::credentials::process_env,
            &scout_host::store::NoReviews,
        )
        .map_err(|refused| anyhow::anyhow!("{refused}"))?;
        let components: Vec<_> = deployment
            .components
            .values()
            .map(|component| component.as_ref())
            .collect();
        let schema = DeploymentSchema::of(&components).context("generating the policy schema")?;
        let mut docs = config.policy.docs()?;
        let mut api_change = 0;
        if let Some(store) = store {
            let stored = scout_host::store::block(store.stored_policies())?;
            let api: Vec<PolicyDoc> = stored
                .live()
                .filter(|doc| !docs.iter().any(|file| file.name == doc.name))
                .map(|doc| PolicyDoc {
                    name: doc.name.clone(),
                    source: PolicySource::Api,
                    text: doc.text.clone(),
                })
                .collect();
            docs.extend(api);
            api_change = stored.change;
        }
        Ok(Deployed {
            schema,
            docs,
            api_change,
        })
    }

    /// `candidate` compiled with the deployment's other documents, or
    /// every error of the set.
    fn compile(&self, candidate: &[PolicyDoc]) -> Result<OperatorPolicies, PolicyErrors> {
        let docs = replay::with_candidate(&self.docs, candidate);
        let revision = PolicyRevision::of(self.api_change, &docs);
        OperatorPolicies::compile(&docs, &self.schema, revision)
    }
}

/// `config`'s store, read-only.
fn open_store(
    config: &scout_host::serve::ServeConfig,
) -> Result<std::sync::Arc<dyn scout_host::store::Store>> {
    Ok(scout_host::store::open(
        config.store_location(),
        &scout_host::credentials::process_env,
        scout_host::store::Access::ReadOnly,
    )?)
}

/// The candidate's documents: the file, or every `.cedar` file of the
/// directory (in name order). Each is named as `[policy] files` names a
/// document, by its path relative to the configuration's folder, so a
/// document edited in place replaces itself; one elsewhere by its file
/// name, or (a single file) by `replaces`.
fn candidate_docs(
    path: &Path,
    base: Option<&Path>,
    replaces: Option<&str>,
) -> Result<Vec<PolicyDoc>> {
    let files = if path.is_dir() {
        if replaces.is_some() {
            anyhow::bail!(
                "--replaces names the one document a candidate file replaces: give a file, not a directory"
            );
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading the directory {}", path.display()))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "cedar"))
            .collect();
        files.sort();
        if files.is_empty() {
            anyhow::bail!(
                "{} holds no `.cedar` file: give a policy document or a directory of them",
                path.display()
            );
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    let base = base.and_then(|b| b.canonicalize().ok());
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading the candidate {}", file.display()))?;
            let name = match replaces {
                Some(name) => name.to_string(),
                None => doc_name(&file, base.as_deref()),
            };
            Ok(PolicyDoc {
                name,
                source: PolicySource::File(file),
                text,
            })
        })
        .collect()
}

/// `file`'s document name: its path relative to `base` (the
/// configuration's folder) when it lies there, else its file name.
fn doc_name(file: &Path, base: Option<&Path>) -> String {
    let full = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    if let Some(relative) = base.and_then(|base| full.strip_prefix(base).ok()) {
        return relative.display().to_string();
    }
    file.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.display().to_string())
}

fn check(candidate: &Path, deployment: &DeploymentArgs, replaces: Option<&str>) -> Result<i32> {
    let docs = candidate_docs(candidate, Deployed::base(deployment).as_deref(), replaces)?;
    let deployed = Deployed::load(deployment)?;
    match deployed.compile(&docs) {
        Err(errors) => {
            eprintln!("{errors}");
            Ok(super::EXIT_FAILED)
        }
        Ok(policies) => {
            let mut listed = 0;
            for (id, tools) in policies.applies_to() {
                listed += 1;
                println!("{id}: {}", tools.join(", "));
            }
            println!(
                "valid: {listed} policies under {} against {} tools",
                policies.revision(),
                deployed.schema.actions().count()
            );
            Ok(super::EXIT_OK)
        }
    }
}

fn test(
    candidate: &Path,
    config_path: &Path,
    replaces: Option<&str>,
    session: Option<String>,
    since: Option<&str>,
    json: bool,
) -> Result<i32> {
    let base = config_path.parent().unwrap_or(Path::new("."));
    let docs = candidate_docs(candidate, Some(base), replaces)?;
    let config = scout_host::serve::ServeConfig::load(config_path)?;
    if config.store.backend == scout_host::config::StoreBackend::Sqlite && !config.database.exists()
    {
        anyhow::bail!(
            "there is no store at {}: `policy test` replays the calls serve recorded in it (`database` in {})",
            config.database.display(),
            config_path.display()
        );
    }
    let store = open_store(&config)?;
    let deployed = Deployed::of_config(&config, Some(store.as_ref()))?;
    let policies = match deployed.compile(&docs) {
        Ok(policies) => policies,
        Err(errors) => {
            eprintln!("{errors}");
            return Ok(super::EXIT_FAILED);
        }
    };
    let mut selection = Selection {
        session,
        ..Default::default()
    };
    match since {
        None => {}
        Some(text) => match text.parse::<i64>() {
            Ok(seq) if seq >= 0 => selection.after_seq = seq,
            _ => {
                let at = chrono::DateTime::parse_from_rfc3339(text).with_context(|| {
                    format!("--since {text}: give a trace row's `seq` or an RFC 3339 time")
                })?;
                selection.since_ms = Some(at.timestamp_millis());
            }
        },
    }
    // The store key opens the arguments sealed in each decision row; it is
    // `serve`'s, read from the same variable. Without it, the calls are
    // replayed without their arguments.
    let open = replay::store_key_opener(&config, &scout_host::credentials::process_env)
        .map_err(|e| anyhow::anyhow!(e))?;
    let calls =
        scout_host::store::block(replay::recorded_calls(store.as_ref(), &selection, &open))?;
    let report = replay::replay(&calls, &policies);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    Ok(super::EXIT_OK)
}
