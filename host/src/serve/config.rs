//! `serve`'s configuration file (TOML). Secrets are never in it: the admin
//! token and the store key are read from environment variables the file
//! names, so the file can be committed and reviewed.

use crate::capabilities::http::CredentialScheme;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Why the configuration cannot be used. Each names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path} is not a valid configuration: {message}")]
    Parse { path: String, message: String },
    #[error("{0}")]
    Invalid(String),
}

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// Address of the admin API and the MCP endpoints.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Base URL the MCP endpoints are announced under (default `http://LISTEN`).
    #[serde(default)]
    pub public_url: Option<String>,
    /// `Host` header values accepted (DNS rebinding); default: the listen
    /// address and `localhost:PORT`.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// SQLite file; relative paths are relative to this file (D7).
    #[serde(default = "default_database")]
    pub database: PathBuf,
    /// Largest request body accepted, admin API and MCP alike.
    #[serde(default = "default_max_request_bytes")]
    pub max_request_bytes: usize,
    /// Hold every tool an operator has not reviewed (discovery produces no
    /// authority). On unless the operator turns it off.
    #[serde(default = "yes")]
    pub require_review: bool,
    /// The deployment owner's own brand: the only one the host environment's
    /// credentials serve.
    #[serde(default)]
    pub deployment_owner_brand: Option<String>,
    /// Environment variable holding the admin API's bearer token.
    #[serde(default = "default_admin_token_env")]
    pub admin_token_env: String,
    /// Environment variable holding the 32-byte store key (64 hex digits)
    /// that seals connections at rest.
    #[serde(default = "default_store_key_env")]
    pub store_key_env: String,
    /// How long a session lives before it ends by itself (seconds).
    #[serde(default = "default_session_ttl_secs")]
    pub session_ttl_secs: u64,
    /// Pooling allocator slots: calls that can run at once.
    #[serde(default = "default_max_concurrent_calls")]
    pub max_concurrent_calls: u32,
    /// How often an open MCP stream gets an SSE keep-alive comment
    /// (milliseconds). Besides keeping proxies and client read timeouts
    /// happy, a write is how a closed client connection is noticed, which
    /// withdraws the approval a call was waiting for.
    #[serde(default = "default_sse_keep_alive_ms")]
    pub sse_keep_alive_ms: u64,
    /// Connectors by server name (`github`).
    #[serde(default)]
    pub connectors: BTreeMap<String, ConnectorConfig>,
}

/// One connector: its component and where its HTTP handle is bound.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectorConfig {
    /// The component (`.wasm`); relative to this file.
    pub component: PathBuf,
    /// The one origin its `http` handle reaches (`https://api.github.com`).
    pub origin: String,
    /// How the credential is injected: `bearer` (default), `basic:USER`,
    /// `header:NAME` or `query:PARAM`.
    #[serde(default = "default_credential")]
    pub credential: String,
    /// Lets the origin resolve to loopback or private addresses (a test
    /// server, an internal mirror). Off by default.
    #[serde(default)]
    pub allow_private_network: bool,
    /// Host environment variable holding the deployment owner's own token.
    #[serde(default)]
    pub host_env: Option<String>,
    /// Further request headers that carry credentials at this upstream; a
    /// guest's header of any of these names is dropped (the common ones,
    /// such as `X-Api-Key`, always are).
    #[serde(default)]
    pub strip_headers: Vec<String>,
    /// Serve only these of the component's tools (local names,
    /// `github_read_file`). Operator configuration narrows what a
    /// component declares; it never widens it.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// `false`: no grant may cover any of its reads, whatever the
    /// component declares.
    #[serde(default = "yes")]
    pub grants: bool,
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7420))
}
fn default_database() -> PathBuf {
    PathBuf::from("scout.db")
}
fn default_max_request_bytes() -> usize {
    1 << 20
}
fn yes() -> bool {
    true
}
fn default_admin_token_env() -> String {
    "SCOUT_ADMIN_TOKEN".to_string()
}
fn default_store_key_env() -> String {
    "SCOUT_STORE_KEY".to_string()
}
fn default_max_concurrent_calls() -> u32 {
    128
}
fn default_sse_keep_alive_ms() -> u64 {
    5_000
}
fn default_session_ttl_secs() -> u64 {
    24 * 60 * 60
}
fn default_credential() -> String {
    "bearer".to_string()
}

