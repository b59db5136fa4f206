//! `serve`'s configuration file (TOML). Secrets are never in it: the admin
//! token and the store key are read from environment variables the file
//! names, so the file can be committed and reviewed.
//!
//! Besides its `http` handle, a connector's section may declare the other
//! capabilities its component imports:
//!
//! ```toml
//! [connectors.firecrawl.person_allowance]   # what a person's chat may spend
//! per_run_credits = 25                      # (or per_run_usd / per_day_usd)
//! per_day_credits = 100
//!
//! [connectors.writer.folders.project]       # the guest opens it as `project`
//! root = "/data/{brand}/project"            # absolute; `{brand}` is the session's brand
//! writable = true                           # default false; see `crate::session::holdings`
//! ```
//!
//! Specialists and the goal agent spend what their grant allows, never the
//! person allowance; a role with neither gets no `meter` at all.
//!
//! What is true of a brand decides part of a session's surface (seed 000:
//! goals "when the goals engine is on", skills "when the brand has at least
//! one skill", team "when the brand has at least one coworker"). Each fact
//! has one source, read when a session opens (`Host::session_input`):
//!
//! | fact (`policy::BrandFacts`) | source |
//! |---|---|
//! | `connected` | the store: the brand's credentials as they resolve (own, shared, host environment for the owner) |
//! | `has_coworkers` | the store: the brand has at least one saved profile of kind `coworker` (a coworker or a specialist; the goal agent and the reviewer are the goals engine's, not team members) |
//! | `has_skills` | this file: `skills` of `[brands.NAME]` is not empty |
//! | `goals_engine_on` | this file: `goals_engine` of `[brands.NAME]` (default off) |
//! | `is_deployment_owner` | this file: `deployment_owner_brand` |
//! | `browser_provider` | not read: `serve` opens local sessions, and the browser exists only under E2B |
//!
//! ```toml
//! [brands.acme]
//! skills = ["seo-method", "voice-guide"]    # the brand's skills (names only; the orchestrator holds them)
//! goals_engine = true                       # default false
//! ```
//!
//! A brand without a table has no skills and the goals engine off. Which
//! role then gets which of these tools is the policy's decision, not this
//! file's: a person's chat gets team, skills and goals tools; a read-only
//! route skills and (on the default harness) team; no other role any.
//!
//! Routes that name a destination, and what the deployment must hold:
//!
//! ```toml
//! [connectors.sheets.origins]
//! drive = "https://www.googleapis.com"      # `Route: drive GET ...`, same credential
//! [connectors.cloudflare.origins]
//! docs = { origin = "https://docs.mcp.cloudflare.com", credential = "none" }
//! [connectors.googleads]
//! deployment_headers = { developer-token = "GOOGLE_ADS_DEVELOPER_TOKEN" }
//! requires_env = ["SOME_VARIABLE"]          # unset: loaded, checked, never offered
//! ```

use crate::capabilities::http::CredentialScheme;
use crate::session::holdings::safe_segment;
pub use crate::session::holdings::{FolderConfig, PersonAllowance};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Why the configuration cannot be used. Each names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a valid configuration: {message}")]
    Parse { path: String, message: String },
    #[error("{0}")]
    Invalid(String),
}

/// `[policy]`: where the operator's Cedar policy documents are.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Files, or patterns whose file name has `*` (`policies/*.cedar`),
    /// relative to the configuration file. A pattern matching nothing is
    /// an error (a rule thought in force would not be).
    #[serde(default)]
    pub files: Vec<String>,
    /// The configuration file's folder, which `files` are relative to.
    #[serde(skip)]
    pub base: PathBuf,
}

impl PolicyConfig {
    /// Every policy document `files` names, in order (a pattern's files
    /// sorted by name), each named by its path as written.
    pub fn docs(&self) -> Result<Vec<crate::policy::operator::PolicyDoc>, ConfigFileError> {
        let mut docs = Vec::new();
        for entry in &self.files {
            let written = Path::new(entry);
            let file_name = written
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let paths: Vec<PathBuf> = if file_name.contains('*') {
                let folder = written.parent().unwrap_or(Path::new(""));
                let listing = std::fs::read_dir(self.base.join(folder)).map_err(|source| {
                    ConfigFileError::Read {
                        path: format!("policy.files {entry:?}: {}", folder.display()),
                        source,
                    }
                })?;
                let mut matched: Vec<PathBuf> = listing
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|name| wildcard_matches(file_name, name))
                    .map(|name| folder.join(name))
                    .collect();
                matched.sort();
                if matched.is_empty() {
                    return Err(ConfigFileError::Invalid(format!(
                        "policy.files: {entry:?} matches no file in {}",
                        self.base.join(folder).display()
                    )));
                }
                matched
            } else {
                vec![written.to_path_buf()]
            };
            for path in paths {
                let full = self.base.join(&path);
                let text =
                    std::fs::read_to_string(&full).map_err(|source| ConfigFileError::Read {
                        path: format!("policy file {}", full.display()),
                        source,
                    })?;
                docs.push(crate::policy::operator::PolicyDoc {
                    name: path.display().to_string(),
                    source: crate::policy::operator::PolicySource::File(full),
                    text,
                });
            }
        }
        Ok(docs)
    }
}

/// Whether `name` matches `pattern`, where `*` is any run of characters.
fn wildcard_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let Some((first, rest)) = parts.split_first() else {
        return pattern == name;
    };
    let Some(mut remaining) = name.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for part in middle {
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
}

