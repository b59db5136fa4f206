//! The `scout-host` command line.

mod cli;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use scout_host::inspect::Report;
use scout_host::runtime::default_cache_dir;
use scout_host::{Runtime, RuntimeConfig};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "scout-host",
    version,
    about = "Runs Scout connectors as WebAssembly components"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum TraceCommand {
    /// Writes every trace row after a cursor on stdout, oldest first, one
    /// JSON object per line with its `seq`; stderr says the cursor to resume
    /// from. For a SIEM: rows are what the trace holds, secrets scrubbed.
    Export {
        /// `serve`'s configuration file (its `[store]`).
        #[arg(long)]
        config: PathBuf,
        /// Export rows after this `seq` (0: from the start).
        #[arg(long, default_value_t = 0)]
        since: i64,
        /// At most this many rows.
        #[arg(long)]
        limit: Option<usize>,
        /// The output format.
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ExportFormat {
    /// One JSON object per line.
    Jsonl,
}

#[derive(Subcommand)]
enum Command {
    /// Shows a component's tools, schemas, WITHHELD list and imports (a
    /// file, or an OCI artifact pulled and checked first); or, given
    /// `mcp+https://HOST/PATH`, what a remote MCP server offers now against
    /// what an operator reviewed.
    Inspect {
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
    },
    /// Lists what a session of ROLE could actually cause: per tool its
    /// gate, routes, destinations, credential, folders and joint reads;
    /// with --config, also the dead authority serve's store holds.
    Audit {
        /// person-chat, inbound-email, coworker, specialist, goal-agent, goal-reviewer, read-only
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
    },
    /// Writes the permissions page and the connectors page (Markdown),
    /// generated from the code, the components and their fixtures.
    Docs {
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
    },
    /// Reads the trace `serve` keeps.
    Trace {
        #[command(subcommand)]
        command: TraceCommand,
    },
    /// Publishes a component to an OCI registry in the WebAssembly artifact
    /// layout (config `application/vnd.wasm.config.v0+json`, one
    /// `application/wasm` layer); prints the reference pinned at its digest
    /// as JSON. Registry credentials: SCOUT_REGISTRY_USERNAME and
    /// SCOUT_REGISTRY_PASSWORD, else the Docker config file.
    Push {
        /// The component (`.wasm`).
        file: PathBuf,
        /// Where: `oci://REGISTRY/REPOSITORY:TAG`.
        reference: String,
        /// Reach the registry over plain HTTP (loopback or internal only).
        #[arg(long)]
        plain_http: bool,
        /// The registry may be on loopback or a private network.
        #[arg(long)]
        allow_private_network: bool,
    },
    /// Pulls a component artifact into the shared artifact cache, every
    /// byte checked against its digest, and copies it to --output; prints
    /// the reference pinned at its digest as JSON.
    Pull {
        /// `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST`.
        reference: String,
        /// Where to write the component.
        #[arg(long)]
        output: PathBuf,
        /// Require a signature over the manifest digest by this public key
        /// (PEM, `cosign.pub`; repeat for several: any one will do).
        #[arg(long = "key")]
        keys: Vec<PathBuf>,
        /// Reach the registry over plain HTTP (loopback or internal only).
        #[arg(long)]
        plain_http: bool,
        /// The registry may be on loopback or a private network.
        #[arg(long)]
        allow_private_network: bool,
    },
    /// Signs an artifact's manifest digest with a private key and writes
    /// the signature beside it in cosign's layout (`sha256-HEX.sig`), which
    /// `cosign verify --key` and `require_signature` read. An encrypted key's
    /// password comes from COSIGN_PASSWORD.
    Sign {
        /// `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST`.
        reference: String,
        /// The private key (`cosign.key`, or a PKCS#8 PEM key).
        #[arg(long)]
        key: PathBuf,
        /// Reach the registry over plain HTTP (loopback or internal only).
        #[arg(long)]
        plain_http: bool,
        /// The registry may be on loopback or a private network.
        #[arg(long)]
        allow_private_network: bool,
    },
    /// Makes an ECDSA P-256 key pair for `sign`: PREFIX.key (encrypted with
    /// COSIGN_PASSWORD, cosign's format) and PREFIX.pub.
    Keygen {
        /// Where to write PREFIX.key and PREFIX.pub.
        #[arg(long)]
        output: PathBuf,
    },
    /// Prints the operator switches as read from the environment, and any
    /// value not understood (the banner `serve` will print at start).
    Switches,
    /// Serves the admin API and MCP endpoints (streamable HTTP) as the
    /// configuration file says; with `--stdio`, serves one session's
    /// connector over stdin/stdout instead (the admin API listens too, for
    /// approvals, when its address is free).
    Serve {
        /// The configuration file (TOML; see docs/operating.md).
        #[arg(long)]
        config: PathBuf,
        /// Serves one session over stdio: needs --brand, --role and --connector.
        #[arg(long)]
        stdio: bool,
        /// stdio: the brand the session acts for.
        #[arg(long, requires = "stdio")]
        brand: Option<String>,
        /// stdio: the session's role.
        #[arg(long, requires = "stdio")]
        role: Option<String>,
        /// stdio: a saved profile of the brand.
        #[arg(long, requires = "stdio")]
        profile: Option<String>,
        /// stdio: the connector served.
        #[arg(long, requires = "stdio")]
        connector: Option<String>,
    },
    /// Runs one tool once, in a fresh runtime, its `http` handle live,
    /// recording (--record DIR) or replaying (--replay DIR); prints the
    /// tool's output as JSON (`{"ok": ...}` or `{"err": ...}`) on stdout and
    /// the HTTP exchanges on stderr. Exit 0 ok, 1 tool error, 2 usage, load or host error.
    Call(cli::call::CallArgs),
    /// Runs the cases of DIR/cases.json against the fixtures in DIR, replay
    /// only (nothing is sent). Exit 0 all passed, 1 any failed, 2 usage or load error.
    Test(cli::cases::TestArgs),
    /// Creates a connector crate from the SDK's template.
    New(cli::new::NewArgs),
    /// A running fleet's connectors: `list`, and `add`, `upgrade` or
    /// `retire` one from a published artifact, through any host's admin
    /// API (the admin credential from SCOUT_ADMIN_TOKEN). Exit 0 done, 1
    /// refused by the host, 2 usage or the host unreachable.
    Connectors(cli::connectors::ConnectorsArgs),
    /// Builds the connector crate in DIR into a small component (`wasm-opt -Oz` when installed) and checks it loads.
    Build(cli::build::BuildArgs),
    /// Runs the GitHub connector against a loopback GitHub-format server.
    #[cfg(feature = "demo")]
    Demo,
    /// Runs the demo's fake GitHub API (GitHub's REST wire format, one
    /// seeded repository `octo/hello`) on 127.0.0.1:PORT until ctrl-c, for
    /// trying `serve` without a GitHub account.
    #[cfg(feature = "demo")]
    FakeGithub {
        #[arg(long, default_value_t = 7421)]
        port: u16,
        /// The token the fake server accepts.
        #[arg(long)]
        token: String,
    },
}

/// `--plain-http` and `--allow-private-network`: for this reference's
/// registry, and only it.
fn registry_options(
    reference: &scout_host::artifact::ArtifactRef,
    plain_http: bool,
    allow_private_network: bool,
) -> scout_host::artifact::RegistryOptions {
    let only = |yes: bool| {
        if yes {
            vec![reference.registry().to_string()]
        } else {
            Vec::new()
        }
    };
    scout_host::artifact::RegistryOptions {
        plain_http: only(plain_http),
        private_network: only(allow_private_network),
    }
}

/// `inspect mcp+…`: lists the server and, with `config`, compares with the
/// reviews in `serve`'s store (read only) for the connector at that URL.
fn inspect_remote(
    url: &str,
    config: Option<&std::path::Path>,
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
    let store =
        scout_host::serve::open_store_to_read(&config, scout_host::credentials::process_env)?;
    let stored = rt.block_on(store.stored_reviews())?;
    rt.block_on(scout_host::remote::inspect::inspect(
        url,
        allow_private_network || connector.1,
        connector.2,
        Some((&connector.0, store.as_ref(), stored)),
    ))
    .map_err(anyhow::Error::msg)
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    // `serve` logs as its configuration says: the file is read once, here
    // (one it cannot read is reported below, with the log in text).
    let mut serve_config = match &cli.command {
        Command::Serve { config, .. } => Some(scout_host::serve::ServeConfig::load(config)),
        _ => None,
    };
    let format = match &serve_config {
        Some(Ok(config)) => config.log_format,
        _ => scout_host::logs::LogFormat::Text,
    };
    scout_host::logs::init(format);
    // The author's commands exit with their own status (0, 1 or 2).
    let command = match cli.command {
        Command::Call(args) => exit_with(cli::call::run(args)),
        Command::Test(args) => exit_with(cli::cases::run(args)),
        Command::New(args) => exit_with(cli::new::run(args)),
        Command::Build(args) => exit_with(cli::build::run(args)),
        Command::Connectors(args) => exit_with(cli::connectors::run(args)),
        other => other,
    };
    match command {
        Command::Inspect {
            path,
            json,
            config,
            allow_private_network,
            ..
        } if path.to_string_lossy().starts_with("mcp+") => {
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
        Command::Inspect {
            path,
            json,
            keys,
            plain_http,
            allow_private_network,
            ..
        } => {
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
                    &registry_options(&reference, plain_http, allow_private_network),
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
        Command::Surface {
            role,
            profile,
            connected,
            brand,
            config,
            json,
        } => surface(
            &role,
            profile.as_deref(),
            connected.as_deref(),
            brand.as_deref().zip(config.as_deref()),
            json,
        ),
        Command::Audit {
            host: Some(host),
            role,
            brand,
            saved_profile,
            stale_days,
            json,
            token_env,
            ..
        } => cli::audit_host::run(&cli::audit_host::Asked {
            host,
            token_env,
            role,
            brand,
            saved_profile,
            stale_days,
            json,
        }),
        Command::Audit {
            role,
            profile,
            config,
            components,
            brand,
            stale_days,
            json,
            ..
        } => {
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
        Command::Docs {
            components,
            out,
            connectors_out,
            connectors_dir,
        } => {
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
            let page = scout_host::docs::permissions_page(
                &catalog,
                &infos.iter().map(|i| &i.manifest).collect::<Vec<_>>(),
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
        Command::Serve {
            config: _,
            stdio,
            brand,
            role,
            profile,
            connector,
        } => {
            let served = (|| {
                let config = serve_config
                    .take()
                    .context("the configuration of `serve` was not read")??;
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
                    let (Some(brand), Some(role), Some(connector)) = (brand, role, connector)
                    else {
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
            })();
            // In JSON, the reason it stopped is a JSON line too.
            if let Err(e) = &served
                && format == scout_host::logs::LogFormat::Json
            {
                tracing::error!(target: scout_host::logs::START, error = %format!("{e:#}"), "serve stopped");
                std::process::exit(1);
            }
            served
        }
        Command::Call(_)
        | Command::Test(_)
        | Command::New(_)
        | Command::Build(_)
        | Command::Connectors(_) => {
            unreachable!("handled above")
        }
        Command::Push {
            file,
            reference,
            plain_http,
            allow_private_network,
        } => {
            use scout_host::artifact::{ArtifactCache, ArtifactRef, push};
            let reference = ArtifactRef::parse(&reference)?;
            let options = registry_options(&reference, plain_http, allow_private_network);
            let rt = tokio::runtime::Runtime::new()?;
            let pushed = rt.block_on(push(
                &file,
                &reference,
                &options,
                &ArtifactCache::default_location(),
            ))?;
            println!(
                "{}",
                serde_json::json!({
                    "reference": reference.to_string(),
                    "pinned": pushed.pinned.to_string(),
                    "digest": pushed.digest,
                    "layer": pushed.layer,
                })
            );
            Ok(())
        }
        Command::Pull {
            reference,
            output,
            keys,
            plain_http,
            allow_private_network,
        } => {
            use scout_host::artifact::signature::TrustedKeys;
            use scout_host::artifact::{ArtifactCache, ArtifactRef, pull};
            let reference = ArtifactRef::parse(&reference)?;
            let options = registry_options(&reference, plain_http, allow_private_network);
            let trust = if keys.is_empty() {
                None
            } else {
                Some(TrustedKeys::load(&keys)?)
            };
            let rt = tokio::runtime::Runtime::new()?;
            let pulled = rt.block_on(pull(
                &reference,
                &options,
                &ArtifactCache::default_location(),
                trust.as_ref(),
            ))?;
            std::fs::copy(&pulled.path, &output)
                .with_context(|| format!("writing {}", output.display()))?;
            println!(
                "{}",
                serde_json::json!({
                    "reference": reference.to_string(),
                    "pinned": pulled.pinned.to_string(),
                    "digest": pulled.digest,
                    "layer": pulled.layer,
                    "cached": pulled.cached,
                    "signed_by": pulled.signed_by,
                })
            );
            Ok(())
        }
        Command::Sign {
            reference,
            key,
            plain_http,
            allow_private_network,
        } => {
            use scout_host::artifact::ArtifactRef;
            use scout_host::artifact::signature::{sign, signer};
            let reference = ArtifactRef::parse(&reference)?;
            let options = registry_options(&reference, plain_http, allow_private_network);
            let password = std::env::var("COSIGN_PASSWORD").ok();
            let signer = signer(&key, password.as_deref())?;
            let rt = tokio::runtime::Runtime::new()?;
            let signed = rt.block_on(sign(&reference, &signer, &options))?;
            println!(
                "{}",
                serde_json::json!({
                    "reference": reference.to_string(),
                    "digest": signed.digest,
                    "signature": signed.signature,
                })
            );
            Ok(())
        }
        Command::Keygen { output } => {
            let password = std::env::var("COSIGN_PASSWORD").map_err(|_| {
                anyhow::anyhow!("set COSIGN_PASSWORD: the private key is written encrypted with it")
            })?;
            let (private, public) = scout_host::artifact::signature::generate_key_pair(&password)?;
            let key = output.with_extension("key");
            let public_file = output.with_extension("pub");
            for file in [&key, &public_file] {
                if file.exists() {
                    anyhow::bail!("{} exists: not overwritten", file.display());
                }
            }
            {
                // The private key is readable by its owner alone.
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&key)
                    .and_then(|mut f| f.write_all(private.as_bytes()))
                    .with_context(|| format!("writing {}", key.display()))?;
            }
            std::fs::write(&public_file, public)
                .with_context(|| format!("writing {}", public_file.display()))?;
            println!("wrote {} and {}", key.display(), public_file.display());
            Ok(())
        }
        Command::Switches => {
            print!("{}", scout_host::policy::Switches::from_env().banner());
            Ok(())
        }
        Command::Trace {
            command:
                TraceCommand::Export {
                    config,
                    since,
                    limit,
                    format: ExportFormat::Jsonl,
                },
        } => {
            if since < 0 {
                anyhow::bail!("--since is a row's `seq` (0 or more)");
            }
            let config = scout_host::serve::ServeConfig::load(&config)?;
            let store = scout_host::serve::open_store_to_read(
                &config,
                scout_host::credentials::process_env,
            )?;
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let done = scout_host::audit::export(store.as_ref(), since, limit, &mut out)?;
            eprintln!(
                "scout-host: exported {} trace rows; resume with --since {}",
                done.rows, done.cursor
            );
            Ok(())
        }
        #[cfg(feature = "demo")]
        Command::Demo => {
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(scout_host::demo::run())
        }
        #[cfg(feature = "demo")]
        Command::FakeGithub { port, token } => {
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(async {
                let server = scout_tests::fake_github::FakeGitHub::start_on(port, &token).await?;
                println!(
                    "fake GitHub API at {} (repository octo/hello); ctrl-c stops it",
                    server.origin()
                );
                tokio::signal::ctrl_c().await?;
                Ok(())
            })
        }
    }
}

/// Exits with the command's status, or 2 after printing its error.
fn exit_with(result: Result<i32>) -> ! {
    std::process::exit(result.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        cli::EXIT_ERROR
    }))
}

fn surface(
    role: &str,
    profile: Option<&std::path::Path>,
    connected: Option<&str>,
    served_brand: Option<(&str, &std::path::Path)>,
    json: bool,
) -> Result<()> {
    use scout_host::policy::{self, Catalog, Profile, Role, SessionInput, Switches};
    let catalog = Catalog::seed();
    let role = Role::from_name(role)
        .ok_or_else(|| anyhow::anyhow!("unknown role `{role}`: {}", policy::ROLE_NAMES))?;
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
            .session_input(brand, role, input.profile.clone(), &Default::default())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        input = input.brand(resolved.brand);
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
