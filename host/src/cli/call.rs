//! `scout-host call`: one tool, once, in a fresh runtime, with the `http`
//! handle live, recording or replaying; what a connector author runs while
//! writing a tool, and how fixtures are captured.

use super::{EXIT_ERROR, EXIT_FAILED, EXIT_OK};
use anyhow::{Context, Result};
use scout_host::capabilities::http::HttpMode;
use scout_host::capabilities::replay::{Recorder, Replay, fixture_paths};
use scout_host::{
    CallOutcome, Capabilities, CredentialScheme, HttpCapability, HttpConfig, SecretSource,
    ToolOutput,
};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// The origin a replaying capability is bound to: never contacted.
pub const REPLAY_ORIGIN: &str = "https://replay.invalid";

/// `scout-host call COMPONENT TOOL JSON [...]`
#[derive(clap::Args)]
pub struct CallArgs {
    /// The component (`.wasm`).
    pub component: PathBuf,
    /// The tool: its wire name (`github_read_file`) or its WIT name (`read-file`).
    pub tool: String,
    /// The arguments: JSON text, or `@FILE` to read them from a file.
    pub arguments: String,
    /// Live: the origin the `http` handle is bound to (`https://api.example.com[/prefix]`).
    #[arg(long, conflicts_with = "replay")]
    pub origin: Option<String>,
    /// Live: the environment variable holding the secret the host injects.
    #[arg(long, requires = "origin")]
    pub secret_env: Option<String>,
    /// How the secret is injected: bearer (default), basic:USER, header:NAME, query:PARAM or none.
    #[arg(long, requires = "secret_env")]
    pub scheme: Option<String>,
    /// Live: allows an origin on a loopback or private address (local fakes).
    #[arg(long, requires = "origin")]
    pub allow_private_network: bool,
    /// Answers every request from the fixture files (`*.json`) in DIR; nothing is sent.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["origin", "record"])]
    pub replay: Option<PathBuf>,
    /// Live, and appends the exchanges (secret scrubbed, bodies byte for byte) to DIR/TOOL.json;
    /// CAPTURED only while every exchange in it came from a public address.
    #[arg(long, value_name = "DIR", requires = "origin")]
    pub record: Option<PathBuf>,
    /// Runs a write tool live: `call` asks no person, where `serve` would.
    #[arg(long)]
    pub yes: bool,
}

/// Reads the `--scheme` (the syntax of `serve`'s `credential` setting);
/// `none` injects nothing.
pub fn parse_scheme(text: &str) -> Result<Option<CredentialScheme>> {
    CredentialScheme::parse(text).map_err(|e| anyhow::anyhow!("--scheme {e}"))
}

fn arguments(text: &str) -> Result<Value> {
    let (text, from) = match text.strip_prefix('@') {
        Some(path) => (
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the arguments from {path}"))?,
            path.to_string(),
        ),
        None => (text.to_string(), "the command line".to_string()),
    };
    serde_json::from_str(&text).with_context(|| format!("the arguments from {from} are not JSON"))
}