/// The whole file.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// Address of the admin API and the MCP endpoints.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Base URL the MCP endpoints are announced under (default `http://LISTEN`;
    /// `https://LISTEN` with `[tls]`).
    /// With several hosts, each announces its own (`advertise_url`): a
    /// session is served by the host that opened it.
    #[serde(default, alias = "advertise_url")]
    pub public_url: Option<String>,
    /// Where the host's OAuth client metadata document is reachable, its
    /// client ID with an authorization server that takes client ID
    /// metadata documents ([`crate::remote::oauth`]). Default: served by
    /// the host itself under an https `public_url`; none otherwise.
    #[serde(default)]
    pub oauth_client_metadata_url: Option<String>,
    /// `Host` header values accepted (DNS rebinding); default: the listen
    /// address and `localhost:PORT`.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// SQLite file; relative paths are relative to this file (D7). Unused
    /// with `[store] backend = "postgres"`.
    #[serde(default = "default_database")]
    pub database: PathBuf,
    /// Where the host keeps what it must remember (`[store]`).
    #[serde(default)]
    pub store: StoreConfig,
    /// HTTPS on the main listener (`[tls]`); plain HTTP without it.
    #[serde(default)]
    pub tls: Option<crate::serve::tls::TlsConfig>,
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
    /// The most live sessions one brand holds at once, on every host
    /// together, every role counted (inbound-email sessions too: seed 000);
    /// `[brands.NAME] max_live_sessions` overrides it. Default 100: ten
    /// times what an agency's busiest brand runs at once (a person's chat,
    /// a few coworkers and goal steps), so only a runaway orchestrator or
    /// sessions never ended (they live `session_ttl_secs`, a day) reach it.
    #[serde(default = "default_max_live_sessions_per_brand")]
    pub max_live_sessions_per_brand: u32,
    /// The most inbound-email sessions one brand opens in any hour, on
    /// every host together; `[brands.NAME] inbound_sessions_per_hour`
    /// overrides it (0: none). Default 30: one every two minutes, more than
    /// a brand's inbox gets from people, while a flood a stranger sends
    /// costs at most $15 an hour ($0.50 a turn, seed 000).
    #[serde(default = "default_inbound_sessions_per_hour_per_brand")]
    pub inbound_sessions_per_hour_per_brand: u32,
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
    /// Facts about brands that the store does not hold, by brand name.
    #[serde(default)]
    pub brands: BTreeMap<String, BrandConfig>,
    /// Roles of the operator's own, by name (`[roles.triage]`): each
    /// narrows one of the seed's roles ([`crate::policy::operator_roles`]).
    #[serde(default)]
    pub roles: BTreeMap<String, crate::policy::operator_roles::OperatorRoleConfig>,
    /// Operators' Cedar policies (`[policy] files`), compiled at start
    /// against the deployment's schema ([`crate::policy::operator`]).
    #[serde(default)]
    pub policy: PolicyConfig,
    /// Every connector's component must be an OCI artifact signed by one
    /// of `signature_keys` (a connector can also require it alone).
    #[serde(default)]
    pub require_signature: bool,
    /// The signers' public keys (PEM, `cosign.pub`), relative to this file.
    #[serde(default)]
    pub signature_keys: Vec<PathBuf>,
    /// How each OCI registry a connector's artifact comes from is reached,
    /// by `HOST[:PORT]` (`[registries."127.0.0.1:5000"]`).
    #[serde(default)]
    pub registries: BTreeMap<String, RegistryConfig>,
    /// Bearer tokens from an OpenID Connect issuer, accepted on the admin
    /// API besides the admin token (`serve::identity`). Absent: the admin
    /// token only.
    #[serde(default)]
    pub oidc: Option<OidcConfig>,
    /// `[token_broker]`: where the host asks for the access tokens of
    /// connections stored as `broker` (Nango), and the variable holding the
    /// deployment's broker secret. Without that variable set, no broker
    /// connection resolves.
    #[serde(default)]
    pub token_broker: TokenBrokerConfig,
    /// Longest wait for a token endpoint or the broker, in seconds.
    #[serde(default = "default_token_timeout_secs")]
    pub token_timeout_secs: u64,
    /// How many refusals of the same consequence pause a session until a
    /// person resumes it (denial lineage); 0 never pauses.
    #[serde(default = "default_pause_after")]
    pub pause_after_repeated_denials: u32,
    /// How long a SIGTERM or SIGINT may take, in seconds: new sessions and
    /// calls are refused at once, calls waiting for a person end
    /// (`host_shutdown`), running calls finish and their answers reach
    /// their clients, then the process exits 0; whatever is still running
    /// when the grace ends is cut (and recovered as `interrupted`).
    /// Kubernetes sends SIGKILL 30 s after SIGTERM by default.
    #[serde(default = "default_shutdown_grace_secs")]
    pub shutdown_grace_secs: u64,
    /// A second listener serving only `/livez` and `/readyz`, without a
    /// credential or a Host check (a pod or loopback address for probes).
    /// The main listener serves them too.
    #[serde(default)]
    pub probe_listen: Option<SocketAddr>,
    /// A listener serving only `/metrics`, for a scraper on a loopback or
    /// pod address, without the admin credential: a scraper never holds a
    /// token that can approve writes or store connections. The main
    /// listener's `/metrics` still needs an admin API credential.
    #[serde(default)]
    pub metrics_listen: Option<SocketAddr>,
    /// The environment variable holding a token that `metrics_listen`
    /// then asks for (`Authorization: Bearer`), and that reads nothing
    /// else; without it, `metrics_listen` asks for none.
    #[serde(default)]
    pub metrics_token_env: Option<String>,
    /// How the log is written on stderr: `text` (the default) or `json`,
    /// one object a line, the start banner included.
    #[serde(default)]
    pub log_format: crate::logs::LogFormat,
}

fn default_shutdown_grace_secs() -> u64 {
    20
}

fn default_pause_after() -> u32 {
    crate::boundary::lineage::DEFAULT_PAUSE_AFTER
}

fn default_token_timeout_secs() -> u64 {
    10
}

/// `[token_broker]`.
///
/// ```toml
/// [token_broker]
/// url = "https://api.nango.dev"      # default; a self-hosted Nango's URL
/// secret_env = "NANGO_SECRET_KEY"    # default
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenBrokerConfig {
    /// The broker's base URL: https, or plain http on loopback only.
    #[serde(default = "default_broker_url")]
    pub url: String,
    /// Environment variable holding the deployment's broker secret key.
    #[serde(default = "default_broker_secret_env")]
    pub secret_env: String,
    /// Allow a broker on a private or loopback address (a self-hosted
    /// Nango inside the network); otherwise its addresses are checked as
    /// for a guest's request.
    #[serde(default)]
    pub allow_private_network: bool,
}

impl Default for TokenBrokerConfig {
    fn default() -> TokenBrokerConfig {
        TokenBrokerConfig {
            url: default_broker_url(),
            secret_env: default_broker_secret_env(),
            allow_private_network: false,
        }
    }
}

fn default_broker_url() -> String {
    "https://api.nango.dev".to_string()
}

fn default_broker_secret_env() -> String {
    "NANGO_SECRET_KEY".to_string()
}

impl TokenBrokerConfig {
    /// The broker's URL: https, or plain http only on loopback.
    pub fn parsed_url(&self) -> Result<url::Url, String> {
        let url = url::Url::parse(&self.url).map_err(|e| format!("token_broker.url: {e}"))?;
        let loopback = match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d == "localhost",
            None => false,
        };
        if !(url.scheme() == "https" || (url.scheme() == "http" && loopback))
            || url.query().is_some()
            || !url.username().is_empty()
        {
            return Err(
                "token_broker.url must be https (plain http only on loopback), without a query or credentials"
                    .to_string(),
            );
        }
        Ok(url)
    }
}

/// `[oidc]`: who may call the admin API, as an OpenID Connect issuer says.
///
/// ```toml
/// [oidc]
/// issuer = "https://id.example.com"          # the tokens' `iss`, exactly
/// audience = "scout-admin"                   # one of the tokens' `aud`
/// # jwks_url = "https://id.example.com/jwks"   # optional: else the discovery document's `jwks_uri`
/// console_client_id = "scout-console"        # optional: the console signs in (code + PKCE)
/// role_claim = "scout_roles"                 # default; a string or an array of strings
/// subject_claim = "email"                    # optional: who is shown and recorded (else `sub`)
/// leeway_secs = 60                           # clock skew allowed on exp, nbf, iat
/// jwks_min_refresh_secs = 10                 # at most one key fetch per this many seconds
/// [oidc.roles]                               # optional: claim value -> role over every brand
/// admin = ["platform-admins"]
/// approver = ["approvers"]
/// viewer = ["auditors"]
/// [oidc.brand_roles.acme]                    # optional: claim value -> role over brand `acme`
/// approver = ["acme-approvers"]
/// ```
///
/// Without `[oidc.roles]`, the claim's values are role names: `approver`
/// over every brand, `approver:acme` over brand `acme` only.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The issuer's identifier: a token's `iss` must equal it.
    pub issuer: String,
    /// A token's `aud` (a string or an array) must contain it.
    pub audience: String,
    /// Where the issuer publishes its signing keys (a JWK set). Absent:
    /// the `jwks_uri` of the issuer's discovery document
    /// (`ISSUER/.well-known/openid-configuration`).
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// The console's client id at the issuer (a public client, with
    /// `BASE/console/` as its redirect URI): the console then signs in with
    /// the authorization code flow and PKCE, and refreshes its token.
    #[serde(default)]
    pub console_client_id: Option<String>,
    /// The scopes the console asks for.
    #[serde(default = "default_console_scope")]
    pub console_scope: String,
    /// Which of the issuer's tokens the console sends as its bearer:
    /// `id_token` (its `aud` is the client id, so set `audience` to it) or
    /// `access_token` (when the issuer makes it a JWT for `audience`).
    #[serde(default)]
    pub console_bearer: ConsoleBearer,
    /// The claim that carries the caller's roles.
    #[serde(default = "default_role_claim")]
    pub role_claim: String,
    /// The claim that names the caller as shown and recorded (`email`,
    /// `preferred_username`): `sub` is often an opaque or pairwise id. A
    /// token without it is named by its `sub`.
    #[serde(default)]
    pub subject_claim: Option<String>,
    /// Seconds of clock skew allowed when checking `exp`, `nbf` and `iat`.
    #[serde(default = "default_leeway_secs")]
    pub leeway_secs: u64,
    /// The keys are fetched again when a token names a key they lack, at
    /// most once per this many seconds (a flood of made-up key ids cannot
    /// hammer the issuer).
    #[serde(default = "default_jwks_min_refresh_secs")]
    pub jwks_min_refresh_secs: u64,
    /// Allow an issuer on a private or loopback address (an identity
    /// provider inside the network); otherwise the key fetch's addresses
    /// are checked as for a guest's request.
    #[serde(default)]
    pub allow_private_network: bool,
    /// Which claim values give which role. Absent: the values `admin`,
    /// `approver` and `viewer` themselves. Present: only what it lists.
    #[serde(default)]
    pub roles: Option<OidcRoles>,
    /// Which claim values give which role over one brand, by brand.
    #[serde(default)]
    pub brand_roles: BTreeMap<String, OidcRoles>,
}

