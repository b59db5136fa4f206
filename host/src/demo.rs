//! `scout-host demo`: the GitHub connector end to end on one machine.
//!
//! Starts a loopback server that speaks GitHub's REST wire format, loads the
//! GitHub component (built from source by the workspace build), prints its
//! tool surface for a person's chat, makes one read call and one write call
//! through the execution boundary (the write waits for a person's approval,
//! which the demo gives), prints the trace from its SQLite file, and shows
//! that the token reached the server but never the guest.

use crate::approvals::Decider;
use crate::boundary::{Boundary, CallRequest, Executed, Session};
use crate::capabilities::Capabilities;
use crate::capabilities::http::{CredentialScheme, HttpCapability, HttpConfig, SecretSource};
use crate::policy::{BrandFacts, Catalog, Role, SessionInput, Switches};
use crate::runtime::{CallOutcome, Runtime, RuntimeConfig, default_cache_dir};
use crate::store::{SqliteStore, Store};
use anyhow::{Context, Result, bail};
use scout_tests::fake_github::FakeGitHub;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Runs the demo, printing to stdout.
pub async fn run() -> Result<()> {
    let token = format!(
        "ghp_demo{:016x}",
        (std::process::id() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    );
    // The demo's own switches: GitHub writes on, approvals on (the default).
    let switches = Switches::from_vars([
        ("GITHUB_ALLOW_WRITES", "true"),
        ("APPROVAL_TIMEOUT_MS", "10000"),
    ]);
    print!("{}", switches.banner());
    let github = FakeGitHub::start(&token).await;
    println!("fake GitHub API listening at {}", github.origin());

    let path = Path::new(scout_tests::components::GITHUB);
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: default_cache_dir(),
        ..Default::default()
    })?;
    let component = runtime
        .load_file(path)
        .with_context(|| format!("loading {}", path.display()))?;
    println!("loaded {} ({})\n", component.name(), path.display());

    let db = std::env::temp_dir().join(format!("scout-demo-{}.db", std::process::id()));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db)?);
    let boundary = Boundary::new(store.clone(), Catalog::seed(), switches);
    let session = Session::new(
        "demo-session",
        "acme",
        SessionInput::new(Role::PersonChat)
            .brand(BrandFacts::with_connectors(["github"]))
            .approval_channel(true),
    );
    let surface = boundary.open_session(&session)?;
    println!("tool surface of a person's chat with GitHub connected:");
    for tool in surface.surface.iter() {
        if tool.name.starts_with("mcp__github__") {
            let effect = component
                .tool(tool.name.trim_start_matches("mcp__github__"))
                .map(|t| t.effect.as_str())
                .unwrap_or("?");
            let gated = if tool.gate.is_gated() {
                "  (asks a person)"
            } else {
                ""
            };
            println!("  {effect:5}  {}{gated}", tool.name);
        }
    }

    let http = HttpCapability::new(
        HttpConfig::new(github.origin())
            .credential(CredentialScheme::Bearer, SecretSource::Value(token.clone()))
            // The demo's server is on loopback; production origins are public.
            .allow_private_network(true),
    )?;
    let caps = Capabilities::with_http(http);

    println!("\nread: github_read_file octo/hello README.md");
    let read = ran(boundary
        .call(
            &session,
            &component,
            CallRequest::new(
                "github_read_file",
                &json!({"owner": "octo", "repo": "hello", "path": "README.md"}),
            ),
            &caps,
        )
        .await?)?;
    println!("  -> {}", serde_json::to_string(&read.output)?);

    println!("\nwrite: github_create_branch octo/hello scout/demo (waits for a person)");
    let approver = {
        // The person decides through the approvals service, as the admin
        // API and the console do.
        let approvals = boundary.approvals().clone();
        tokio::spawn(async move {
            for _ in 0..500 {
                if let Some(a) = approvals
                    .pending("demo-session")
                    .await
                    .ok()
                    .and_then(|p| p.into_iter().next())
                {
                    println!("  a person approves approval #{} for {}", a.id, a.tool);
                    let person = Decider::Person {
                        subject: "demo person",
                        actor: json!({
                            "kind": "person",
                            "subject": "demo person",
                            "sub": null,
                            "issuer": null,
                            "via": null,
                            "role": null,
                        }),
                    };
                    let _ = approvals.decide(a.id, true, person).await;
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let write = ran(boundary
        .call(
            &session,
            &component,
            CallRequest::new(
                "github_create_branch",
                &json!({"owner": "octo", "repo": "hello", "branch": "scout/demo"}),
            ),
            &caps,
        )
        .await?)?;
    approver.await?;
    println!("  -> {}", serde_json::to_string(&write.output)?);
    if read.output.ok().is_none() || write.output.ok().is_none() {
        bail!("a demo call failed");
    }

    println!("\ntrace ({}):", db.display());
    for event in store.trace_for_session("demo-session").await? {
        let detail = match &event.detail {
            Value::Null => String::new(),
            Value::Object(o) if o.contains_key("tools") && o["tools"].is_array() => {
                format!("{} tools", o["tools"].as_array().map_or(0, |a| a.len()))
            }
            other => other.to_string(),
        };
        println!(
            "  {:<10} {:<36} {:<20} {}",
            event.state.as_str(),
            event.tool.as_deref().unwrap_or("-"),
            event.rule.as_deref().unwrap_or(""),
            detail
        );
    }

    let requests = github.requests();
    let authorised = requests
        .iter()
        .filter(|r| {
            r.headers
                .iter()
                .any(|(k, v)| k == "authorization" && *v == format!("Bearer {token}"))
        })
        .count();
    println!(
        "\nthe server received {} requests, {authorised} with the host's token",
        requests.len()
    );
    let guest_saw = serde_json::to_string(&(&read, &write))?;
    println!(
        "the token appears in what the guest saw and returned (outputs, logs, stdout, stderr): {}",
        if guest_saw.contains(&token) {
            "YES (bug)"
        } else {
            "no"
        }
    );
    drop(store);
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
    if authorised != requests.len() || guest_saw.contains(&token) {
        bail!("the credential did not behave as designed");
    }
    Ok(())
}

fn ran(executed: Executed) -> Result<CallOutcome> {
    match executed {
        Executed::Ran(outcome) => Ok(outcome),
        Executed::Failed(e) => bail!("the call failed in the host: {e}"),
    }
}

#[cfg(test)]
mod tests {
    /// `scout-host demo` (the README's first command): its read and its
    /// approved write run, and the token reached GitHub and never the guest.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_demo_runs_to_its_end() {
        super::run().await.expect("the demo runs to its end");
    }
}
