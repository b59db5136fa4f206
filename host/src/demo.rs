//! `scout-host demo`: the GitHub connector end to end on one machine.
//!
//! Starts a loopback server that speaks GitHub's REST wire format, loads the
//! GitHub component (built from source by the workspace build), prints its
//! tool surface, makes one read call and one write call, and shows that the
//! token reached the server but never the guest.

use crate::capabilities::Capabilities;
use crate::capabilities::http::{CredentialScheme, HttpCapability, HttpConfig, SecretSource};
use crate::runtime::{Runtime, RuntimeConfig, default_cache_dir};
use anyhow::{Context, Result, bail};
use scout_tests::fake_github::FakeGitHub;
use serde_json::json;
use std::path::Path;

/// Runs the demo, printing to stdout.
pub async fn run() -> Result<()> {
    let token = format!("ghp_demo{:016x}", std::process::id() as u64 * 0x9e37_79b9_7f4a_7c15 % u64::MAX);
    print!("{}", crate::policy::Switches::from_env().banner());
    let github = FakeGitHub::start(&token).await;
    println!("fake GitHub API listening at {}", github.origin());

    let path = Path::new(scout_tests::components::GITHUB);
    let runtime = Runtime::new(RuntimeConfig { cache_dir: default_cache_dir(), ..Default::default() })?;
    let component = runtime.load_file(path).with_context(|| format!("loading {}", path.display()))?;
    println!("loaded {} ({})\n", component.name(), path.display());
    println!("tool surface:");
    for tool in component.tools() {
        println!("  {:5}  {}", tool.effect.as_str(), tool.name);
    }

    let http = HttpCapability::new(
        HttpConfig::new(github.origin())
            .credential(CredentialScheme::Bearer, SecretSource::Value(token.clone()))
            // The demo's server is on loopback; production origins are public.
            .allow_private_network(true),
    )?;
    let caps = Capabilities::with_http(http);

    println!("\nread: github_read_file octo/hello README.md");
    let read = component.call("github_read_file", &json!({"owner": "octo", "repo": "hello", "path": "README.md"}), &caps).await?;
    println!("  -> {}", serde_json::to_string(&read.output)?);

    println!("\nwrite: github_create_branch octo/hello scout/demo");
    let write = component.call("github_create_branch", &json!({"owner": "octo", "repo": "hello", "branch": "scout/demo"}), &caps).await?;
    println!("  -> {}", serde_json::to_string(&write.output)?);
    if read.output.ok().is_none() || write.output.ok().is_none() {
        bail!("a demo call failed");
    }

    let requests = github.requests();
    let authorised = requests
        .iter()
        .filter(|r| r.headers.iter().any(|(k, v)| k == "authorization" && *v == format!("Bearer {token}")))
        .count();
    println!("\nthe server received {} requests, {authorised} with the host's token", requests.len());
    let guest_saw = serde_json::to_string(&(&read, &write))?;
    println!(
        "the token appears in what the guest saw and returned (outputs, logs, stdout, stderr): {}",
        if guest_saw.contains(&token) { "YES (bug)" } else { "no" }
    );
    if authorised != requests.len() || guest_saw.contains(&token) {
        bail!("the credential did not behave as designed");
    }
    Ok(())
}
