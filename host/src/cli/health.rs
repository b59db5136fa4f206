//! `scout-host health`: asks a running `serve` whether it is ready, for a
//! container's `HEALTHCHECK`. The image is built on an empty root (no shell,
//! no curl), so the binary itself is the probe.
//!
//! Exit 0 when the URL answers 2xx, else 1 with the reason on stderr. Never
//! 2: Docker's health check reserves that status.

use super::{EXIT_FAILED, EXIT_OK};
use std::time::Duration;

/// `serve`'s readiness on its default listener; the image's listener.
const DEFAULT_URL: &str = "http://127.0.0.1:7420/readyz";

#[derive(clap::Args)]
pub struct HealthArgs {
    /// The readiness URL to ask; else `SCOUT_HEALTH_URL`, else
    /// http://127.0.0.1:7420/readyz (`/readyz` of the main listener, or of
    /// `probe_listen`'s).
    #[arg(long)]
    url: Option<String>,
    /// Seconds to wait for the whole answer.
    #[arg(long, default_value_t = 5)]
    timeout_secs: u64,
}

/// Runs the check; its exit status (0 ready, 1 anything else).
pub fn run(args: HealthArgs) -> i32 {
    let url = args
        .url
        .or_else(|| std::env::var("SCOUT_HEALTH_URL").ok())
        .unwrap_or_else(|| DEFAULT_URL.to_string());
    match check(&url, Duration::from_secs(args.timeout_secs)) {
        Ok(()) => EXIT_OK,
        Err(reason) => {
            eprintln!("scout-host health: {url}: {reason}");
            EXIT_FAILED
        }
    }
}

/// `Ok` when `url` answers 2xx within `timeout`; else why not.
fn check(url: &str, timeout: Duration) -> Result<(), String> {
    // No proxy: the probe asks this container's own listener, never a
    // proxy the environment names for the host's outbound calls.
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let runtime = super::tokio().map_err(|e| format!("{e:#}"))?;
    runtime.block_on(async {
        let response = client
            .get(url)
            .send()
            .await
            .map_err(|e| format!("no answer: {:#}", anyhow::Error::new(e)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        // `/readyz` says why in its body (a fixed reason); keep it short.
        let body = response.text().await.unwrap_or_default();
        let body: String = body.trim().chars().take(300).collect();
        Err(format!("answered {status}: {body}"))
    })
}