/// Which token the console sends.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ConsoleBearer {
    #[default]
    IdToken,
    AccessToken,
}

fn default_console_scope() -> String {
    "openid email profile".to_string()
}

/// `[oidc.roles]`: the values of the role claim that give each role.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OidcRoles {
    /// Everything the admin API does.
    #[serde(default)]
    pub admin: Vec<String>,
    /// Sees and decides approvals, reads the trace and sessions.
    #[serde(default)]
    pub approver: Vec<String>,
    /// Read-only: GET requests of the admin API.
    #[serde(default)]
    pub viewer: Vec<String>,
    /// Reads, and reads the exact arguments each decision kept sealed in
    /// the trace: every brand under `[oidc.roles]`, one brand under
    /// `[oidc.brand_roles.BRAND]`.
    #[serde(default)]
    pub auditor: Vec<String>,
}

/// Most clock skew `leeway_secs` may allow.
const MAX_LEEWAY_SECS: u64 = 600;

impl OidcConfig {
    /// Refuses what would make the check unsound or unusable; each message
    /// names the key to fix.
    fn check(&self) -> Result<(), String> {
        check_identity_url("oidc.issuer", &self.issuer)?;
        if let Some(jwks_url) = &self.jwks_url {
            check_identity_url("oidc.jwks_url", jwks_url)?;
        }
        if let Some(client) = &self.console_client_id
            && (client.trim().is_empty() || client.chars().any(char::is_control))
        {
            return Err(
                "oidc.console_client_id must be the console's client id at the issuer".into(),
            );
        }
        if !self.console_scope.split(' ').any(|s| s == "openid") {
            return Err("oidc.console_scope must include `openid`".into());
        }
        if self.audience.trim().is_empty() {
            return Err(
                "oidc.audience must not be empty: it is what a token's `aud` must contain".into(),
            );
        }
        if self.role_claim.trim().is_empty() {
            return Err("oidc.role_claim must name the claim that carries roles".into());
        }
        if self.leeway_secs > MAX_LEEWAY_SECS {
            return Err(format!(
                "oidc.leeway_secs must be at most {MAX_LEEWAY_SECS} (it is clock skew, not a token lifetime)"
            ));
        }
        if !(1..=3600).contains(&self.jwks_min_refresh_secs) {
            return Err("oidc.jwks_min_refresh_secs must be from 1 to 3600".into());
        }
        if self
            .subject_claim
            .as_deref()
            .is_some_and(|c| c.trim().is_empty())
        {
            return Err("oidc.subject_claim must name a claim (`email`, `preferred_username`), or be left out to show `sub`".into());
        }
        if let Some(roles) = &self.roles {
            roles.check("oidc.roles")?;
        }
        for (brand, roles) in &self.brand_roles {
            check_brand_name(brand).map_err(|why| format!("oidc.brand_roles: {why}"))?;
            roles.check(&format!("oidc.brand_roles.{brand}"))?;
        }
        Ok(())
    }
}

impl OidcRoles {
    /// Each value gives one role, and some value gives one.
    fn check(&self, table: &str) -> Result<(), String> {
        let mut seen = BTreeMap::new();
        for (role, values) in [
            ("admin", &self.admin),
            ("approver", &self.approver),
            ("viewer", &self.viewer),
            ("auditor", &self.auditor),
        ] {
            for value in values {
                if value.trim().is_empty() {
                    return Err(format!("{table}.{role}: a claim value must not be empty"));
                }
                if let Some(other) = seen.insert(value.as_str(), role) {
                    return Err(format!(
                        "{table}: `{value}` gives both {other} and {role}; give each value one role"
                    ));
                }
            }
        }
        if seen.is_empty() {
            return Err(format!(
                "{table} gives no role to any claim value; list some, or remove the table"
            ));
        }
        Ok(())
    }
}

/// An identity provider's URL: https, or plain http to this machine only
/// (a test issuer): keys fetched in the clear from elsewhere could be
/// swapped on the way.
pub(crate) fn check_identity_url(key: &str, text: &str) -> Result<(), String> {
    let url = url::Url::parse(text).map_err(|e| format!("{key}: `{text}` is not a URL: {e}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "{key}: `{text}` must be an https URL (plain http is accepted only for a loopback host: 127.0.0.1, ::1 or localhost)"
        )),
    }
}

/// `[store]`: embedded SQLite (the default, nothing to set up) or one
/// PostgreSQL database shared by several hosts.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `sqlite`: one file (`database`), one host. `postgres`: one database
    /// shared by every host of a fleet (`url_env`).
    #[serde(default)]
    pub backend: StoreBackend,
    /// With `postgres`: the environment variable holding the connection URL
    /// (it carries a password, so never the file).
    #[serde(default)]
    pub url_env: Option<String>,
    /// With `postgres`: how long this host's lease lasts unrenewed (seconds);
    /// a host silent for longer is fenced and recovered by the others.
    #[serde(default)]
    pub lease_secs: Option<u64>,
    /// With `postgres` over TLS: the PEM file of the authority that signs
    /// the server's certificate (a cloud provider's CA); relative paths are
    /// relative to this file. Without it, the public web roots are trusted.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// With `sqlite`: what a trace row committed before its call goes on
    /// survives. `power_loss` (the default, DESIGN D6): every commit is
    /// fsynced. `process_crash`: committed to the operating system, not
    /// fsynced, so the host's own crash loses nothing but a power loss or
    /// an operating system crash may lose the last rows. Approvals,
    /// charges and connections are fsynced either way.
    #[serde(default)]
    pub trace_durable_against: crate::store::TraceDurability,
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum StoreBackend {
    #[default]
    Sqlite,
    Postgres,
}

/// What the operator states about one brand (see the module's table).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrandConfig {
    /// The brand's skills, by name: at least one gives the skill tools
    /// where the role has them.
    #[serde(default)]
    pub skills: Vec<String>,
    /// Whether the goals engine is on for the brand: gives the goals tools
    /// where the role has them.
    #[serde(default)]
    pub goals_engine: bool,
    /// This brand's cap on live sessions (else `max_live_sessions_per_brand`).
    #[serde(default)]
    pub max_live_sessions: Option<u32>,
    /// This brand's inbound-email sessions per hour (else
    /// `inbound_sessions_per_hour_per_brand`).
    #[serde(default)]
    pub inbound_sessions_per_hour: Option<u32>,
}

/// Refuses what cannot name a brand in the admin API: 1 to 200 characters,
/// no surrounding whitespace (a session's brand is trimmed, so such a table
/// could never apply) and no control characters.
pub(crate) fn check_brand_name(brand: &str) -> Result<(), String> {
    let ok = !brand.is_empty()
        && brand.len() <= 200
        && brand.trim() == brand
        && !brand.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` cannot name a brand: it must be 1 to 200 bytes, without surrounding whitespace or control characters",
            brand.escape_debug()
        ))
    }
}

/// Refuses what cannot name a skill: 1 to 64 of a-z, 0-9 and `-`, starting
/// and ending with a letter or digit (`seo-method`).
pub(crate) fn check_skill_name(skill: &str) -> Result<(), String> {
    let b = skill.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 64
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-';
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` cannot name a skill: it must be 1 to 64 of a-z, 0-9 and `-`, starting and ending with a letter or digit",
            skill.escape_debug()
        ))
    }
}