impl ServeConfig {
    /// Reads and checks `path`; relative paths in it are made relative to it.
    pub fn load(path: &Path) -> Result<ServeConfig, ConfigFileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigFileError::Read { path: path.display().to_string(), source })?;
        let mut config = ServeConfig::parse(&text).map_err(|e| match e {
            ConfigFileError::Parse { message, .. } => ConfigFileError::Parse { path: path.display().to_string(), message },
            other => other,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        config.database = base.join(&config.database);
        for connector in config.connectors.values_mut() {
            connector.component = base.join(&connector.component);
        }
        Ok(config)
    }

    /// Parses and checks the text of a configuration file.
    pub fn parse(text: &str) -> Result<ServeConfig, ConfigFileError> {
        let config: ServeConfig =
            toml::from_str(text).map_err(|e| ConfigFileError::Parse { path: "configuration".into(), message: e.to_string() })?;
        for (name, connector) in &config.connectors {
            connector.scheme().map_err(|e| ConfigFileError::Invalid(format!("connectors.{name}.credential: {e}")))?;
        }
        if config.session_ttl_secs == 0 {
            return Err(ConfigFileError::Invalid("session_ttl_secs must be at least 1".into()));
        }
        if config.max_request_bytes < 1024 {
            return Err(ConfigFileError::Invalid("max_request_bytes must be at least 1024".into()));
        }
        Ok(config)
    }

    /// The base URL endpoints are announced under, without a trailing slash.
    pub fn base_url(&self) -> String {
        self.public_url.clone().unwrap_or_else(|| format!("http://{}", self.listen)).trim_end_matches('/').to_string()
    }

    /// The accepted `Host` header values.
    pub fn hosts(&self) -> Vec<String> {
        self.hosts_for(self.listen)
    }

    /// The accepted `Host` header values when the listener got `listen`
    /// (the configured port may be 0).
    pub fn hosts_for(&self, listen: SocketAddr) -> Vec<String> {
        if !self.allowed_hosts.is_empty() {
            return self.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
        }
        let port = listen.port();
        let mut hosts = vec![listen.to_string(), format!("localhost:{port}")];
        if listen.ip().is_unspecified() {
            hosts.push(format!("127.0.0.1:{port}"));
        }
        hosts
    }
}

impl ConnectorConfig {
    /// The credential scheme the `credential` string names.
    pub fn scheme(&self) -> Result<CredentialScheme, String> {
        let (kind, arg) = match self.credential.split_once(':') {
            Some((k, a)) => (k, Some(a.trim())),
            None => (self.credential.as_str(), None),
        };
        match (kind.trim(), arg) {
            ("bearer", None) => Ok(CredentialScheme::Bearer),
            ("basic", Some(user)) if !user.is_empty() => Ok(CredentialScheme::Basic { username: user.to_string() }),
            ("header", Some(name)) if !name.is_empty() => Ok(CredentialScheme::Header { name: name.to_string() }),
            ("query", Some(param)) if !param.is_empty() => Ok(CredentialScheme::Query { param: param.to_string() }),
            _ => Err(format!("`{}` is not one of bearer, basic:USER, header:NAME, query:PARAM", self.credential)),
        }
    }
}

/// Reads the store key: 64 hex digits.
pub fn parse_store_key(hex_text: &str) -> Result<[u8; 32], String> {
    let bytes = hex::decode(hex_text.trim()).map_err(|_| "the store key must be 64 hex digits".to_string())?;
    bytes.try_into().map_err(|_| "the store key must be 64 hex digits (32 bytes)".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_schemes() {
        let c = ServeConfig::parse("[connectors.github]\ncomponent = \"g.wasm\"\norigin = \"https://api.github.com\"\n").unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:7420");
        assert!(c.require_review, "review is on unless turned off");
        assert_eq!(c.hosts(), ["127.0.0.1:7420", "localhost:7420"]);
        assert_eq!(c.connectors["github"].scheme().unwrap(), CredentialScheme::Bearer);
        let bad = ServeConfig::parse("[connectors.x]\ncomponent = \"x.wasm\"\norigin = \"https://x\"\ncredential = \"cookie\"\n");
        assert!(matches!(bad, Err(ConfigFileError::Invalid(m)) if m.contains("connectors.x.credential")));
        assert_eq!(c.session_ttl_secs, 86_400, "a session lives a day unless configured");
        assert!(matches!(ServeConfig::parse("session_ttl_secs = 0\n"), Err(ConfigFileError::Invalid(_))));
        let unknown = ServeConfig::parse("listen = \"127.0.0.1:1\"\nadmin_token = \"oops\"\n");
        assert!(matches!(unknown, Err(ConfigFileError::Parse { message, .. }) if message.contains("admin_token")), "secrets have no place in the file");
    }

    #[test]
    fn store_key() {
        assert!(parse_store_key(&"ab".repeat(32)).is_ok());
        assert!(parse_store_key("abcd").is_err());
        assert!(parse_store_key(&"zz".repeat(32)).is_err());
    }
}
