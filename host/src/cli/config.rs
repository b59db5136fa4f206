//! `scout-host config reference|schema|check`: the configuration file
//! before a host reads it. `reference` writes docs/configuration.md from the
//! configuration's types; `schema` prints their JSON Schema (for an editor);
//! `check` validates a file the way `serve` would at start, without
//! starting: no listener, no store, nothing fetched over the network.

use anyhow::{Context, Result};
use scout_host::config::StoreBackend;
use scout_host::policy::operator::{DeploymentSchema, OperatorPolicies, PolicyRevision};
use scout_host::serve::ServeConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

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
    /// Validates FILE as `serve` would at start, without starting: prints
    /// every error at once with its key and line:column (exit 1), else what
    /// the file would serve (exit 0). Reads the component, policy and TLS
    /// files it names; never the network (an OCI artifact or a remote
    /// server is checked when the host starts) and never the store.
    Check {
        /// `serve`'s configuration file.
        file: PathBuf,
        /// Prints the report as JSON.
        #[arg(long)]
        json: bool,
    },
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
        ConfigCommand::Check { file, json } => check(&file, json),
    }
}

/// One error of a configuration file: its key, where it is, and what.
#[derive(serde::Serialize)]
struct Problem {
    /// The key's path (`connectors.github.origin`); empty for the file.
    key: String,
    /// 1-based line and column of the key (or value) in the file.
    line: Option<usize>,
    column: Option<usize>,
    message: String,
}

/// The tables whose entries are checked one by one, so one bad entry does
/// not hide the next.
const TABLES_OF_ENTRIES: &[&str] = &["connectors", "brands", "roles", "registries"];

/// 1-based line and column of byte `at` in `text`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count() + 1)
        .unwrap_or(1);
    (line, column)
}

/// The path of the deepest key at byte `at`, and the span of that key (or
/// of its value, when `at` falls there).
fn key_at(table: &DeTable<'_>, at: usize) -> (Vec<String>, Option<std::ops::Range<usize>>) {
    for (key, value) in table.iter() {
        if key.span().contains(&at) {
            return (vec![key.get_ref().to_string()], Some(key.span()));
        }
        if let DeValue::Table(inner) = value.get_ref() {
            let (mut path, span) = key_at(inner, at);
            if !path.is_empty() {
                path.insert(0, key.get_ref().to_string());
                return (path, span);
            }
        }
        if value.span().contains(&at) {
            return (vec![key.get_ref().to_string()], Some(value.span()));
        }
    }
    (Vec::new(), None)
}

/// The span of the deepest key of `path` the file writes.
fn span_of(table: &DeTable<'_>, path: &[String]) -> Option<std::ops::Range<usize>> {
    let (first, rest) = path.split_first()?;
    let (key, value) = table.iter().find(|(k, _)| k.get_ref() == first)?;
    match value.get_ref() {
        DeValue::Table(inner) if !rest.is_empty() => span_of(inner, rest).or(Some(key.span())),
        _ => Some(key.span()),
    }
}

/// The key path a check's message starts with (`connectors.github.origin:
/// ...`, `brands."acme".max_live_sessions must ...`, `[store] url_env ...`).
fn message_key(message: &str) -> Vec<String> {
    let text = message.trim_start_matches('[');
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '.' if !quoted => segments.push(std::mem::take(&mut current)),
            ':' | ' ' | ']' | '=' if !quoted => break,
            _ => current.push(c),
        }
    }
    segments.push(current);
    segments.retain(|s| !s.is_empty());
    segments
}

impl Problem {
    fn at(
        text: &str,
        key: Vec<String>,
        span: Option<std::ops::Range<usize>>,
        message: String,
    ) -> Problem {
        let position = span.map(|s| line_column(text, s.start));
        Problem {
            key: key.join("."),
            line: position.map(|p| p.0),
            column: position.map(|p| p.1),
            message,
        }
    }

