//! Remote MCP servers as connectors: discovery yields candidates, review
//! yields tools (seed 003: "Discovery answered what a server offered. It
//! never answered what the product allowed").
//!
//! A connector configured with `mcp = "https://…/mcp"` has no component.
//! The host is the MCP client (rmcp's client and streamable-HTTP transport,
//! over the guarded `http` handle of [`transport`]). What the server's
//! `tools/list` returns is kept as candidates, each with the digest an
//! operator reviews (name, title, description, input and output schema,
//! annotations). The connector is served as [`LoadedComponent::remote`]:
//! every candidate, with the effect its review gave it (`read`, `write` or
//! `billed`) while the digest still matches, and as an unreviewed write
//! otherwise, which the boundary holds (review is always required for a
//! remote connector). A tool whose description or schema changes is held
//! until reviewed again; a tool the server no longer lists is gone at the
//! next revision. Annotations such as `readOnlyHint` are the server's claim,
//! shown to the operator, never trusted.
//!
//! Each agent session reaches the server through its own upstream MCP
//! session ([`Upstream`]), created at its first authorized call with the
//! handle the host granted that call, and closed when the session ends, or
//! once it has idled past the connector's `upstream_idle_secs` (an idle
//! session would otherwise hold its client's state and the server's session
//! for as long as the agent session lives): the next call opens a new one.
//! Both are trace rows of the session (`upstream_closed`,
//! `upstream_reopened`), with the connector and why.

mod client;
pub mod content;
mod defaults;
mod direct;
pub mod enterprise;
pub mod inspect;
pub mod machine;
mod notices;
pub mod oauth;
pub mod relay;
mod transport;

use crate::capabilities::http::HttpCapability;
use crate::capabilities::mcp::{McpAnswer, McpFailure, McpSession};
use crate::runtime::{LoadedComponent, RemoteTool};
use crate::store::{ReviewStore, args_digest};
use parking_lot::{Mutex, RwLock};
use rmcp::model::{CallToolRequest, ClientRequest, ServerResult};
use rmcp::service::{PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use scout_manifest::{Effect, Manifest, ToolDoc};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use url::Url;

/// Most tools kept from one server's list; the rest are left out, and said so.
pub const MAX_TOOLS: usize = 512;

/// Most pages of `tools/list` read from one server in one listing.
pub const MAX_PAGES: usize = 64;

/// Longest description kept of a candidate (longer is cut, and the digest
/// covers what the server sent).
const MAX_DESCRIPTION: usize = 16 << 10;

/// How long discovery waits for the server (initialize and every page).
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// How much longer than a call's deadline one request to a remote server
/// may take (the handle's timeout): a legacy event stream opened within
/// this margin outlives any call sent on it.
pub const STREAM_MARGIN: Duration = Duration::from_secs(5);

/// The effect an operator gives a remote tool in its review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RemoteEffect {
    /// Changes nothing upstream: runs without a per-call gate.
    Read,
    /// Changes something: asks a person on every call.
    Write,
    /// Spends money or credits: asks a person on every call (the host
    /// meters no remote server).
    Billed,
}

impl RemoteEffect {
    pub fn as_str(self) -> &'static str {
        match self {
            RemoteEffect::Read => "read",
            RemoteEffect::Write => "write",
            RemoteEffect::Billed => "billed",
        }
    }

    pub fn parse(text: &str) -> Option<RemoteEffect> {
        match text {
            "read" => Some(RemoteEffect::Read),
            "write" => Some(RemoteEffect::Write),
            "billed" => Some(RemoteEffect::Billed),
            _ => None,
        }
    }
}

/// One tool a server offers, as discovered: a candidate, not a tool.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub name: String,
    /// What the server says about it (`title`, `description`,
    /// `inputSchema`, `outputSchema`, `annotations`).
    pub described: Value,
    /// What an operator's review approves.
    pub digest: String,
}

impl Candidate {
    /// `server`: the endpoint that listed it. The review digest binds the
    /// server too: a person reviewed what that server said it would do, so
    /// the same listing from another URL is a tool to review again.
    fn from_tool(tool: &rmcp::model::Tool, server: &Url) -> Candidate {
        let full = serde_json::to_value(tool).unwrap_or(Value::Null);
        let mut described = serde_json::Map::new();
        for key in [
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        ] {
            if let Some(v) = full.get(key) {
                described.insert(key.to_string(), v.clone());
            }
        }
        let digest = args_digest(
            &json!({"name": tool.name, "described": described, "server": server.as_str()}),
        );
        if let Some(Value::String(d)) = described.get_mut("description")
            && d.len() > MAX_DESCRIPTION
        {
            let mut cut = MAX_DESCRIPTION;
            while !d.is_char_boundary(cut) {
                cut -= 1;
            }
            d.truncate(cut);
        }
        Candidate {
            name: tool.name.to_string(),
            described: Value::Object(described),
            digest,
        }
    }

    /// The server's own claims about the tool (`readOnlyHint`, ...).
    pub fn annotations(&self) -> Option<&Value> {
        self.described.get("annotations")
    }

    pub fn description(&self) -> String {
        self.described
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }
}