/// Runs the command; the exit status on success.
pub fn run(args: CallArgs) -> Result<i32> {
    let arguments = arguments(&args.arguments)?;
    let component = super::load(&args.component)?;
    let tool = super::tool_name(&component, &args.tool)?;
    // A person approves each write `serve` runs; nobody is asked here.
    let writes = component
        .tool(&tool)
        .is_some_and(|t| t.effect == scout_host::Effect::Write);
    if writes {
        if args.replay.is_some() {
            eprintln!(
                "note: `{tool}` is a write: no person is asked here, as `serve` would ask one; replaying, nothing is sent"
            );
        } else if args.origin.is_some() && !args.yes {
            eprintln!(
                "error: `{tool}` is a write, and `call` runs it upstream without the person's approval `serve` would ask for: add --yes to run it, or --replay DIR to run it against fixtures"
            );
            return Ok(EXIT_ERROR);
        } else if args.origin.is_some() {
            eprintln!("note: `{tool}` is a write, run without a person's approval (--yes)");
        }
    }

    let mode = if let Some(dir) = &args.replay {
        let paths = fixture_paths(dir, &["cases.json"])?;
        if paths.is_empty() {
            anyhow::bail!("no fixture files (*.json) in {}", dir.display());
        }
        HttpMode::Replay(Arc::new(Replay::load(&paths)?))
    } else if let Some(dir) = &args.record {
        HttpMode::Record(Arc::new(Recorder::in_dir(dir, &tool)?))
    } else {
        HttpMode::Live
    };
    let origin = match (&args.origin, &mode) {
        (Some(origin), _) => Some(origin.clone()),
        (None, HttpMode::Replay(_)) => Some(REPLAY_ORIGIN.to_string()),
        (None, _) => None,
    };
    let mut caps = match origin {
        None => {
            eprintln!("http: none granted (give --origin, or --replay DIR)");
            Capabilities::default()
        }
        Some(origin) => {
            let mut config = HttpConfig::new(origin)
                .allow_private_network(args.allow_private_network)
                .mode(mode);
            if let Some(var) = &args.secret_env
                && let Some(scheme) = parse_scheme(args.scheme.as_deref().unwrap_or("bearer"))?
            {
                config = config.credential(scheme, SecretSource::Env(var.clone()));
            }
            Capabilities::with_http(
                HttpCapability::new(config).context("configuring the http handle")?,
            )
        }
    };

    // The author runs it: nobody else is asked (see `graphql_mutations_for`).
    caps.graphql_mutations = super::graphql_mutations_for(&component, &tool, &arguments);
    let outcome = super::tokio()?.block_on(component.call(&tool, &arguments, &caps));
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            account(None, &caps);
            eprintln!("error: {tool}: {e}");
            return Ok(EXIT_ERROR);
        }
    };
    account(Some(&outcome), &caps);
    if let Some(recorder) = caps.http.as_ref().and_then(|h| h.recorder())
        && let Some(e) = recorder.error()
    {
        eprintln!("error: {e}");
        return Ok(EXIT_ERROR);
    }
    println!("{}", serde_json::to_string_pretty(&outcome.output)?);
    Ok(match outcome.output {
        ToolOutput::Ok(_) => EXIT_OK,
        ToolOutput::Err(_) => EXIT_FAILED,
    })
}

/// The call's HTTP exchanges, guest logs and output, on stderr.
fn account(outcome: Option<&CallOutcome>, caps: &Capabilities) {
    if let Some(outcome) = outcome {
        for ex in &outcome.http {
            let result = match (ex.status, &ex.error) {
                (Some(status), _) => status.to_string(),
                (None, Some(e)) => e.clone(),
                (None, None) => "no answer".to_string(),
            };
            // `METHOD::GET` in some builds of the trace: the verb is the last part.
            let method = ex.method.rsplit("::").next().unwrap_or(&ex.method);
            eprintln!(
                "http: {method} {} -> {result} ({:.1} ms)",
                ex.path,
                ex.micros as f64 / 1000.0
            );
        }
        for line in &outcome.logs {
            eprintln!("log[{}]: {}", line.level, line.message);
        }
        for (name, text) in [("stdout", &outcome.stdout), ("stderr", &outcome.stderr)] {
            for line in text.lines() {
                eprintln!("guest {name}: {line}");
            }
        }
    }
    let Some(http) = &caps.http else { return };
    for name in http.dropped_headers() {
        eprintln!("note: the guest set header `{name}`, which the host owns: dropped, not sent");
    }
    if let Some(replay) = http.replay() {
        eprintln!(
            "replay: {} answered from fixtures, {} unmatched; nothing was sent",
            replay.answered(),
            replay.misses().len()
        );
        for miss in replay.misses() {
            eprintln!("unmatched request: {miss}");
        }
    }
    if let Some(recorder) = http.recorder() {
        if recorder.is_empty() {
            eprintln!("record: no exchange completed; nothing written");
        } else {
            eprintln!(
                "record: {} exchange(s) appended to {} ({})",
                recorder.len(),
                recorder.path().display(),
                match recorder.provenance() {
                    "CAPTURED" => "CAPTURED: every exchange in it came from a public address",
                    _ => "UNVERIFIED: not every exchange in it came from the vendor's service",
                }
            );
        }
    }
}