    /// A check's message, placed at the key it names when the file writes it.
    fn named(text: &str, root: &DeTable<'_>, message: &str) -> Problem {
        let key = message_key(message);
        let known = root
            .iter()
            .any(|(k, _)| key.first().is_some_and(|f| f == k.get_ref()));
        if !known {
            return Problem::at(text, Vec::new(), None, message.to_string());
        }
        let span = span_of(root, &key);
        Problem::at(text, key, span, message.to_string())
    }
}

/// What a valid file would serve, for the report.
#[derive(serde::Serialize, Default)]
struct Serves {
    listeners: Vec<String>,
    store: String,
    connectors: Vec<ConnectorReport>,
    roles: Vec<String>,
    policies: Vec<String>,
    /// What only the start can check (the network, the environment).
    at_start: Vec<String>,
}

#[derive(serde::Serialize)]
struct ConnectorReport {
    name: String,
    /// `component FILE`, `remote MCP server URL`, `OCI artifact REF`.
    source: String,
    /// The tools it serves, when its component is a file read here.
    tools: Vec<String>,
}

/// Each top-level key (each entry of a table of tables) deserialized on its
/// own: every structural error, and the table of the parts that read.
fn read_parts<'i>(text: &'i str, root: &DeTable<'i>, problems: &mut Vec<Problem>) -> DeTable<'i> {
    let whole = 0..text.len();
    let reads = |part: &DeTable<'i>| {
        ServeConfig::deserialize(toml::de::Deserializer::from(Spanned::new(
            whole.clone(),
            part.clone(),
        )))
    };
    let mut good = DeTable::new();
    for (key, value) in root.iter() {
        let entries = match value.get_ref() {
            DeValue::Table(entries) if TABLES_OF_ENTRIES.contains(&key.get_ref().as_ref()) => {
                entries
            }
            _ => {
                let mut part = DeTable::new();
                part.insert(key.clone(), value.clone());
                match reads(&part) {
                    Ok(_) => {
                        good.insert(key.clone(), value.clone());
                    }
                    Err(e) => problems.push(structural(text, root, &e)),
                }
                continue;
            }
        };
        let mut kept = DeTable::new();
        for (name, entry) in entries.iter() {
            let mut one = DeTable::new();
            one.insert(name.clone(), entry.clone());
            let mut part = DeTable::new();
            part.insert(key.clone(), Spanned::new(value.span(), DeValue::Table(one)));
            match reads(&part) {
                Ok(_) => {
                    kept.insert(name.clone(), entry.clone());
                }
                Err(e) => problems.push(structural(text, root, &e)),
            }
        }
        good.insert(
            key.clone(),
            Spanned::new(value.span(), DeValue::Table(kept)),
        );
    }
    good
}

/// A deserialization error placed at the key it points into.
fn structural(text: &str, root: &DeTable<'_>, error: &toml::de::Error) -> Problem {
    match error.span() {
        // The error's own span (a value, an unknown key), under the path of
        // the key it falls in.
        Some(span) => Problem::at(
            text,
            key_at(root, span.start).0,
            Some(span),
            error.message().trim().to_string(),
        ),
        None => Problem::at(text, Vec::new(), None, error.message().trim().to_string()),
    }
}