/// What a reviewer should look at twice in what a remote server says of a
/// tool: characters a person would not see (invisible, bidirectional,
/// look-alike: the approvals' own rule, [`crate::shown`]), text addressed
/// to the model rather than describing the tool, and other tools' names.
pub fn flags(candidate: &Candidate, all: &[Candidate]) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if crate::shown::json_text(&candidate.described).marked {
        flags.push("hidden_characters");
    }
    let text = candidate.described.to_string().to_lowercase();
    const ADDRESSED: &[&str] = &[
        "ignore previous",
        "ignore all",
        "ignore the above",
        "disregard",
        "system prompt",
        "you must",
        "do not tell",
        "don't tell",
        "do not mention",
        "before answering",
        "before using this tool",
        "before responding",
        "<important>",
        "always call",
        "also call",
        "instead of",
        "as an ai",
    ];
    if ADDRESSED.iter().any(|p| text.contains(p)) {
        flags.push("addressed_to_the_model");
    }
    let words: std::collections::BTreeSet<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .collect();
    let names_other = text.contains("mcp__")
        || all.iter().any(|other| {
            other.name != candidate.name && words.contains(other.name.to_lowercase().as_str())
        });
    if names_other {
        flags.push("names_other_tools");
    }
    flags
}

/// Why a remote server's endpoint (`mcp = "…"`) is refused: each names
/// what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    #[error("mcp: `{url}` is not a URL: {source}")]
    NotAUrl {
        url: String,
        #[source]
        source: url::ParseError,
    },
    #[error("mcp: the server's URL must be http or https")]
    NotHttp,
    #[error(
        "mcp: the URL must not carry credentials; give the server's token as the connector's credential (a connection, or `host_env`)"
    )]
    Credentials,
    #[error("mcp: the URL must not have a query or a fragment")]
    QueryOrFragment,
}

/// The refusal's text, for callers that answer with a message (the admin
/// API's `bad_request`, the configuration's checks).
impl From<EndpointError> for String {
    fn from(refused: EndpointError) -> String {
        refused.to_string()
    }
}

