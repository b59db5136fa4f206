//! What an operator configures for one HTTP destination: its origin, the
//! credential and how it is injected, and the limits.

use crate::capabilities::replay::{Recorder, Replay};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// Most headers a guest may send on one request.
pub(super) const MAX_HEADERS: usize = 64;
/// Default cap on the total size of a guest's request headers (names and values).
pub(crate) const DEFAULT_MAX_HEADER_BYTES: usize = 16 << 10;

/// How the host injects the credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scheme", rename_all = "snake_case")]
pub enum CredentialScheme {
    /// `Authorization: Bearer SECRET`
    Bearer,
    /// `Authorization: Basic base64(USERNAME:SECRET)`
    Basic { username: String },
    /// `NAME: SECRET`
    Header { name: String },
    /// `?PARAM=SECRET` appended to every request's query.
    Query { param: String },
}

impl CredentialScheme {
    /// Reads the credential setting's syntax (`serve`'s `credential`,
    /// `call --scheme`): `bearer`, `basic:USER`, `header:NAME`,
    /// `query:PARAM`, or `none` (a public API: nothing is injected, and
    /// nothing needs to be stored), which is `Ok(None)`.
    pub fn parse(text: &str) -> Result<Option<CredentialScheme>, String> {
        let (kind, arg) = match text.split_once(':') {
            Some((k, a)) => (k.trim(), Some(a.trim())),
            None => (text.trim(), None),
        };
        match (kind, arg) {
            ("none", None) => Ok(None),
            ("bearer", None) => Ok(Some(CredentialScheme::Bearer)),
            ("basic", Some(user)) if !user.is_empty() => Ok(Some(CredentialScheme::Basic {
                username: user.to_string(),
            })),
            ("header", Some(name)) if !name.is_empty() => Ok(Some(CredentialScheme::Header {
                name: name.to_string(),
            })),
            ("query", Some(param)) if !param.is_empty() => Ok(Some(CredentialScheme::Query {
                param: param.to_string(),
            })),
            _ => Err(format!(
                "`{text}` is not one of bearer, basic:USER, header:NAME, query:PARAM or none (a public API)"
            )),
        }
    }
}

/// Where the secret comes from. The value is never logged or shown.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretSource {
    /// The secret itself, from the host's configuration.
    Value(String),
    /// The name of an environment variable of the host process.
    Env(String),
}

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Value(_) => f.write_str("Value([REDACTED])"),
            SecretSource::Env(name) => write!(f, "Env({name:?})"),
        }
    }
}

/// A credential: scheme plus secret source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialConfig {
    /// How it is injected.
    #[serde(flatten)]
    pub scheme: CredentialScheme,
    /// Where the secret comes from.
    pub secret: SecretSource,
}

/// Host configuration of one connector's HTTP destination.
#[derive(Clone)]
pub struct HttpConfig {
    /// `scheme://host[:port][/prefix]`; the guest's paths go below the prefix.
    pub origin: String,
    /// The credential to inject, if any.
    pub credential: Option<CredentialConfig>,
    /// Operator allowance for an origin on a loopback or private address (tests,
    /// local development). Off by default: such addresses are refused.
    pub allow_private_network: bool,
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Time between two reads of the response.
    pub read_timeout: Duration,
    /// Time for the whole exchange.
    pub total_timeout: Duration,
    /// Largest response body, after decompression.
    pub max_response_bytes: u64,
    /// Largest request body.
    pub max_request_bytes: usize,
    /// Largest total size of the guest's request headers (names and values).
    pub max_request_header_bytes: usize,
    /// Further header names the operator lists as carrying credentials; a
    /// guest's header of any of these names is dropped.
    pub strip_headers: Vec<String>,
    /// Live (the default), record or replay (DESIGN D9).
    pub mode: HttpMode,
    /// The destination name this capability serves (`None`: the connector's
    /// own origin), which replay fixtures and recordings name.
    pub destination: Option<String>,
    /// Further headers the host injects whose values are deployment secrets
    /// (Google Ads' `developer-token`): scrubbed like the credential, and a
    /// guest's header of the same name is dropped.
    pub secret_headers: Vec<(String, String)>,
    /// Secrets never sent, scrubbed like the credential all the same (the
    /// refresh token and client secret the credential was obtained with).
    pub scrub_also: Vec<String>,
    /// How to get a handle with a fresh credential when the upstream
    /// answers 401 (a token the host obtains; once per call and handle).
    pub renewal: Option<Arc<dyn super::Renewal>>,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("origin", &self.origin)
            .field("credential", &self.credential)
            .field("allow_private_network", &self.allow_private_network)
            .field("destination", &self.destination)
            .field("secret_headers", &self.secret_headers.len())
            .field("renews", &self.renewal.is_some())
            .finish_non_exhaustive()
    }
}

/// How a capability answers requests (DESIGN D9; see `capabilities::replay`).
#[derive(Debug, Clone, Default)]
pub enum HttpMode {
    /// Sends to the origin.
    #[default]
    Live,
    /// Sends to the origin, and appends each completed exchange (scrubbed)
    /// to the recorder's fixture file.
    Record(Arc<Recorder>),
    /// Answers from fixtures only. The capability holds no network client,
    /// so it cannot send; requests pass the same checks as live first.
    Replay(Arc<Replay>),
}

impl HttpConfig {
    /// A configuration with the default limits.
    pub fn new(origin: impl Into<String>) -> HttpConfig {
        HttpConfig {
            origin: origin.into(),
            credential: None,
            allow_private_network: false,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(15),
            total_timeout: Duration::from_secs(30),
            max_response_bytes: 8 << 20,
            max_request_bytes: 4 << 20,
            max_request_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            strip_headers: Vec::new(),
            mode: HttpMode::Live,
            destination: None,
            secret_headers: Vec::new(),
            scrub_also: Vec::new(),
            renewal: None,
        }
    }

    /// Names the destination this capability serves (replay and recording).
    pub fn destination(mut self, name: impl Into<String>) -> HttpConfig {
        self.destination = Some(name.into());
        self
    }

    /// Sets the mode: live, record or replay.
    pub fn mode(mut self, mode: HttpMode) -> HttpConfig {
        self.mode = mode;
        self
    }

    /// Drops a guest's headers of these names too (credential headers of
    /// the operator's own).
    pub fn strip_headers(
        mut self,
        names: impl IntoIterator<Item = impl Into<String>>,
    ) -> HttpConfig {
        self.strip_headers.extend(names.into_iter().map(Into::into));
        self
    }

    /// Sets the credential.
    pub fn credential(mut self, scheme: CredentialScheme, secret: SecretSource) -> HttpConfig {
        self.credential = Some(CredentialConfig { scheme, secret });
        self
    }

    /// Allows an origin on a loopback or private address.
    pub fn allow_private_network(mut self, allow: bool) -> HttpConfig {
        self.allow_private_network = allow;
        self
    }
}