/// `config check FILE`.
fn check(file: &Path, json: bool) -> Result<i32> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => {
            let problem = Problem::at(
                "",
                Vec::new(),
                None,
                format!("cannot read {}: {e}", file.display()),
            );
            return Ok(report(file, &[problem], None, json));
        }
    };
    let text = text.as_str();
    let (root, syntax) = DeTable::parse_recoverable(text);
    let mut problems: Vec<Problem> = syntax
        .iter()
        .map(|e| Problem::at(text, Vec::new(), e.span(), e.message().trim().to_string()))
        .collect();
    if !problems.is_empty() {
        return Ok(report(file, &problems, None, json));
    }
    let root = root.into_inner();
    let good = read_parts(text, &root, &mut problems);
    let mut config = match ServeConfig::deserialize(toml::de::Deserializer::from(Spanned::new(
        0..text.len(),
        good,
    ))) {
        Ok(config) => config,
        Err(e) => {
            problems.push(structural(text, &root, &e));
            return Ok(report(file, &problems, None, json));
        }
    };
    let mut refused_connectors = std::collections::BTreeSet::new();
    for problem in config.problems() {
        for line in problem.to_string().lines() {
            let placed = Problem::named(text, &root, line);
            if let Some(name) = placed.key.strip_prefix("connectors.") {
                refused_connectors.insert(name.split('.').next().unwrap_or_default().to_string());
            }
            problems.push(placed);
        }
    }
    config.relative_to(file.parent().unwrap_or(Path::new(".")));
    let serves = what_it_serves(text, &root, &config, &refused_connectors, &mut problems)?;
    // In the file's order, which is how they are fixed.
    problems.sort_by_key(|p| (p.line, p.column));
    Ok(report(file, &problems, Some(&serves), json))
}

/// Loads what the file names from disk (components, policies, TLS files,
/// keys) as `serve` would, and says what it would serve.
fn what_it_serves(
    text: &str,
    root: &DeTable<'_>,
    config: &ServeConfig,
    refused: &std::collections::BTreeSet<String>,
    problems: &mut Vec<Problem>,
) -> Result<Serves> {
    let mut serves = Serves::default();
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    serves
        .listeners
        .push(format!("{scheme}://{} (admin API and MCP)", config.listen));
    if let Some(probe) = config.probe_listen {
        serves
            .listeners
            .push(format!("http://{probe} (probes: /livez, /readyz)"));
    }
    if let Some(metrics) = config.metrics_listen {
        serves
            .listeners
            .push(format!("http://{metrics} (/metrics)"));
    }
    serves.store = match config.store.backend {
        StoreBackend::Sqlite => format!(
            "sqlite {} (trace durable against {})",
            config.database.display(),
            serde_json::to_value(config.store.trace_durable_against)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        ),
        StoreBackend::Postgres => format!(
            "postgres, its URL from ${}",
            config.store.url_env.as_deref().unwrap_or_default()
        ),
    };
    let runtime = scout_host::Runtime::new(scout_host::RuntimeConfig {
        cache_dir: scout_host::runtime::default_cache_dir(),
        max_concurrent_calls: 1,
        ..Default::default()
    })
    .context("starting the runtime")?;
    let mut deployment = scout_host::deployment::Deployment::empty();
    let mut complete = refused.is_empty();
    for (name, connector) in &config.connectors {
        if refused.contains(name) {
            continue;
        }
        let source = if let Some(url) = &connector.mcp {
            format!("remote MCP server {url}")
        } else if let Some(artifact) = &connector.artifact {
            complete = false;
            serves.at_start.push(format!(
                "connectors.{name}: the OCI artifact {artifact} is checked at start: fetched then"
            ));
            serves.connectors.push(ConnectorReport {
                name: name.clone(),
                source: format!("OCI artifact {artifact}"),
                tools: Vec::new(),
            });
            continue;
        } else {
            format!("component {}", connector.component.display())
        };
        match deployment.add(
            &runtime,
            name,
            connector,
            &scout_host::credentials::process_env,
            &scout_host::store::NoReviews,
        ) {
            Ok(()) => {}
            Err(refused) => {
                complete = false;
                problems.push(Problem::named(
                    text,
                    root,
                    &format!("connectors.{name}: {}", refused.message),
                ));
                continue;
            }
        }
        let tools = match deployment.components.get(name) {
            Some(component) if connector.mcp.is_none() => {
                component.tools().iter().map(|t| t.name.clone()).collect()
            }
            _ => {
                serves.at_start.push(format!(
                    "connectors.{name}: the remote server is checked at start: its tools are listed then, each held until an operator reviews it"
                ));
                Vec::new()
            }
        };
        serves.connectors.push(ConnectorReport {
            name: name.clone(),
            source,
            tools,
        });
    }
    // A role the file's checks refused is reported with them.
    if let Ok(roles) = scout_host::policy::operator_roles::OperatorRoles::from_config(&config.roles)
    {
        if complete
            && let Err(errors) = roles.check_ceilings(
                &deployment.catalog,
                &deployment.remote.keys().cloned().collect(),
            )
        {
            for line in errors.lines() {
                problems.push(Problem::named(text, root, line));
            }
        }
        for role in roles.iter() {
            serves
                .roles
                .push(format!("{} (base {})", role.name, role.base.api_name()));
        }
    }
    match config.policy.docs() {
        Err(e) => problems.push(Problem::named(text, root, &format!("policy.files: {e}"))),
        Ok(docs) if docs.is_empty() => {}
        Ok(docs) if !complete => {
            serves.policies = docs.iter().map(|d| d.name.clone()).collect();
            serves.at_start.push(
                "policy.files: compiled at start, against the schema of every connector".into(),
            );
        }
        Ok(docs) => {
            let components: Vec<_> = deployment.components.values().map(|c| c.as_ref()).collect();
            let schema =
                DeploymentSchema::of(&components).context("generating the policy schema")?;
            let revision = PolicyRevision::of(0, &docs);
            match OperatorPolicies::compile(&docs, &schema, revision) {
                Ok(_) => serves.policies = docs.iter().map(|d| d.name.clone()).collect(),
                Err(errors) => {
                    for line in errors.to_string().lines() {
                        problems.push(Problem::named(text, root, &format!("policy.files: {line}")));
                    }
                }
            }
        }
    }
    if let Some(tls) = &config.tls {
        match tls.check() {
            Ok(()) => serves.listeners[0].push_str(&format!(
                ", certificate {} and key {}",
                tls.cert_file.display(),
                tls.key_file.display()
            )),
            Err(e) => problems.push(Problem::named(text, root, &format!("tls: {e}"))),
        }
    }
    for key in &config.signature_keys {
        if let Err(e) = std::fs::read(key) {
            problems.push(Problem::named(
                text,
                root,
                &format!("signature_keys: cannot read {}: {e}", key.display()),
            ));
        }
    }
    Ok(serves)
}