/// A remote server's endpoint as configured (`mcp = "…"`), checked: `http`
/// or `https`, no credentials, no query or fragment.
pub fn endpoint(url: &str) -> Result<Url, EndpointError> {
    let parsed = Url::parse(url).map_err(|source| EndpointError::NotAUrl {
        url: url.to_string(),
        source,
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(EndpointError::NotHttp);
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(EndpointError::Credentials);
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(EndpointError::QueryOrFragment);
    }
    Ok(parsed)
}

/// A tool name usable in `mcp__SERVER__TOOL`: what MCP's naming guidance allows.
fn usable_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What the last discovery found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Discovered {
    pub tools: Vec<Candidate>,
    /// Its resources, resource templates and prompts: candidates too
    /// ([`content`]).
    pub content: Vec<content::ContentCandidate>,
    /// Names the server offered that cannot be served (not a usable name,
    /// past [`MAX_TOOLS`], listed twice), and why.
    pub left_out: Vec<(String, String)>,
    /// When it was last listed (milliseconds since the Unix epoch); 0: never.
    pub listed_at_ms: i64,
    /// Why the last attempt failed, when it did (the last good list stays).
    pub error: Option<String>,
}

/// What one listing found: tools, other offerings, what was left out.
type Listing = (
    Vec<Candidate>,
    Vec<content::ContentCandidate>,
    Vec<(String, String)>,
);

/// A remote MCP server, one connector.
pub struct RemoteServer {
    name: String,
    url: Url,
    call_timeout: Duration,
    discovered: RwLock<Discovered>,
    upstreams: Arc<Mutex<HashMap<String, Arc<Upstream>>>>,
    /// How long an upstream session may idle before it is closed.
    idle_after: Duration,
    /// Whether the task closing idle upstream sessions runs.
    sweeping: std::sync::atomic::AtomicBool,
    /// Where the closing and reopening of an upstream session are traced
    /// (set by the deployments once they serve the server).
    trace: Arc<std::sync::OnceLock<Arc<dyn crate::store::Store>>>,
    /// Told when any upstream session hears `notifications/tools/list_changed`.
    list_changed: Arc<tokio::sync::Notify>,
    /// The server has only the 2024-11-05 HTTP+SSE transport
    /// (`transport = "sse"`): `url` is its event stream.
    legacy_sse: bool,
    /// Per agent session, the client its person answers through, while
    /// that session may be asked ([`RemoteServer::ask_through`]).
    askers: client::Askers,
    /// Held while the host serves this server's tools afresh.
    applying: Mutex<()>,
}

impl RemoteServer {
    /// The server at `url` (`http` or `https`, a path, no credentials in it).
    pub fn new(
        name: &str,
        url: &str,
        call_timeout: Duration,
    ) -> Result<RemoteServer, EndpointError> {
        let url = endpoint(url)?;
        Ok(RemoteServer {
            name: name.to_string(),
            url,
            call_timeout,
            discovered: RwLock::default(),
            upstreams: Arc::default(),
            idle_after: DEFAULT_IDLE,
            sweeping: Default::default(),
            trace: Arc::default(),
            list_changed: Arc::default(),
            legacy_sse: false,
            askers: Arc::default(),
            applying: Mutex::default(),
        })
    }

    /// The same server, reached over the legacy HTTP+SSE transport.
    pub fn over_legacy_sse(mut self, legacy_sse: bool) -> RemoteServer {
        self.legacy_sse = legacy_sse;
        self
    }

    /// The same server, its upstream sessions closed once idle this long.
    pub fn idle_after(mut self, idle: Duration) -> RemoteServer {
        self.idle_after = idle.max(Duration::from_secs(1));
        self
    }

    /// Traces the closing and reopening of upstream sessions into `store`
    /// (the first store given stays).
    pub fn trace_into(&self, store: &Arc<dyn crate::store::Store>) {
        if self.trace.get().is_none() {
            let _ = self.trace.set(store.clone());
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// How long one request to the server may take.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// The endpoint, as configured.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The origin the connector's `http` handle is bound to.
    pub fn origin(&self) -> String {
        self.url.origin().ascii_serialization()
    }

    /// Held while the host serves this server's tools afresh (its listing
    /// and the store's reviews read, then installed): one at a time, so an
    /// older reading is never installed after a newer one.
    pub fn applying(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.applying.lock()
    }

    /// Told when a server says its tools changed.
    pub fn list_changed(&self) -> Arc<tokio::sync::Notify> {
        self.list_changed.clone()
    }

    /// What the last discovery found.
    pub fn discovered(&self) -> Discovered {
        self.discovered.read().clone()
    }

    /// Lists the server's tools through `http` (the deployment's own handle
    /// for this connector) on a fresh MCP session, and keeps them as the
    /// candidates. Returns whether the candidates changed.
    pub async fn discover(&self, http: Arc<HttpCapability>) -> Result<bool, String> {
        let listed = tokio::time::timeout(DISCOVERY_TIMEOUT, self.list(http))
            .await
            .unwrap_or_else(|_| Err("the server did not list its tools in time".into()));
        let mut discovered = self.discovered.write();
        match listed {
            Ok((tools, content, left_out)) => {
                let before: Vec<(&str, &str)> = discovered
                    .tools
                    .iter()
                    .map(|c| (c.name.as_str(), c.digest.as_str()))
                    .chain(
                        discovered
                            .content
                            .iter()
                            .map(|c| (c.item.as_str(), c.digest.as_str())),
                    )
                    .collect();
                let after: Vec<(&str, &str)> = tools
                    .iter()
                    .map(|c| (c.name.as_str(), c.digest.as_str()))
                    .chain(content.iter().map(|c| (c.item.as_str(), c.digest.as_str())))
                    .collect();
                let changed = before != after || discovered.listed_at_ms == 0;
                *discovered = Discovered {
                    tools,
                    content,
                    left_out,
                    listed_at_ms: crate::store::now_ms(),
                    error: None,
                };
                Ok(changed)
            }
            Err(why) => {
                discovered.error = Some(why.clone());
                Err(why)
            }
        }
    }

    /// The server's tools, its other offerings, and what was left out.
    async fn list(&self, http: Arc<HttpCapability>) -> Result<Listing, String> {
        let upstream = Upstream::new(self, http, None);
        let service = upstream
            .connected()
            .await?
            .rmcp()
            .ok_or("discovery's session is rmcp's")?;
        // Page by page, bounded: a server that pages without end, or lists
        // tools without end, is read only so far.
        let mut listed = Vec::new();
        let mut cursor = None;
        let mut cut = false;
        for page in 1.. {
            let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor.take());
            let answer = match service.peer().list_tools(Some(params)).await {
                Ok(answer) => answer,
                Err(e) => {
                    upstream.close().await;
                    if let Some(scope) = upstream.client.scope_needed.lock().take() {
                        return Err(oauth::needs_scope(self.url.as_str(), &scope));
                    }
                    return Err(upstream.scrubbed(&format!("tools/list failed: {e}")));
                }
            };
            listed.extend(answer.tools);
            match answer.next_cursor {
                None => break,
                Some(_) if page >= MAX_PAGES || listed.len() > MAX_TOOLS => {
                    cut = true;
                    break;
                }
                next => cursor = next,
            }
        }
        let offered = content::list(&service, &self.url, |text| upstream.scrubbed(text)).await;
        upstream.close().await;
        let (content, mut content_left_out) = offered?;
        let mut kept = Vec::new();
        let mut left_out = Vec::new();
        if cut {
            left_out.push((
                "(the rest of the list)".to_string(),
                format!(
                    "past the host's limit of {MAX_PAGES} pages or {MAX_TOOLS} tools per server"
                ),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for tool in listed {
            let name = tool.name.to_string();
            let why = if !usable_name(&name) {
                Some("not a usable tool name (1 to 64 of A-Z, a-z, 0-9, `_`, `-`)")
            } else if !seen.insert(name.clone()) {
                Some("listed twice")
            } else if kept.len() >= MAX_TOOLS {
                Some("past the host's limit of tools per server")
            } else {
                None
            };
            match why {
                Some(why) => {
                    let shown: String = name.chars().take(80).collect();
                    left_out.push((shown, why.to_string()));
                }
                None => kept.push(Candidate::from_tool(&tool, &self.url)),
            }
        }
        left_out.append(&mut content_left_out);
        Ok((kept, content, left_out))
    }

    /// The connector as served now: every candidate, with the effect of
    /// its review where the review's digest is the candidate's; any other
    /// is an unreviewed write (and held by the boundary).
    pub fn snapshot(&self, reviews: &dyn ReviewStore) -> LoadedComponent {
        let discovered = self.discovered.read();
        let mut docs = Vec::new();
        let mut tools = Vec::new();
        for candidate in &discovered.tools {
            let effect = match crate::store::block(reviews.reviewed(&self.name, &candidate.name)) {
                Ok(Some(r)) if r.digest == candidate.digest => {
                    r.effect.as_deref().and_then(RemoteEffect::parse)
                }
                _ => None,
            };
            let effect = match effect {
                Some(RemoteEffect::Read) => Effect::Read,
                _ => Effect::Write,
            };
            docs.push(ToolDoc {
                function: candidate.name.clone(),
                effect,
                description: candidate.description(),
                routes: Vec::new(),
                grantable: false,
                gate: None,
                registers: None,
                name: Some(candidate.name.clone()),
                reads_from: Vec::new(),
                params: Default::default(),
                result: Default::default(),
            });
            let schema = |key: &str| match candidate.described.get(key) {
                Some(Value::Object(o)) => Value::Object(o.clone()),
                _ => json!({"type": "object"}),
            };
            tools.push(RemoteTool {
                name: candidate.name.clone(),
                effect,
                description: candidate.description(),
                input_schema: schema("inputSchema"),
                output_schema: match candidate.described.get("outputSchema") {
                    Some(Value::Object(o)) => Value::Object(o.clone()),
                    _ => Value::Null,
                },
                digest: candidate.digest.clone(),
            });
        }
        // Reads first, as a component's.
        docs.sort_by_key(|d| d.effect != Effect::Read);
        let manifest = Manifest {
            format: scout_manifest::FORMAT,
            connector: self.name.clone(),
            version: "0.0.0".into(),
            namespace: "remote".into(),
            description: format!("The remote MCP server at {}", self.url),
            tools: docs,
            withheld: Vec::new(),
            billing: None,
        };
        LoadedComponent::remote(manifest, tools, self.call_timeout)
    }

    /// The upstream session of agent session `session` of `brand`, over
    /// `http` (the handle granted to its call): the one it has, unless the
    /// handle changed (a new credential), then a new one.
    pub fn upstream(&self, session: &str, brand: &str, http: Arc<HttpCapability>) -> Arc<Upstream> {
        let mut upstreams = self.upstreams.lock();
        if let Some(existing) = upstreams.get(session)
            && Arc::ptr_eq(&existing.client.http, &http)
        {
            existing.touch();
            return existing.clone();
        }
        let upstream = Arc::new(Upstream::new(self, http, Some((session, brand))));
        if let Some(old) = upstreams.insert(session.to_string(), upstream.clone()) {
            close_later(old);
        }
        drop(upstreams);
        self.sweep_idle();
        upstream
    }

    /// Starts the task that closes upstream sessions idle past the bound,
    /// where it is not running (one per server; it ends with the server).
    fn sweep_idle(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let upstreams = Arc::downgrade(&self.upstreams);
        let bound = self.idle_after;
        // Closed between one and one and a quarter bounds after the last use.
        let every = (bound / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(upstreams) = upstreams.upgrade() else {
                    return;
                };
                let idle: Vec<Arc<Upstream>> = upstreams
                    .lock()
                    .values()
                    .filter(|u| u.idle_for().is_some_and(|idle| idle >= bound))
                    .cloned()
                    .collect();
                drop(upstreams);
                for upstream in idle {
                    upstream.close_idle(bound).await;
                }
            }
        });
    }

    /// Where the server's elicitations in agent session `session` go: the
    /// client of the call being made, where the session may ask a person
    /// and that client takes form elicitation; `None`: nobody (declined).
    pub fn ask_through(&self, session: &str, person: Option<Arc<dyn crate::person::Asker>>) {
        let mut askers = self.askers.lock();
        match person {
            Some(peer) => {
                askers.insert(session.to_string(), peer);
            }
            None => {
                askers.remove(session);
            }
        }
    }

    /// Closes agent session `session`'s upstream session, if it has one.
    pub fn end(&self, session: &str) {
        self.askers.lock().remove(session);
        if let Some(old) = self.upstreams.lock().remove(session) {
            close_later(old);
        }
    }

    /// Closes every agent session's upstream session: the server was
    /// retired or replaced through the admin API.
    pub fn end_all(&self) {
        self.askers.lock().clear();
        for (_, old) in self.upstreams.lock().drain() {
            close_later(old);
        }
    }
}

/// Closes `upstream` on the runtime, where there is one; otherwise dropping
/// it ends its session (rmcp cancels a dropped service).
fn close_later(upstream: Arc<Upstream>) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move { upstream.close().await });
    }
}

