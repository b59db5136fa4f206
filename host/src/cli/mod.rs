//! Each subcommand of `scout-host`, a module each with its arguments and
//! its body, so `main` only parses and dispatches.
//!
//! They live in the binary, not the library: what they add is argument
//! handling and reporting; the runtime, the `http` capability and its
//! replay are the library's, exactly as `serve` uses them.

pub mod artifacts;
pub mod audit;
pub mod audit_host;
pub mod build;
pub mod call;
pub mod cases;
pub mod config;
pub mod connectors;
#[cfg(feature = "demo")]
pub mod demo;
pub mod docs;
pub mod health;
pub mod inspect;
pub mod lang;
pub mod manifest;
pub mod new;
pub mod policy;
pub mod python;
pub mod serve;
pub mod surface;
pub mod toolchain;
pub mod trace;
pub mod typescript;

use anyhow::{Context, Result};
use scout_host::runtime::default_cache_dir;
use scout_host::{LoadedComponent, Runtime, RuntimeConfig};
use std::path::Path;

/// Exit status: the tool answered (or every case passed).
pub const EXIT_OK: i32 = 0;
/// Exit status: the tool returned its error (or a case failed).
pub const EXIT_FAILED: i32 = 1;
/// Exit status: bad usage, a component or fixture that does not load, or a host error.
pub const EXIT_ERROR: i32 = 2;

/// What an admin API's refusal says: its `error.message`, or the body as
/// it came when it is not the API's error shape.
pub fn refusal_message(body: &serde_json::Value) -> String {
    match (body["error"]["message"].as_str(), body.as_str()) {
        (Some(message), _) => message.to_string(),
        (None, Some(text)) if !text.is_empty() => text.to_string(),
        _ => "no message".to_string(),
    }
}

/// Loads `path` with the checks `serve` applies (imports within the
/// contract, manifest matching the exports, usable tool types).
pub fn load(path: &Path) -> Result<LoadedComponent> {
    if !path.is_file() {
        anyhow::bail!("no component at {}", path.display());
    }
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: default_cache_dir(),
        max_concurrent_calls: 1,
        ..Default::default()
    })
    .context("starting the runtime")?;
    runtime
        .load_file(path)
        .with_context(|| format!("loading {}", path.display()))
}

/// The wire name of `tool` in `component`: the wire name itself, or the
/// WIT function name (`read-file` for `github_read_file`).
pub fn tool_name(component: &LoadedComponent, tool: &str) -> Result<String> {
    let tools = component.tools();
    if let Some(t) = tools.iter().find(|t| t.name == tool || t.function == tool) {
        return Ok(t.name.clone());
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    anyhow::bail!(
        "`{}` has no tool `{tool}`; its tools: {}",
        component.name(),
        names.join(", ")
    )
}

/// Whether a call of `tool` may carry a GraphQL mutation on a `(graphql)`
/// route when no person is asked (the author's own `call` and `test`): a
/// write tool may, except that a tool whose gate tells reads from mutations
/// may only when its `query` argument parses as one, as `serve` decides.
pub fn graphql_mutations_for(
    component: &LoadedComponent,
    tool: &str,
    arguments: &serde_json::Value,
) -> bool {
    let manifest = &component.info().manifest;
    let Some(doc) = manifest
        .tools
        .iter()
        .find(|t| manifest.wire_name(&t.function) == tool)
    else {
        return false;
    };
    match (doc.effect, &doc.gate) {
        (scout_manifest::Effect::Read, _) => false,
        (_, Some(scout_manifest::Gate::MutationsNeedApproval { .. })) => {
            scout_host::capabilities::graphql::argument_mutates(arguments).unwrap_or(false)
        }
        _ => true,
    }
}

/// A tokio runtime for one command.
pub fn tokio() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting tokio")
}