/// Prints the report; the exit status.
fn report(file: &Path, problems: &[Problem], serves: Option<&Serves>, json: bool) -> i32 {
    let status = if problems.is_empty() {
        super::EXIT_OK
    } else {
        super::EXIT_FAILED
    };
    if json {
        let body = serde_json::json!({
            "file": file.display().to_string(),
            "valid": problems.is_empty(),
            "errors": problems,
            "serves": if problems.is_empty() { serves } else { None },
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&body).unwrap_or_default()
        );
        return status;
    }
    if !problems.is_empty() {
        for problem in problems {
            let at = match (problem.line, problem.column) {
                (Some(line), Some(column)) => format!("{}:{line}:{column}", file.display()),
                _ => file.display().to_string(),
            };
            let key = if problem.key.is_empty() {
                String::new()
            } else {
                format!(" [{}]", problem.key)
            };
            println!("{at}:{key} {}", problem.message);
        }
        println!(
            "{} error{} in {}: not valid",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            file.display()
        );
        return status;
    }
    println!("{} is valid; it would serve:", file.display());
    if let Some(serves) = serves {
        for listener in &serves.listeners {
            println!("  listener {listener}");
        }
        println!("  store {}", serves.store);
        for connector in &serves.connectors {
            println!("  connector {}: {}", connector.name, connector.source);
            if !connector.tools.is_empty() {
                println!("    tools: {}", connector.tools.join(", "));
            }
        }
        for role in &serves.roles {
            println!("  role {role}");
        }
        for policy in &serves.policies {
            println!("  policy {policy}");
        }
        for note in &serves.at_start {
            println!("  checked at start: {note}");
        }
    }
    status
}