/// An upstream session's idle bound unless the connector sets one.
const DEFAULT_IDLE: Duration = Duration::from_secs(300);

/// Milliseconds since the first time this process asked: a clock an
/// upstream session's last use is kept in as one atomic number.
fn clock_ms() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// What one request on an upstream session came to.
// One per request, moved once: boxing the result would add an allocation
// to every proxied call.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Outcome {
    /// The server's result.
    Answer(ServerResult),
    /// The server's JSON-RPC error's message.
    Refused(String),
    /// The deadline passed; the request was cancelled upstream.
    Deadline,
    /// The exchange failed, in the host's words.
    Failed(String),
}

/// An upstream session as it runs: rmcp's (discovery, the legacy
/// transport, a call sent again with a renewed credential), or the host's
/// own ([`direct`], an agent session's over streamable HTTP), with the task
/// reading its standalone stream while one is open.
#[derive(Clone)]
enum Running {
    Rmcp(Arc<RunningService<RoleClient, client::HostClient>>),
    Direct(Arc<transport::Opened>),
}

impl Running {
    fn rmcp(self) -> Option<Arc<RunningService<RoleClient, client::HostClient>>> {
        match self {
            Running::Rmcp(service) => Some(service),
            Running::Direct(_) => None,
        }
    }

    fn is_closed(&self) -> bool {
        match self {
            Running::Rmcp(service) => service.is_closed(),
            Running::Direct(_) => false,
        }
    }
}