/// A remote MCP server's transport.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum McpTransport {
    StreamableHttp,
    Sse,
}

/// One OCI registry's settings.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    /// Reach it over plain HTTP (a registry on loopback or an internal
    /// network); every other registry is reached over HTTPS only.
    #[serde(default)]
    pub plain_http: bool,
    /// It may be on loopback or a private network; every other registry's
    /// address must be public, as for every request the host makes.
    #[serde(default)]
    pub allow_private_network: bool,
}

/// One connector: its component and where its HTTP handle is bound.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectorConfig {
    /// The component (`.wasm`), relative to this file, or an OCI artifact
    /// (`oci://REGISTRY/REPO:TAG` or `…@sha256:DIGEST`; then, once
    /// [`crate::deployment::resolve_artifacts`] ran, the verified bytes in the
    /// artifact cache). Absent for a remote MCP server (`mcp`).
    #[serde(default)]
    pub component: PathBuf,
    /// Its artifact must be signed by one of the host's `signature_keys`,
    /// checked before it is cached or compiled.
    #[serde(default)]
    pub require_signature: bool,
    /// The artifact `component` named, if it named one.
    #[serde(skip)]
    pub artifact: Option<crate::artifact::ArtifactRef>,
    /// The artifact's manifest digest, once resolved: what this host runs.
    #[serde(skip)]
    pub artifact_digest: Option<String>,
    /// A remote MCP server's endpoint (streamable HTTP), instead of a
    /// component: `mcp = "https://mcp.example.com/mcp"`. Its tools are
    /// candidates until an operator reviews each one ([`crate::remote`]).
    #[serde(default)]
    pub mcp: Option<String>,
    /// How a remote MCP server is reached: `streamable-http` (the default)
    /// or `sse`, the 2024-11-05 HTTP+SSE transport of a server that has
    /// only that (`mcp` is then its event stream's URL).
    #[serde(default)]
    pub transport: Option<McpTransport>,
    /// How long one call of a remote MCP server's tool may take, in seconds
    /// (1 to 300; 30 unless set). The request is cancelled upstream past it.
    #[serde(default)]
    pub call_timeout_secs: Option<u64>,
    /// How often a remote MCP server's tools are listed again, in seconds
    /// (besides at start and whenever it says its list changed); 300
    /// unless set, at least 1.
    #[serde(default)]
    pub discover_every_secs: Option<u64>,
    /// How long an agent session's upstream MCP session with a remote
    /// server may stay idle (no call in flight), in seconds, before the
    /// host closes it (a `DELETE` of the server's session): the next call
    /// opens a new one. Both are traced (`upstream_closed`,
    /// `upstream_reopened`). 300 unless set, at least 1.
    #[serde(default)]
    pub upstream_idle_secs: Option<u64>,
    /// The origin its `http` handle reaches (`https://api.github.com`).
    /// Required when the component imports `http`; a folder-only component
    /// (the content writer, the SEO brief tools) has none.
    #[serde(default)]
    pub origin: Option<String>,
    /// Further origins by destination name, for routes that name one
    /// (`Route: drive GET /drive/v3/files`): `drive = "https://..."` is
    /// reached with the connector's credential;
    /// `docs = { origin = "https://...", credential = "none" }` with none
    /// (a public endpoint must not receive the connector's secret).
    #[serde(default)]
    pub origins: BTreeMap<String, OriginConfig>,
    /// Host environment variables that must be set for the deployment to
    /// offer this connector at all (seed 000: Figma "when the deployment
    /// offers Figma (Nango configured)", Microsoft Ads likewise). Unset: the
    /// connector is loaded and checked, and never registered.
    #[serde(default)]
    pub requires_env: Vec<String>,
    /// Request headers the host injects from its environment, whose values
    /// are the deployment's secrets, not a brand's (Google Ads'
    /// `developer-token = "GOOGLE_ADS_DEVELOPER_TOKEN"`, Microsoft Ads'
    /// `DeveloperToken`). Each is required like `requires_env`; a guest's
    /// header of the same name is dropped, and the value is scrubbed.
    #[serde(default)]
    pub deployment_headers: BTreeMap<String, String>,
    /// How the credential is injected: `bearer` (default), `basic:USER`,
    /// `header:NAME` or `query:PARAM`; `none` for a public API (every
    /// brand is served without a stored connection, nothing is injected).
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
    /// What one person-chat run (one session) may spend through this
    /// connector's `meter`, and all of a brand's runs in one day. Absent:
    /// a person's chat gets no meter, so the connector cannot spend there.
    #[serde(default)]
    pub person_allowance: Option<PersonAllowance>,
    /// Folders its `folder` handle may open, by the name the guest opens.
    #[serde(default)]
    pub folders: BTreeMap<String, FolderConfig>,
}

impl ConnectorConfig {
    /// Checks connector `name` as a configuration file or the admin API
    /// gives it, and reads what its fields name (an OCI artifact, a remote
    /// server's origin). `host_requires_signature`: the host's own
    /// `require_signature`. The error names the field and what to do.
    pub fn check(&mut self, name: &str, host_requires_signature: bool) -> Result<(), String> {
        crate::policy::names::check_connector_name(name)
            .map_err(|e| format!("connectors.{name}: {e}"))?;
        let named = self.component.to_string_lossy().into_owned();
        if crate::artifact::ArtifactRef::is_artifact(&named) {
            let artifact = crate::artifact::ArtifactRef::parse(&named)
                .map_err(|e| format!("connectors.{name}.component: {e}"))?;
            self.artifact = Some(artifact);
            self.component = PathBuf::new();
            if self.mcp.is_some() {
                return Err(format!(
                    "connectors.{name}: give `component` or `mcp`, not both: a connector is a component or a remote MCP server"
                ));
            }
        }
        if (host_requires_signature || self.require_signature) && self.artifact.is_none() {
            return Err(format!(
                "connectors.{name}: a signature is required and only an OCI artifact carries one: publish the component (`scout-host push`), sign it (`scout-host sign`) and name it `component = \"oci://…\"`"
            ));
        }
        if let Some(url) = self.mcp.clone() {
            let endpoint = self
                .check_remote(&url)
                .map_err(|e| format!("connectors.{name}: {e}"))?;
            // The `http` handle its MCP session rides on is bound to the
            // server's origin.
            self.origin = Some(endpoint.origin().ascii_serialization());
        } else if self.call_timeout_secs.is_some()
            || self.discover_every_secs.is_some()
            || self.upstream_idle_secs.is_some()
            || self.transport.is_some()
        {
            return Err(format!(
                "connectors.{name}: `call_timeout_secs`, `discover_every_secs`, `upstream_idle_secs` and `transport` are a remote MCP server's (`mcp`); a component's calls have the host's timeout"
            ));
        }
        self.scheme()
            .map_err(|e| format!("connectors.{name}.credential: {e}"))?;
        if self.is_public() {
            if crate::credentials::GoogleProduct::from_server(name).is_some() {
                return Err(format!(
                    "connectors.{name}.credential: a Google product is reached with the brand's Google connection, never without one"
                ));
            }
            if self.host_env.is_some() {
                return Err(format!(
                    "connectors.{name}: `credential = \"none\"` sends no credential, so `host_env` would never be used; remove one of them"
                ));
            }
        }
        if let Some(allowance) = &self.person_allowance {
            allowance
                .allowance()
                .map_err(|e| format!("connectors.{name}.person_allowance: {e}"))?;
        }
        for (folder, settings) in &self.folders {
            safe_segment(folder).map_err(|e| format!("connectors.{name}.folders: {e}"))?;
            settings
                .check()
                .map_err(|e| format!("connectors.{name}.folders.{folder}.root: {e}"))?;
        }
        Ok(())
    }
}

/// One further origin of a connector.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum OriginConfig {
    /// Reached with the connector's credential.
    WithCredential(String),
    /// Spelled out: `credential = "none"` sends no credential at all.
    Spelled {
        origin: String,
        #[serde(default)]
        credential: Option<String>,
    },
}

