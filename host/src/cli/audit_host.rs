//! `scout-host audit --host URL`: the audit of what a running host serves,
//! with the switches it started with, asked of its admin API
//! (`GET /v1/audit`), rather than made from files and this process's
//! environment.

use anyhow::{Context, Result};

/// What the auditor asks.
pub struct Asked {
    /// The admin API (`https://scout.internal:7420`).
    pub host: String,
    /// The environment variable holding an admin or viewer credential.
    pub token_env: String,
    pub role: String,
    pub brand: Option<String>,
    /// One of the brand's saved profiles, by name.
    pub saved_profile: Option<String>,
    pub stale_days: u64,
    pub json: bool,
}

/// Prints the host's audit, readable or as its JSON; a refusal is an error
/// naming the host's status and message.
pub fn run(asked: &Asked) -> Result<()> {
    let token = std::env::var(&asked.token_env).with_context(|| {
        format!(
            "{} is not set: it holds the admin or viewer credential the audit is asked with",
            asked.token_env
        )
    })?;
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("role", &asked.role);
    if let Some(brand) = &asked.brand {
        query.append_pair("brand", brand);
    }
    if let Some(profile) = &asked.saved_profile {
        query.append_pair("profile", profile);
    }
    query.append_pair("stale_days", &asked.stale_days.to_string());
    query.append_pair("format", if asked.json { "json" } else { "text" });
    let url = format!(
        "{}/v1/audit?{}",
        asked.host.trim_end_matches('/'),
        query.finish()
    );
    let (status, body) = super::tokio()?.block_on(async {
        let answer = reqwest::Client::new()
            .get(&url)
            .bearer_auth(token)
            .send()
            .await
            .with_context(|| format!("asking {} for its audit", asked.host))?;
        let status = answer.status();
        anyhow::Ok((status, answer.text().await?))
    })?;
    if !status.is_success() {
        let body = serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body));
        anyhow::bail!(
            "the host refused the audit ({status}): {}",
            super::refusal_message(&body)
        );
    }
    print!("{body}");
    if asked.json {
        println!();
    }
    Ok(())
}