/// One upstream MCP session: connected at its first call.
pub struct Upstream {
    /// Whether it is spoken by the host itself ([`direct`]) rather than
    /// through rmcp's service.
    direct: bool,
    /// The task reading the standalone stream of a session spoken directly.
    standalone_task: Mutex<Option<tokio::task::AbortHandle>>,
    /// The connector.
    server: String,
    /// The agent session and its brand (`None` for discovery).
    owner: Option<(String, String)>,
    /// When it was last used ([`clock_ms`]).
    used_ms: std::sync::atomic::AtomicU64,
    /// Why it was closed, when the host closed it for idling: the next
    /// connection is a reopening, traced.
    closed_idle: Mutex<Option<String>>,
    trace: Arc<std::sync::OnceLock<Arc<dyn crate::store::Store>>>,
    client: transport::GuardedClient,
    url: String,
    handler: client::HostClient,
    service: tokio::sync::Mutex<Option<Running>>,
    /// Over the legacy transport: when its event stream was opened (a
    /// session is reused only while its stream outlives a call sent now).
    legacy_opened: Option<Mutex<Option<Instant>>>,
}

impl Upstream {
    /// `owner`: the agent session it serves and its brand (`None` for
    /// discovery, where nobody may be asked anything).
    fn new(
        server: &RemoteServer,
        http: Arc<HttpCapability>,
        owner: Option<(&str, &str)>,
    ) -> Upstream {
        let standalone = Arc::<transport::Standalone>::default();
        let session = owner.map(|(session, _)| session);
        Upstream {
            // An agent session's, over streamable HTTP.
            direct: owner.is_some() && !server.legacy_sse,
            standalone_task: Mutex::default(),
            server: server.name.clone(),
            owner: owner.map(|(s, b)| (s.to_string(), b.to_string())),
            used_ms: clock_ms().into(),
            closed_idle: Mutex::default(),
            trace: server.trace.clone(),
            client: transport::GuardedClient {
                unauthorized: Default::default(),
                scope_needed: Default::default(),
                http,
                path: server.url.path().to_string(),
                exchanges: Default::default(),
                standalone: standalone.clone(),
            },
            url: server.url.to_string(),
            handler: client::HostClient {
                list_changed: server.list_changed.clone(),
                refused: Default::default(),
                person: session.map(|session| client::Person {
                    askers: server.askers.clone(),
                    session: session.to_string(),
                    server: server.name.clone(),
                    timeout: server.call_timeout,
                }),
                asked: Default::default(),
                relays: Default::default(),
                standalone,
            },
            service: Default::default(),
            legacy_opened: server.legacy_sse.then(Mutex::default),
        }
    }

    fn scrubbed(&self, text: &str) -> String {
        self.client.http.scrub_text(text)
    }

