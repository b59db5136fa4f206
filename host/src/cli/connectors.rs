//! `scout-host connectors list|add|upgrade|retire`: a running fleet's
//! connectors, changed through its admin API (`/v1/connectors`), so an
//! operator rolls out a published artifact without editing a file on every
//! host or restarting one.

use super::{EXIT_ERROR, EXIT_FAILED, EXIT_OK};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ConnectorsArgs {
    #[command(subcommand)]
    command: ConnectorsCommand,
    /// The admin API of any host of the fleet (`https://scout.internal:8787`).
    #[arg(long, global = true)]
    host: Option<String>,
    /// The environment variable holding an admin credential (the admin
    /// token, or an OIDC token with the admin role).
    #[arg(long, global = true, default_value = "SCOUT_ADMIN_TOKEN")]
    token_env: String,
}

#[derive(clap::Subcommand)]
enum ConnectorsCommand {
    /// Lists every connector: the file's and the API's, with the digest
    /// each host runs and its status on the host asked.
    List,
    /// Adds a connector from a published artifact; refused if one by that
    /// name is served.
    Add {
        name: String,
        /// `oci://REGISTRY/REPO:TAG` (resolved to its digest now) or `…@sha256:…`.
        artifact: String,
        /// Further settings: a TOML file with the fields of a
        /// `[connectors.NAME]` table (`origin`, `origins`, `credential`, ...).
        #[arg(long)]
        settings: Option<PathBuf>,
        /// The origin its `http` handle reaches.
        #[arg(long)]
        origin: Option<String>,
        /// Its origin may be on loopback or a private network.
        #[arg(long)]
        allow_private_network: bool,
    },
    /// Moves a connector added through the API to another artifact,
    /// keeping its settings: its changed tools' pending approvals are revoked.
    Upgrade {
        name: String,
        /// `oci://REGISTRY/REPO:TAG` or `…@sha256:…`.
        artifact: String,
    },
    /// Retires a connector added through the API: every host refuses its
    /// next call, and its pending approvals are revoked.
    Retire { name: String },
}

/// Runs the command; its exit status (0 done, 1 refused by the host, 2
/// usage or the host unreachable).
pub fn run(args: ConnectorsArgs) -> Result<i32> {
    let Some(base) = args
        .host
        .clone()
        .or_else(|| std::env::var("SCOUT_HOST_URL").ok())
    else {
        bail!("name the fleet's admin API with --host URL (or SCOUT_HOST_URL)");
    };
    let token = std::env::var(&args.token_env).with_context(|| {
        format!(
            "{} is not set: it holds the admin credential the request is made with",
            args.token_env
        )
    })?;
    let api = Api {
        base: base.trim_end_matches('/').to_string(),
        token,
        http: reqwest::Client::new(),
    };
    super::tokio()?.block_on(async {
        let answer = match args.command {
            ConnectorsCommand::List => api.send(reqwest::Method::GET, "", None).await?,
            ConnectorsCommand::Add {
                name,
                artifact,
                settings,
                origin,
                allow_private_network,
            } => {
                let (status, _) = api.send(reqwest::Method::GET, &name, None).await?;
                if status == 200 {
                    eprintln!(
                        "scout-host: `{name}` is served already: `scout-host connectors upgrade {name} ARTIFACT` moves it to another version"
                    );
                    return Ok(EXIT_FAILED);
                }
                let mut body = match settings {
                    Some(path) => {
                        let text = std::fs::read_to_string(&path)
                            .with_context(|| format!("reading {}", path.display()))?;
                        let table: toml::Table = toml::from_str(&text)
                            .with_context(|| format!("{} is not TOML", path.display()))?;
                        serde_json::to_value(table)?
                    }
                    None => json!({}),
                };
                body["component"] = json!(artifact);
                if let Some(origin) = origin {
                    body["origin"] = json!(origin);
                }
                if allow_private_network {
                    body["allow_private_network"] = json!(true);
                }
                api.send(reqwest::Method::PUT, &name, Some(body)).await?
            }
            ConnectorsCommand::Upgrade { name, artifact } => {
                let (status, current) = api.send(reqwest::Method::GET, &name, None).await?;
                if status != 200 {
                    return Ok(report(status, &current));
                }
                let Some(mut body) = current.get("settings").cloned() else {
                    eprintln!(
                        "scout-host: `{name}` is not a connector added through the API: the configuration file owns it"
                    );
                    return Ok(EXIT_FAILED);
                };
                body["component"] = json!(artifact);
                api.send(reqwest::Method::PUT, &name, Some(body)).await?
            }
            ConnectorsCommand::Retire { name } => {
                api.send(reqwest::Method::DELETE, &name, None).await?
            }
        };
        Ok(report(answer.0, &answer.1))
    })
}

fn report(status: u16, body: &Value) -> i32 {
    if (200..300).contains(&status) {
        println!("{}", serde_json::to_string_pretty(body).unwrap_or_default());
        EXIT_OK
    } else {
        let message = super::refusal_message(body);
        eprintln!("scout-host: the host refused ({status}): {message}");
        if status >= 500 {
            EXIT_ERROR
        } else {
            EXIT_FAILED
        }
    }
}

struct Api {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Api {
    async fn send(
        &self,
        method: reqwest::Method,
        name: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value)> {
        let url = if name.is_empty() {
            format!("{}/v1/connectors", self.base)
        } else {
            format!("{}/v1/connectors/{name}", self.base)
        };
        let mut request = self
            .http
            .request(method.clone(), &url)
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("{method} {url}"))?;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }
}