impl OriginConfig {
    /// Its URL.
    pub fn origin(&self) -> &str {
        match self {
            OriginConfig::WithCredential(o) | OriginConfig::Spelled { origin: o, .. } => o,
        }
    }

    /// Whether the connector's credential goes there; an unknown word is an error.
    pub(crate) fn sends_credential(&self) -> Result<bool, String> {
        match self {
            OriginConfig::WithCredential(_)
            | OriginConfig::Spelled {
                credential: None, ..
            } => Ok(true),
            OriginConfig::Spelled {
                credential: Some(c),
                ..
            } if c == "none" => Ok(false),
            OriginConfig::Spelled {
                credential: Some(c),
                ..
            } if c == "connector" => Ok(true),
            OriginConfig::Spelled {
                credential: Some(c),
                ..
            } => Err(format!(
                "`credential = {c:?}` must be \"none\" or \"connector\""
            )),
        }
    }
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
    // Well under the shortest read timeout a client library has by default
    // (httpx's 5 s): a wait for a person never looks like a dead server.
    2_000
}
fn default_session_ttl_secs() -> u64 {
    24 * 60 * 60
}
fn default_max_live_sessions_per_brand() -> u32 {
    100
}
fn default_inbound_sessions_per_hour_per_brand() -> u32 {
    30
}
fn default_credential() -> String {
    "bearer".to_string()
}
fn default_role_claim() -> String {
    "scout_roles".to_string()
}
fn default_leeway_secs() -> u64 {
    60
}
fn default_jwks_min_refresh_secs() -> u64 {
    10
}

impl ServeConfig {
    /// How the registries this configuration names are reached.
    pub fn registry_options(&self) -> crate::artifact::RegistryOptions {
        crate::artifact::RegistryOptions {
            plain_http: self
                .registries
                .iter()
                .filter(|(_, r)| r.plain_http)
                .map(|(name, _)| name.clone())
                .collect(),
            private_network: self
                .registries
                .iter()
                .filter(|(_, r)| r.allow_private_network)
                .map(|(name, _)| name.clone())
                .collect(),
        }
    }

    /// Where the store this configuration names is ([`crate::store::open`] opens it).
    pub fn store_location(&self) -> crate::store::StoreLocation<'_> {
        match self.store.backend {
            StoreBackend::Sqlite => crate::store::StoreLocation::Sqlite {
                path: &self.database,
                durability: self.store.trace_durable_against,
            },
            StoreBackend::Postgres => crate::store::StoreLocation::Postgres {
                url_env: self.store.url_env.as_deref().unwrap_or_default(),
                lease: self.store.lease_secs.map(std::time::Duration::from_secs),
                ca_file: self.store.ca_file.as_deref(),
            },
        }
    }

    /// Reads and checks `path`; relative paths in it are made relative to it.
    pub fn load(path: &Path) -> Result<ServeConfig, ConfigFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigFileError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let mut config = ServeConfig::parse(&text).map_err(|e| match e {
            ConfigFileError::Parse { message, .. } => ConfigFileError::Parse {
                path: path.display().to_string(),
                message,
            },
            other => other,
        })?;
        config.relative_to(path.parent().unwrap_or(Path::new(".")));
        Ok(config)
    }

    /// Makes the file's relative paths (the database, policy files,
    /// signature keys, the store's CA, TLS files, component files) relative
    /// to `base`, the configuration file's folder, as [`ServeConfig::load`] does.
    pub fn relative_to(&mut self, base: &Path) {
        self.database = base.join(&self.database);
        self.policy.base = base.to_path_buf();
        for key in self.signature_keys.iter_mut() {
            *key = base.join(&*key);
        }
        if let Some(ca) = &self.store.ca_file {
            self.store.ca_file = Some(base.join(ca));
        }
        if let Some(tls) = self.tls.as_mut() {
            tls.relative_to(base);
        }
        for connector in self.connectors.values_mut() {
            if connector.mcp.is_none() && connector.artifact.is_none() {
                connector.component = base.join(&connector.component);
            }
        }
    }

    /// Parses and checks the text of a configuration file.
    pub fn parse(text: &str) -> Result<ServeConfig, ConfigFileError> {
        let mut config: ServeConfig = toml::from_str(text).map_err(|e| ConfigFileError::Parse {
            path: "configuration".into(),
            message: e.to_string(),
        })?;
        match config.problems().into_iter().next() {
            Some(first) => Err(first),
            None => Ok(config),
        }
    }

    /// Every error of a configuration read from its file, each naming its
    /// key, in the order the file's checks run: [`ServeConfig::parse`]
    /// refuses the first, `scout-host config check` reports them all.
    /// Reads what the connectors name (an OCI artifact's reference, a
    /// remote server's origin) as `parse` does.
    pub fn problems(&mut self) -> Vec<ConfigFileError> {
        let mut problems = Vec::new();
        let config = self;
        match (config.store.backend, &config.store.url_env) {
            (StoreBackend::Postgres, None) => {
                problems.push(ConfigFileError::Invalid(
                    "store.url_env: backend = \"postgres\" needs url_env, the environment variable holding the connection URL".into(),
                ));
            }
            (StoreBackend::Sqlite, Some(_)) => {
                problems.push(ConfigFileError::Invalid(
                    "store.url_env: only a postgres store has a URL; set backend = \"postgres\" or remove url_env".into(),
                ));
            }
            _ => {}
        }
        if config.store.lease_secs == Some(0) {
            problems.push(ConfigFileError::Invalid(
                "store.lease_secs must be at least 1".into(),
            ));
        }
        for (name, connector) in config.connectors.iter_mut() {
            if let Err(e) = connector.check(name, config.require_signature) {
                problems.push(ConfigFileError::Invalid(e));
            }
        }
        if let Err(e) = config.check_remote_discovery() {
            problems.push(e);
        }
        for (brand, facts) in &config.brands {
            if let Err(e) = check_brand_name(brand) {
                problems.push(ConfigFileError::Invalid(format!("brands: {e}")));
            }
            let mut seen = std::collections::BTreeSet::new();
            for skill in &facts.skills {
                if let Err(e) = check_skill_name(skill) {
                    problems.push(ConfigFileError::Invalid(format!(
                        "brands.{brand:?}.skills: {e}"
                    )));
                } else if !seen.insert(skill) {
                    problems.push(ConfigFileError::Invalid(format!(
                        "brands.{brand:?}.skills: `{skill}` is listed twice"
                    )));
                }
            }
        }
        if let Err(e) = crate::policy::operator_roles::OperatorRoles::from_config(&config.roles) {
            problems.push(ConfigFileError::Invalid(e));
        }
        if config.session_ttl_secs == 0 {
            problems.push(ConfigFileError::Invalid(
                "session_ttl_secs must be at least 1".into(),
            ));
        }
        let no_session = |at: &str| {
            ConfigFileError::Invalid(format!(
                "{at} must be at least 1 (0 would refuse every session of the brand)"
            ))
        };
        if config.max_live_sessions_per_brand == 0 {
            problems.push(no_session("max_live_sessions_per_brand"));
        }
        for (brand, facts) in &config.brands {
            if facts.max_live_sessions == Some(0) {
                problems.push(no_session(&format!("brands.{brand:?}.max_live_sessions")));
            }
        }
        if config.max_request_bytes < 1024 {
            problems.push(ConfigFileError::Invalid(
                "max_request_bytes must be at least 1024".into(),
            ));
        }
        if config.store.backend == StoreBackend::Postgres
            && config.store.trace_durable_against != crate::store::TraceDurability::PowerLoss
        {
            problems.push(ConfigFileError::Invalid(
                "[store] trace_durable_against = \"process_crash\" is a SQLite setting: on PostgreSQL every commit is as durable as the server makes it; remove the line".into(),
            ));
        }
        if let Some(oidc) = &config.oidc
            && let Err(e) = oidc.check()
        {
            problems.push(ConfigFileError::Invalid(e));
        }
        if let Err(e) = config.token_broker.parsed_url() {
            problems.push(ConfigFileError::Invalid(e));
        }
        if !(1..=120).contains(&config.token_timeout_secs) {
            problems.push(ConfigFileError::Invalid(
                "token_timeout_secs must be from 1 to 120".into(),
            ));
        }
        problems
    }

    /// A remote MCP server that takes a credential is listed with the
    /// deployment owner's (`deployment_owner_brand`'s connection, the one an
    /// OAuth Connect stores, or `host_env`): without that key a server that
    /// wants a credential is listed with none, answers 401, and its tools
    /// are never listed while Connect still says "connected". Refused at
    /// start instead, naming the key.
    fn check_remote_discovery(&self) -> Result<(), ConfigFileError> {
        if self.deployment_owner_brand.is_some() {
            return Ok(());
        }
        match self
            .connectors
            .iter()
            .find(|(_, c)| c.is_remote() && !c.is_public())
        {
            Some((name, _)) => Err(ConfigFileError::Invalid(format!(
                "connectors.{name}: a remote MCP server that takes a credential (`credential = \"{}\"`; OAuth through Connect included) lists its tools with the deployment owner's connection, and this file names no owner: add the top-level key `deployment_owner_brand = \"BRAND\"` (before any table), the brand whose connection or `host_env` lists the server's tools (with none stored, it is listed without a credential), or set `credential = \"none\"` if the server takes none",
                self.connectors[name].credential
            ))),
            None => Ok(()),
        }
    }

    /// What this file states about `brand` (defaults when it has no table).
    pub fn brand(&self, brand: &str) -> BrandConfig {
        self.brands.get(brand).cloned().unwrap_or_default()
    }

    /// `https` with `[tls]`, else `http`.
    pub(crate) fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// The base URL endpoints are announced under, without a trailing slash.
    pub(crate) fn base_url(&self) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("{}://{}", self.scheme(), self.listen))
            .trim_end_matches('/')
            .to_string()
    }

    /// The accepted `Host` header values.
    pub fn hosts(&self) -> Vec<String> {
        self.hosts_for(self.listen)
    }

    /// The accepted `Host` header values when the listener got `listen`
    /// (the configured port may be 0).
    pub(crate) fn hosts_for(&self, listen: SocketAddr) -> Vec<String> {
        if !self.allowed_hosts.is_empty() {
            return self
                .allowed_hosts
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect();
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
    /// The credential scheme the `credential` string names; `None` for
    /// `none`, a public API that needs no credential.
    pub fn scheme(&self) -> Result<Option<CredentialScheme>, String> {
        CredentialScheme::parse(&self.credential)
    }

    /// Whether this connector is a remote MCP server rather than a component.
    pub fn is_remote(&self) -> bool {
        self.mcp.is_some()
    }

    /// A remote MCP server that has only the legacy HTTP+SSE transport.
    pub fn legacy_sse(&self) -> bool {
        self.transport == Some(McpTransport::Sse)
    }

    /// A remote MCP server's call deadline.
    pub fn call_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.call_timeout_secs.unwrap_or(30))
    }

    /// How long a remote MCP server's upstream session may idle before it
    /// is closed.
    pub fn upstream_idle(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.upstream_idle_secs.unwrap_or(300))
    }

    /// What a remote MCP server's connector may and may not say; its
    /// endpoint, checked.
    fn check_remote(&self, url: &str) -> Result<url::Url, String> {
        if !self.component.as_os_str().is_empty() {
            return Err("give `component` or `mcp`, not both: a connector is a component or a remote MCP server".into());
        }
        let endpoint = crate::remote::endpoint(url)?;
        if self.origin.is_some() || !self.origins.is_empty() {
            return Err("`origin` and `origins` are a component's: a remote MCP server is reached at its `mcp` URL only".into());
        }
        if !self.folders.is_empty() || self.person_allowance.is_some() {
            return Err("`folders` and `person_allowance` are a component's handles: a remote MCP server gets neither".into());
        }
        if let Some(secs) = self.call_timeout_secs
            && !(1..=300).contains(&secs)
        {
            return Err("call_timeout_secs must be from 1 to 300".into());
        }
        if self.discover_every_secs == Some(0) {
            return Err("discover_every_secs must be at least 1".into());
        }
        if self.upstream_idle_secs == Some(0) {
            return Err("upstream_idle_secs must be at least 1".into());
        }
        Ok(endpoint)
    }

    /// `credential = "none"`: the API is public, every brand reaches it
    /// without a stored connection, and nothing is injected.
    pub fn is_public(&self) -> bool {
        matches!(self.scheme(), Ok(None))
    }

    /// Person chat's per-call spend threshold, in its meter's unit (checked
    /// with the settings): read at start for the file's connectors and at
    /// each change for the admin API's.
    pub(crate) fn spend_threshold(&self) -> Option<u64> {
        self.person_allowance.as_ref()?.per_call_threshold().ok()?
    }
}