    /// The running session, initialized now if it is not yet.
    async fn connected(&self) -> Result<Running, String> {
        let mut service = self.service.lock().await;
        let fresh = self
            .legacy_opened
            .as_ref()
            .is_none_or(|opened| opened.lock().is_some_and(|at| at.elapsed() < STREAM_MARGIN));
        if let Some(running) = service.as_ref()
            && !running.is_closed()
            && fresh
        {
            return Ok(running.clone());
        }
        if let Some(old) = service.take() {
            self.ended(old);
        }
        let started = |e: &dyn std::fmt::Display| {
            self.scrubbed(&format!("the MCP session could not be started: {e}"))
        };
        let running = match &self.legacy_opened {
            None if self.direct => {
                let uri: Arc<str> = self.url.as_str().into();
                let opened = direct::open(&self.client, &self.handler, &uri)
                    .await
                    .map_err(|e| started(&e))?;
                Running::Direct(Arc::new(opened))
            }
            Some(opened) => {
                let transport = self.client.open_legacy().await.map_err(|e| started(&e))?;
                *opened.lock() = Some(Instant::now());
                let transport = notices::Relaying::new(transport, self.handler.relays.clone());
                Running::Rmcp(Arc::new(
                    self.handler
                        .clone()
                        .serve(transport)
                        .await
                        .map_err(|e| started(&e))?,
                ))
            }
            None => {
                let config = StreamableHttpClientTransportConfig::with_uri(self.url.as_str());
                let transport =
                    StreamableHttpClientTransport::with_client(self.client.clone(), config);
                let transport = notices::Relaying::new(transport, self.handler.relays.clone());
                Running::Rmcp(Arc::new(
                    self.handler
                        .clone()
                        .serve(transport)
                        .await
                        .map_err(|e| started(&e))?,
                ))
            }
        };
        *service = Some(running.clone());
        let reopened = self.closed_idle.lock().take();
        if let Some(why) = reopened {
            // Recorded before the call it opens for is sent.
            self.traced(crate::trace::Change::UpstreamReopened, &why)
                .await;
        }
        Ok(running)
    }

    /// Marks it used now.
    fn touch(&self) {
        self.used_ms.store(clock_ms(), Ordering::Relaxed);
    }

    /// How long it has idled: `None` while a call or a read is in flight,
    /// or once closed for idling.
    fn idle_for(&self) -> Option<Duration> {
        if self.client.standalone.in_flight() || self.closed_idle.lock().is_some() {
            return None;
        }
        let used = self.used_ms.load(Ordering::Relaxed);
        Some(Duration::from_millis(clock_ms().saturating_sub(used)))
    }

    /// Closes the session if it is still idle past `bound` (the server's
    /// session deleted), and traces it; the next call opens a new one.
    async fn close_idle(&self, bound: Duration) {
        let mut service = self.service.lock().await;
        let Some(idle) = self.idle_for().filter(|idle| *idle >= bound) else {
            return;
        };
        let Some(running) = service.take() else {
            return;
        };
        self.ended(running);
        let why = format!(
            "idle for {} s, past the connector's bound of {} s (upstream_idle_secs)",
            idle.as_secs(),
            bound.as_secs()
        );
        *self.closed_idle.lock() = Some(why.clone());
        drop(service);
        self.traced(crate::trace::Change::UpstreamClosed, &why)
            .await;
    }

    /// One trace row of the agent session about this upstream session.
    async fn traced(&self, change: crate::trace::Change, why: &str) {
        let Some((session, brand)) = &self.owner else {
            return;
        };
        tracing::info!(connector = %self.server, session = %session, rule = %change, why, "upstream MCP session");
        let Some(store) = self.trace.get() else {
            return;
        };
        let event = crate::trace::changed(
            session,
            brand,
            change,
            json!({"connector": self.server, "why": why}),
            json!({"kind": "host", "via": "upstream_idle"}),
            crate::store::Origin::default(),
        );
        if let Err(e) = store.record(&event).await {
            tracing::error!(connector = %self.server, error = %e, "cannot record an upstream session's change");
        }
    }

    async fn close(&self) {
        if let Some(running) = self.service.lock().await.take() {
            self.ended(running);
        }
    }

    /// Ends `running`: rmcp's is cancelled (its transport deletes the
    /// server's session); the host's own is deleted at the server by a
    /// task of its own (`DELETE`, bounded), its standalone stream's reader
    /// stopped.
    fn ended(&self, running: Running) {
        match running {
            Running::Rmcp(service) => service.cancellation_token().cancel(),
            Running::Direct(opened) => {
                if let Some(task) = self.standalone_task.lock().take() {
                    task.abort();
                }
                let Some(session) = opened.session.clone() else {
                    return;
                };
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    return;
                };
                let client = self.client.clone();
                let uri: Arc<str> = self.url.as_str().into();
                runtime.spawn(async move {
                    let _ = tokio::time::timeout(
                        Duration::from_secs(5),
                        client.delete_session(uri, session, None, opened.headers.clone()),
                    )
                    .await;
                });
            }
        }
    }

    /// Starts the reader of the session's standalone stream, where the
    /// server may have one and none is reading (a call is in flight: the
    /// GET opens now, see [`transport`]).
    fn read_standalone(&self, opened: &Arc<transport::Opened>) {
        if opened.session.is_none() || self.client.standalone.refused() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut task = self.standalone_task.lock();
        if task.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        *task = Some(
            runtime
                .spawn(direct::standalone(
                    self.client.clone(),
                    self.handler.clone(),
                    opened.clone(),
                    self.url.as_str().into(),
                ))
                .abort_handle(),
        );
    }

    /// What the server asked of the host that was refused, since last asked.
    pub fn refused_requests(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.handler.refused.lock())
    }
}

#[async_trait::async_trait]
impl McpSession for Upstream {
    /// One `tools/call`; where the server refused the credential (401) and
    /// the host can renew it, renewed once and sent once more on a new
    /// upstream session (a refused request ran nothing).
    async fn call_tool(&self, tool: &str, args: &Value, deadline: Instant) -> McpAnswer {
        let mut answer = self.call_once(tool, args, deadline).await;
        // The token lacks a scope the server asked for: a person connects
        // again (with it), nothing is retried here.
        if answer.result.is_err()
            && let Some(scope) = self.client.scope_needed.lock().take()
        {
            answer.result = Err(McpFailure::Upstream(oauth::needs_scope(&self.url, &scope)));
            return answer;
        }
        if answer.result.is_ok() {
            // The token has what the server asks: a later need starts its
            // count of step-ups anew (another brand, another day).
            oauth::scope_sufficed(&self.url);
            return answer;
        }
        if !self.client.unauthorized.load(Ordering::Relaxed) {
            return answer;
        }
        let Some(renewal) = self.client.http.renewal().cloned() else {
            return answer;
        };
        let renewed = renewal.renewed().await;
        let Some(http) = renewed.http else {
            let mut answer = answer;
            let reason = if renewed.event["outcome"] == "expired" {
                crate::credentials::TokenError::EXPIRED
            } else {
                crate::credentials::TokenError::REASON
            };
            answer.result = Err(McpFailure::Upstream(reason.to_string()));
            answer.renewals.push(renewed.event);
            return answer;
        };
        let fresh = self.renewed_on(http);
        let mut again = fresh.call_once(tool, args, deadline).await;
        fresh.close().await;
        let mut exchanges = answer.exchanges;
        exchanges.append(&mut again.exchanges);
        again.exchanges = exchanges;
        again.renewals.insert(0, renewed.event);
        again
    }
}

impl Upstream {
    /// The same upstream over `http` (a renewed credential), not yet connected.
    fn renewed_on(&self, http: Arc<HttpCapability>) -> Upstream {
        let standalone = Arc::<transport::Standalone>::default();
        Upstream {
            // Its one call through rmcp, as before the host spoke directly.
            direct: false,
            standalone_task: Mutex::default(),
            server: self.server.clone(),
            // Closed once its one call ends: neither traced nor swept.
            owner: None,
            used_ms: clock_ms().into(),
            closed_idle: Mutex::default(),
            trace: self.trace.clone(),
            client: transport::GuardedClient {
                unauthorized: Default::default(),
                scope_needed: Default::default(),
                http,
                path: self.client.path.clone(),
                exchanges: Default::default(),
                standalone: standalone.clone(),
            },
            url: self.url.clone(),
            handler: client::HostClient {
                refused: Default::default(),
                asked: Default::default(),
                standalone,
                ..self.handler.clone()
            },
            service: Default::default(),
            legacy_opened: self.legacy_opened.as_ref().map(|_| Mutex::default()),
        }
    }