/// Why a store key is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreKeyError {
    /// Not hex at all.
    #[error("the store key must be 64 hex digits")]
    NotHex(#[source] hex::FromHexError),
    /// Hex, but not 32 bytes of it.
    #[error("the store key must be 64 hex digits (32 bytes)")]
    Length,
}

/// Reads the store key: 64 hex digits.
pub(crate) fn parse_store_key(hex_text: &str) -> Result<[u8; 32], StoreKeyError> {
    let bytes = hex::decode(hex_text.trim()).map_err(StoreKeyError::NotHex)?;
    bytes.try_into().map_err(|_| StoreKeyError::Length)
}

/// Why `serve` cannot start. Each names what to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigFileError),
    #[error("the environment variable {0} is not set: it holds {1}")]
    MissingSecret(String, &'static str),
    #[error("{0}")]
    BadSecret(String),
    #[error(transparent)]
    Store(#[from] crate::store::OpenError),
    #[error("connector `{name}`: {message}")]
    Connector { name: String, message: String },
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] crate::LoadError),
    #[error(transparent)]
    Telemetry(#[from] crate::telemetry::TelemetryError),
    #[error("[oidc]: {0}")]
    Identity(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_files_are_read_relative_to_the_configuration_by_name_or_pattern() {
        assert!(wildcard_matches("*.cedar", "a.cedar"));
        assert!(!wildcard_matches("*.cedar", "a.cedar.bak"));
        assert!(wildcard_matches("rules-*-v*.cedar", "rules-mail-v2.cedar"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("policies")).unwrap();
        std::fs::write(dir.path().join("policies/b.cedar"), "// b").unwrap();
        std::fs::write(dir.path().join("policies/a.cedar"), "// a").unwrap();
        std::fs::write(dir.path().join("one.cedar"), "// one").unwrap();
        let config = PolicyConfig {
            files: vec!["one.cedar".into(), "policies/*.cedar".into()],
            base: dir.path().to_path_buf(),
        };
        let names: Vec<String> = config.docs().unwrap().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["one.cedar", "policies/a.cedar", "policies/b.cedar"]);
        let none = PolicyConfig {
            files: vec!["policies/*.txt".into()],
            base: dir.path().to_path_buf(),
        };
        assert!(
            none.docs()
                .unwrap_err()
                .to_string()
                .contains("matches no file")
        );
    }

    #[test]
    fn trace_durability_is_power_loss_unless_a_sqlite_host_says_otherwise() {
        let github =
            "[connectors.github]\ncomponent = \"g.wasm\"\norigin = \"https://api.github.com\"\n";
        let c = ServeConfig::parse(github).unwrap();
        assert_eq!(
            c.store.trace_durable_against,
            crate::store::TraceDurability::PowerLoss
        );
        let c = ServeConfig::parse(&format!(
            "{github}[store]\ntrace_durable_against = \"process_crash\"\n"
        ))
        .unwrap();
        assert_eq!(
            c.store.trace_durable_against,
            crate::store::TraceDurability::ProcessCrash
        );
        let postgres = ServeConfig::parse(&format!(
            "{github}[store]\nbackend = \"postgres\"\nurl_env = \"PG\"\ntrace_durable_against = \"process_crash\"\n"
        ));
        assert!(
            matches!(&postgres, Err(ConfigFileError::Invalid(m)) if m.contains("SQLite setting") && m.contains("remove the line")),
            "{postgres:?}"
        );
        let unknown = ServeConfig::parse(&format!(
            "{github}[store]\ntrace_durable_against = \"sometimes\"\n"
        ));
        assert!(
            matches!(&unknown, Err(e) if e.to_string().contains("trace_durable_against")),
            "{unknown:?}"
        );
    }

    #[test]
    fn defaults_and_schemes() {
        let c = ServeConfig::parse(
            "[connectors.github]\ncomponent = \"g.wasm\"\norigin = \"https://api.github.com\"\n",
        )
        .unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:7420");
        assert!(c.require_review, "review is on unless turned off");
        assert_eq!(c.hosts(), ["127.0.0.1:7420", "localhost:7420"]);
        assert_eq!(
            c.connectors["github"].scheme().unwrap(),
            Some(CredentialScheme::Bearer)
        );
        let bad = ServeConfig::parse(
            "[connectors.x]\ncomponent = \"x.wasm\"\norigin = \"https://x\"\ncredential = \"cookie\"\n",
        );
        assert!(
            matches!(bad, Err(ConfigFileError::Invalid(m)) if m.contains("connectors.x.credential"))
        );
        assert_eq!(
            c.session_ttl_secs, 86_400,
            "a session lives a day unless configured"
        );
        assert!(matches!(
            ServeConfig::parse("session_ttl_secs = 0\n"),
            Err(ConfigFileError::Invalid(_))
        ));
        let unknown = ServeConfig::parse("listen = \"127.0.0.1:1\"\nadmin_token = \"oops\"\n");
        assert!(
            matches!(unknown, Err(ConfigFileError::Parse { message, .. }) if message.contains("admin_token")),
            "secrets have no place in the file"
        );
    }

    #[test]
    fn a_remote_server_with_a_credential_needs_the_deployment_owner() {
        let remote = "[connectors.remote]\nmcp = \"https://mcp.example.com/mcp\"\n";
        for credential in [
            "",
            "credential = \"bearer\"\n",
            "credential = \"header:X-Key\"\n",
        ] {
            let parsed = ServeConfig::parse(&format!("{remote}{credential}"));
            assert!(
                matches!(&parsed, Err(ConfigFileError::Invalid(m))
                    if m.contains("deployment_owner_brand") && m.contains("connectors.remote")),
                "{credential:?}: {parsed:?}"
            );
            let owned = format!("deployment_owner_brand = \"acme\"\n{remote}{credential}");
            assert!(ServeConfig::parse(&owned).is_ok(), "{owned}");
        }
        // A server that takes no credential is listed without one.
        assert!(ServeConfig::parse(&format!("{remote}credential = \"none\"\n")).is_ok());
    }

    #[test]
    fn a_remote_server_is_configured_by_its_url_alone() {
        let c = ServeConfig::parse(
            "deployment_owner_brand = \"acme\"\n[connectors.remote]\nmcp = \"https://mcp.example.com:8443/v1/mcp\"\ncall_timeout_secs = 5\n",
        )
        .unwrap();
        let remote = &c.connectors["remote"];
        assert!(remote.is_remote());
        // Its handle is bound to the server's origin.
        assert_eq!(
            remote.origin.as_deref(),
            Some("https://mcp.example.com:8443")
        );
        assert_eq!(remote.call_timeout(), std::time::Duration::from_secs(5));
        let refused = |section: &str, wanted: &str| {
            let parsed = ServeConfig::parse(&format!("[connectors.remote]\n{section}"));
            assert!(
                matches!(&parsed, Err(ConfigFileError::Invalid(m)) if m.contains(wanted)),
                "{section:?}: {parsed:?}"
            );
        };
        let url = "mcp = \"https://mcp.example.com/mcp\"\n";
        refused(&format!("{url}component = \"x.wasm\"\n"), "not both");
        refused(&format!("{url}origin = \"https://other\"\n"), "`origin`");
        refused(
            &format!("{url}[connectors.remote.folders.p]\nroot = \"/d\"\n"),
            "`folders`",
        );
        refused(&format!("{url}call_timeout_secs = 0\n"), "1 to 300");
        refused(&format!("{url}discover_every_secs = 0\n"), "at least 1");
        refused("mcp = \"ftp://mcp.example.com/mcp\"\n", "http or https");
        refused(
            "mcp = \"https://me:pw@mcp.example.com/mcp\"\n",
            "credentials",
        );
        refused("mcp = \"https://mcp.example.com/mcp?key=1\"\n", "query");
        refused("mcp = \"not a url\"\n", "not a URL");
        refused(
            "component = \"x.wasm\"\norigin = \"https://x\"\ncall_timeout_secs = 5\n",
            "remote MCP server's",
        );
        refused(
            "component = \"x.wasm\"\norigin = \"https://x\"\ntransport = \"sse\"\n",
            "remote MCP server's",
        );
        let sse = ServeConfig::parse(&format!(
            "deployment_owner_brand = \"acme\"\n[connectors.remote]\n{url}transport = \"sse\"\n"
        ))
        .unwrap();
        assert!(sse.connectors["remote"].legacy_sse());
        assert!(!remote.legacy_sse(), "streamable HTTP unless told");
        assert!(
            ServeConfig::parse(&format!(
                "[connectors.remote]\n{url}transport = \"websocket\"\n"
            ))
            .is_err()
        );
    }

    #[test]
    fn allowances_and_folders() {
        let head = "[connectors.x]\ncomponent = \"x.wasm\"\norigin = \"https://x\"\n";
        let parse = |tail: &str| ServeConfig::parse(&format!("{head}{tail}"));
        let c = parse("[connectors.x.person_allowance]\nper_run_usd = 1.0\nper_day_usd = 3.0\n[connectors.x.folders.project]\nroot = \"/data/{brand}/p\"\nwritable = true\n").unwrap();
        let x = &c.connectors["x"];
        assert_eq!(
            x.person_allowance
                .as_ref()
                .unwrap()
                .allowance()
                .unwrap()
                .metered()
                .unwrap()
                .per_day,
            3_000_000
        );
        assert_eq!(
            x.folders["project"].root_for("acme").unwrap(),
            PathBuf::from("/data/acme/p")
        );
        for brand in ["..", ".", "", "a/b", "/etc", ".hidden", "a\\b", "é"] {
            assert!(x.folders["project"].root_for(brand).is_err(), "{brand:?}");
        }
        let invalid = |tail: &str| matches!(parse(tail), Err(ConfigFileError::Invalid(_)));
        assert!(
            invalid("[connectors.x.person_allowance]\nper_run_credits = 5\nper_day_usd = 3.0\n"),
            "mixed units"
        );
        assert!(
            invalid("[connectors.x.person_allowance]\nper_run_credits = 5\nper_day_credits = 4\n"),
            "run above day"
        );
        assert!(
            invalid("[connectors.x.person_allowance]\nper_run_credits = 0\nper_day_credits = 4\n"),
            "zero per run"
        );
        assert!(
            invalid(
                "[connectors.x.person_allowance]\nper_run_usd = 0.0000001\nper_day_usd = 4.0\n"
            ),
            "finer than a micro-dollar"
        );
        assert!(
            invalid("[connectors.x.person_allowance]\nper_run_usd = -1.0\nper_day_usd = 4.0\n"),
            "negative"
        );
        assert!(
            invalid("[connectors.x.person_allowance]\nper_run_usd = inf\nper_day_usd = inf\n"),
            "infinite"
        );
        assert!(invalid(
            "[connectors.x.folders.project]\nroot = \"relative/{brand}\"\n"
        ));
        assert!(invalid(
            "[connectors.x.folders.project]\nroot = \"/data/{user}\"\n"
        ));
        assert!(invalid(
            "[connectors.x.folders.project]\nroot = \"/data/../etc\"\n"
        ));
        assert!(invalid(
            "[connectors.x.folders.\"../up\"]\nroot = \"/data\"\n"
        ));
        let unknown = |tail: &str| matches!(parse(tail), Err(ConfigFileError::Parse { .. }));
        assert!(
            unknown("[connectors.x.folders.project]\nroot = \"/d\"\nwriteable = true\n"),
            "a typo is refused, not ignored"
        );
        assert!(unknown(
            "[connectors.x.person_allowance]\nper_run_credits = 1\nper_day_credits = 2\nper_week_credits = 3\n"
        ));
    }

    #[test]
    fn brand_facts_are_checked_when_the_file_is_read() {
        let c = ServeConfig::parse("[brands.acme]\nskills = [\"seo-method\", \"voice-guide\"]\ngoals_engine = true\n[brands.\"Beta Shop\"]\n").unwrap();
        assert_eq!(
            c.brand("acme"),
            BrandConfig {
                skills: vec!["seo-method".into(), "voice-guide".into()],
                goals_engine: true,
                ..BrandConfig::default()
            }
        );
        assert_eq!(
            c.brand("Beta Shop"),
            BrandConfig::default(),
            "an empty table: no skills, goals engine off"
        );
        assert_eq!(
            c.brand("nobody"),
            BrandConfig::default(),
            "no table: no skills, goals engine off"
        );
        assert!(ServeConfig::parse("").unwrap().brands.is_empty());

        let invalid = |text: &str| match ServeConfig::parse(text) {
            Err(ConfigFileError::Invalid(m)) => m,
            other => panic!("{text:?} should be refused as invalid: {other:?}"),
        };
        let long = "a".repeat(65);
        for bad in [
            "SEO",
            "seo method",
            "-seo",
            "seo-",
            "",
            "seo/method",
            "é",
            long.as_str(),
        ] {
            let m = invalid(&format!("[brands.acme]\nskills = [{bad:?}]\n"));
            assert!(
                m.contains("brands.\"acme\".skills") && m.contains("cannot name a skill"),
                "{bad:?}: {m}"
            );
        }
        assert!(invalid("[brands.acme]\nskills = [\"a\", \"a\"]\n").contains("listed twice"));
        for bad in ["\" acme\"", "\"acme \"", "\"\"", "\"a\\tb\""] {
            let m = invalid(&format!("[brands.{bad}]\n"));
            assert!(
                m.starts_with("brands: ") && m.contains("cannot name a brand"),
                "{bad}: {m}"
            );
        }
        let m = invalid(&format!("[brands.{}]\n", "b".repeat(201)));
        assert!(m.contains("cannot name a brand"), "{m}");
        assert!(ServeConfig::parse(&format!("[brands.{}]\n", "b".repeat(200))).is_ok());
        let unknown =
            |text: &str| matches!(ServeConfig::parse(text), Err(ConfigFileError::Parse { .. }));
        assert!(
            unknown("[brands.acme]\ngoals = true\n"),
            "a typo is refused, not ignored"
        );
        assert!(unknown("[brands.acme]\ngoals_engine = \"yes\"\n"));
        assert!(unknown("[brands.acme]\nskills = \"seo-method\"\n"));
    }

    #[test]
    fn oidc_settings_are_checked_when_the_file_is_read() {
        let head = "[oidc]\naudience = \"scout-admin\"\n";
        let parse = |tail: &str| ServeConfig::parse(&format!("{head}{tail}"));
        let good =
            "issuer = \"https://id.example.com\"\njwks_url = \"https://id.example.com/jwks\"\n";
        let c = parse(good).unwrap();
        let oidc = c.oidc.unwrap();
        assert_eq!(oidc.role_claim, "scout_roles");
        assert_eq!(oidc.leeway_secs, 60);
        assert_eq!(oidc.jwks_min_refresh_secs, 10);
        assert_eq!(oidc.roles, None);
        assert!(
            ServeConfig::parse("").unwrap().oidc.is_none(),
            "no [oidc]: the admin token only"
        );
        for loopback in ["127.0.0.1:8080", "[::1]:8080", "localhost:8080"] {
            let text =
                format!("issuer = \"http://{loopback}\"\njwks_url = \"http://{loopback}/jwks\"\n");
            assert!(parse(&text).is_ok(), "{loopback}");
        }
        let invalid = |tail: &str| match parse(tail) {
            Err(ConfigFileError::Invalid(m)) => m,
            other => panic!("{tail:?} should be refused as invalid: {other:?}"),
        };
        let m = invalid(
            "issuer = \"http://id.example.com\"\njwks_url = \"https://id.example.com/jwks\"\n",
        );
        assert!(
            m.starts_with("oidc.issuer: ") && m.contains("must be an https URL"),
            "{m}"
        );
        let m =
            invalid("issuer = \"https://id.example.com\"\njwks_url = \"http://10.0.0.1/jwks\"\n");
        assert!(
            m.starts_with("oidc.jwks_url: ") && m.contains("loopback"),
            "{m}"
        );
        let m =
            invalid("issuer = \"id.example.com\"\njwks_url = \"https://id.example.com/jwks\"\n");
        assert!(m.contains("is not a URL"), "{m}");
        let m = ServeConfig::parse(&format!("[oidc]\naudience = \" \"\n{good}"));
        assert!(matches!(m, Err(ConfigFileError::Invalid(m)) if m.contains("oidc.audience")));
        assert!(invalid(&format!("{good}leeway_secs = 601\n")).contains("oidc.leeway_secs"));
        // The keys may be found through discovery; the console's sign-in is checked.
        let discovered =
            parse("issuer = \"https://id.example.com\"\nconsole_client_id = \"scout-console\"\n")
                .unwrap()
                .oidc
                .unwrap();
        assert_eq!(discovered.jwks_url, None);
        assert_eq!(discovered.console_scope, "openid email profile");
        assert_eq!(discovered.console_bearer, ConsoleBearer::IdToken);
        assert!(invalid(&format!("{good}console_scope = \"email\"\n")).contains("`openid`"));
        assert!(
            invalid(&format!("{good}console_client_id = \" \"\n")).contains("console_client_id")
        );
        assert!(invalid(&format!("{good}subject_claim = \"\"\n")).contains("subject_claim"));
        assert!(
            invalid(&format!("{good}[oidc.brand_roles.acme]\nviewer = []\n"))
                .contains("oidc.brand_roles.acme gives no role")
        );
        assert!(
            invalid(&format!(
                "{good}[oidc.brand_roles.\" acme\"]\nviewer = [\"v\"]\n"
            ))
            .contains("cannot name a brand")
        );
        assert!(
            invalid(&format!("{good}jwks_min_refresh_secs = 0\n"))
                .contains("jwks_min_refresh_secs")
        );
        let c = parse(&format!(
            "{good}[oidc.roles]\nadmin = [\"platform-admins\"]\n"
        ))
        .unwrap();
        let roles = c.oidc.unwrap().roles.unwrap();
        assert_eq!(roles.admin, ["platform-admins"]);
        assert!(
            roles.viewer.is_empty(),
            "a role the table leaves out is given by no value"
        );
        assert!(
            invalid(&format!(
                "{good}[oidc.roles]\nadmin = [\"x\"]\nviewer = [\"x\"]\n"
            ))
            .contains("gives both admin and viewer")
        );
        assert!(invalid(&format!("{good}[oidc.roles]\n")).contains("gives no role"));
        let unknown = |tail: &str| matches!(parse(tail), Err(ConfigFileError::Parse { .. }));
        assert!(
            unknown(&format!("{good}audiences = [\"x\"]\n")),
            "a typo is refused, not ignored"
        );
        assert!(unknown(&format!("{good}[oidc.roles]\nowner = [\"x\"]\n")));
        assert!(
            matches!(
                ServeConfig::parse("[oidc]\nissuer = \"https://id.example.com\"\n"),
                Err(ConfigFileError::Parse { message, .. }) if message.contains("audience")
            ),
            "audience and jwks_url are required"
        );
    }

    #[test]
    fn store_key() {
        assert!(parse_store_key(&"ab".repeat(32)).is_ok());
        assert!(parse_store_key("abcd").is_err());
        assert!(parse_store_key(&"zz".repeat(32)).is_err());
    }
}