    /// Sends `request` on the running session `service` until `deadline`:
    /// by the call's own task once rmcp has opened the session
    /// ([`direct`]), else through rmcp's service; `relay` hears its notices.
    /// The exchanges it made, and what came of it.
    async fn exchange(
        &self,
        mut service: Running,
        request: ClientRequest,
        relay: Option<Arc<relay::CallRelay>>,
        deadline: Instant,
    ) -> (Vec<crate::capabilities::http::HttpExchange>, Outcome) {
        // The session's standalone stream, open while the call is in flight.
        let _in_flight = self.client.standalone.begin();
        if let Running::Direct(opened) = &service {
            self.read_standalone(opened);
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        self.client
            .standalone
            .ready(remaining.min(transport::STANDALONE_WAIT))
            .await;
        let mut earlier = Vec::new();
        let mut sent_again = false;
        loop {
            let opened = match &service {
                Running::Direct(opened) => opened.clone(),
                Running::Rmcp(service) => {
                    let (mut exchanges, outcome) =
                        self.through_rmcp(service, request, relay, deadline).await;
                    earlier.append(&mut exchanges);
                    return (earlier, outcome);
                }
            };
            let id = direct::next_id();
            let mut sent = request.clone();
            // Registered before the request is sent; withdrawn when it ends.
            let _relayed = relay.clone().map(|relay| {
                let token = rmcp::model::ProgressToken(id.clone());
                rmcp::model::GetMeta::get_meta_mut(&mut sent).set_progress_token(token.clone());
                let (ticket, relayed) = notices::ticket(relay, &self.client.http);
                ticket.register(&self.handler.relays, token);
                relayed
            });
            let uri: Arc<str> = self.url.as_str().into();
            let answered = direct::Exchange {
                client: &self.client,
                handler: &self.handler,
                opened: &opened,
                uri: &uri,
            }
            .request(sent, id.clone(), deadline)
            .await;
            let mut exchanges = self.client.exchanges.take(&id.to_string());
            exchanges.extend(self.client.exchanges.take(transport::STANDALONE_RECORD));
            earlier.append(&mut exchanges);
            let outcome = match answered {
                direct::Answered::Result(result) => Outcome::Answer(result),
                direct::Answered::Refused(error) => Outcome::Refused(error.message.to_string()),
                direct::Answered::Deadline => Outcome::Deadline,
                direct::Answered::Failed(why) => Outcome::Failed(
                    // The host's words where the exchange failed.
                    earlier
                        .iter()
                        .rev()
                        .find_map(|e| e.error.clone())
                        .unwrap_or(why),
                ),
                direct::Answered::Expired if !sent_again => {
                    sent_again = true;
                    // The server no longer knows the session: a request
                    // answered 404 ran nothing, so it is sent once more on
                    // a new one.
                    self.expire(&service).await;
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    match tokio::time::timeout(remaining, self.connected()).await {
                        Ok(Ok(fresh)) => {
                            if let Running::Direct(opened) = &fresh {
                                self.read_standalone(opened);
                            }
                            service = fresh;
                            continue;
                        }
                        Ok(Err(why)) => Outcome::Failed(why),
                        Err(_) => Outcome::Deadline,
                    }
                }
                direct::Answered::Expired => Outcome::Failed(
                    "the server ended the MCP session, and the one opened again".into(),
                ),
            };
            return (earlier, outcome);
        }
    }

    /// [`Upstream::exchange`] through rmcp's service.
    async fn through_rmcp(
        &self,
        service: &RunningService<RoleClient, client::HostClient>,
        mut request: ClientRequest,
        relay: Option<Arc<relay::CallRelay>>,
        deadline: Instant,
    ) -> (Vec<crate::capabilities::http::HttpExchange>, Outcome) {
        // Registered as the request is sent; withdrawn when the call ends.
        let _relayed = relay.map(|relay| {
            let (ticket, relayed) = notices::ticket(relay, &self.client.http);
            rmcp::model::GetExtensions::extensions_mut(&mut request).insert(ticket);
            relayed
        });
        let remaining = deadline.saturating_duration_since(Instant::now());
        let options = PeerRequestOptions::with_timeout(remaining.max(Duration::from_millis(1)));
        let handle = match service
            .peer()
            .send_cancellable_request(request, options)
            .await
        {
            Ok(handle) => handle,
            Err(e) => {
                return (
                    Vec::new(),
                    Outcome::Failed(format!("the request could not be sent: {e}")),
                );
            }
        };
        let id = handle.id.to_string();
        let answered = handle.await_response().await;
        let mut exchanges = self.client.exchanges.take(&id);
        exchanges.extend(self.client.exchanges.take(transport::STANDALONE_RECORD));
        // Why the exchange failed, in the host's words, where it did (the
        // transport reports only that it closed).
        let failed = exchanges.iter().rev().find_map(|e| e.error.clone());
        let outcome = match answered {
            Ok(result) => Outcome::Answer(result),
            Err(ServiceError::Timeout { .. }) => Outcome::Deadline,
            Err(ServiceError::McpError(e)) => Outcome::Refused(e.message.to_string()),
            Err(e) => Outcome::Failed(failed.unwrap_or_else(|| e.to_string())),
        };
        (exchanges, outcome)
    }

    /// Ends `service`, the session the server no longer knows, where it is
    /// still this upstream's: the next connection opens a new one.
    async fn expire(&self, service: &Running) {
        let mut current = self.service.lock().await;
        let same = match (current.as_ref(), service) {
            (Some(Running::Direct(a)), Running::Direct(b)) => Arc::ptr_eq(a, b),
            (Some(Running::Rmcp(a)), Running::Rmcp(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        if same && let Some(old) = current.take() {
            self.ended(old);
        }
    }

    async fn call_once(&self, tool: &str, args: &Value, deadline: Instant) -> McpAnswer {
        let started = Instant::now();
        let remaining = deadline.saturating_duration_since(started);
        let connect = tokio::time::timeout(remaining, self.connected()).await;
        let service = match connect {
            Err(_) => {
                return McpAnswer {
                    result: Err(McpFailure::Deadline),
                    exchanges: Vec::new(),
                    asked: Vec::new(),
                    renewals: Vec::new(),
                };
            }
            Ok(Err(why)) => {
                return McpAnswer {
                    result: Err(McpFailure::Upstream(why)),
                    exchanges: Vec::new(),
                    asked: Vec::new(),
                    renewals: Vec::new(),
                };
            }
            Ok(Ok(service)) => service,
        };
        let mut params = rmcp::model::CallToolRequestParams::new(tool.to_string());
        params.arguments = args.as_object().cloned();
        // Its progress and log messages, to its client where it asked.
        let relay = relay::for_request(&mut params);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let (exchanges, outcome) = self.exchange(service, request, relay, deadline).await;
        self.touch();
        let result = match outcome {
            Outcome::Answer(ServerResult::CallToolResult(result)) => serde_json::to_value(&result)
                .map_err(|e| McpFailure::Upstream(format!("the result cannot be read: {e}"))),
            Outcome::Answer(_) => Err(McpFailure::Upstream(
                "the server answered tools/call with something other than a tool result".into(),
            )),
            Outcome::Deadline => Err(McpFailure::Deadline),
            Outcome::Refused(message) => Err(McpFailure::Upstream(
                self.scrubbed(&format!("the server refused the call: {message}")),
            )),
            Outcome::Failed(why) => Err(McpFailure::Upstream(self.scrubbed(&why))),
        };
        let asked = std::mem::take(&mut *self.handler.asked.lock());
        McpAnswer {
            result,
            exchanges,
            asked,
            renewals: Vec::new(),
        }
    }
}
