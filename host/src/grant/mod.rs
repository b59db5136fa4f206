//! Granting, in Spin's shape: what one call the boundary authorized is
//! given, a module per capability: its HTTP clients with the brand's
//! credential injected ([`http`]), the access tokens the host obtains for
//! them ([`tokens`]), the run's meter ([`meter`]), the session's folders
//! ([`folder`]) and a remote server's upstream MCP session ([`mcp`]). Each
//! is configured once, when the host starts ([`Grants::new`]), and
//! prepared per call from the tool the call resolved ([`SessionGranter`]).
//! A call the boundary refused is granted nothing: no handle is built, no
//! credential resolved, no run started. Kept apart from the HTTP handlers
//! so that what a call can touch is read in one place.

mod folder;
mod http;
mod mcp;
mod meter;
mod tokens;

pub(crate) use folder::rights as folder_rights;
pub(crate) use tokens::Obtained;

use crate::boundary::{Authorized, Boundary, Granter, Session};
use crate::capabilities::Capabilities;
use crate::capabilities::http::HttpCapability;
use crate::credentials::{Credential, ResolutionCache, Resolver, process_env};
use crate::deployment::{HttpPrepared, Roster, SharedRoster};
use crate::runtime::LoadedComponent;
use crate::store::{LedgerStore, Store, StoreError};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the grants are configured with, once, at the host's start.
pub(crate) struct GrantsConfig {
    pub store: Arc<dyn Store>,
    /// The store's ledger, as the meters take it.
    pub ledger: Arc<dyn LedgerStore>,
    /// The store key connections are sealed with.
    pub key: [u8; 32],
    /// Connections as they last resolved (shared with the host, which drops
    /// them whenever it changes one).
    pub resolutions: Arc<ResolutionCache>,
    /// Access tokens the host obtains (OAuth, the broker), cached.
    pub tokens: Arc<crate::credentials::Tokens>,
    /// The connectors as served now (replaced whole at a runtime change).
    pub roster: SharedRoster,
    /// Whose catalogue credential resolution decides with.
    pub boundary: Arc<Boundary>,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The remote MCP servers among the connectors, as served now.
    pub remote: crate::deployments::SharedRemote,
}

/// Every capability a call can be granted, each configured once.
pub(crate) struct Grants {
    credentials: Credentials,
    http: http::HttpGrant,
    tokens: tokens::TokenGrant,
    meter: meter::MeterGrant,
    folder: folder::FolderGrant,
    mcp: mcp::McpGrant,
    /// Calls granted handles: only calls the boundary authorized.
    granted: AtomicU64,
}

impl Grants {
    pub(crate) fn new(config: GrantsConfig) -> Grants {
        let GrantsConfig {
            store,
            ledger,
            key,
            resolutions,
            tokens,
            roster,
            boundary,
            metrics,
            remote,
        } = config;
        Grants {
            tokens: tokens::TokenGrant::new(
                tokens,
                store.clone(),
                key,
                resolutions.clone(),
                roster.clone(),
            ),
            credentials: Credentials {
                store,
                key,
                resolutions,
                roster,
                boundary,
            },
            http: http::HttpGrant::default(),
            meter: meter::MeterGrant { ledger, metrics },
            folder: folder::FolderGrant,
            mcp: mcp::McpGrant { remote },
            granted: AtomicU64::new(0),
        }
    }

    /// The store's ledger, as the meters take it.
    pub(crate) fn ledger(&self) -> &Arc<dyn LedgerStore> {
        &self.meter.ledger
    }

    /// How many calls were granted handles. A call the boundary refuses is
    /// never granted any: no handle is built, no credential resolved for
    /// it, no run started.
    pub(crate) fn granted(&self) -> u64 {
        self.granted.load(Ordering::Relaxed)
    }

    /// The handles for one call: the HTTP client bound to the connector's
    /// origin with the brand's credential as it resolves now; the session's
    /// run meter and folders, where the component imports them and the
    /// session holds them ([`crate::session::holdings`]). No credential, no
    /// handle at all: the boundary denies the call before it runs.
    fn prepare(
        &self,
        call: &SessionGranter<'_>,
        authorized: &Authorized<'_>,
        obtained: Obtained,
    ) -> Capabilities {
        self.granted.fetch_add(1, Ordering::Relaxed);
        let component = call.component;
        let connector = component.name();
        let session = call.session;
        let roster = self.credentials.roster();
        let (Some(settings), Some(prepared)) =
            (roster.settings.get(connector), roster.http.get(connector))
        else {
            return Capabilities::default();
        };
        let mut caps = Capabilities {
            credential_events: obtained.events().to_vec(),
            ..Capabilities::default()
        };
        // A connector that does not import `http` gets no client (a folder-
        // only connector still gets its folders).
        if component.imports_interface("http") {
            match self.http.prepare(
                http::HttpCall {
                    credentials: &self.credentials,
                    tokens: &self.tokens,
                    roster: &roster,
                    brand: &session.brand,
                    connector,
                    prepared,
                    reads_from: &authorized.called().reads_from,
                    registered: call.registered,
                    obtained: &obtained,
                },
                &mut caps,
            ) {
                http::Prepared::Granted => {}
                // The host could not obtain the credential: the guest is
                // told so, and nothing is sent.
                http::Prepared::Refused => return caps,
                // No credential for its own origin: no handle at all, and
                // the boundary denies the call before it runs.
                http::Prepared::Nothing => return Capabilities::default(),
            }
        }
        // The run starts at the first call the boundary allows: this one.
        if component.imports_interface("meter") {
            caps.meter = self.meter.prepare(session, connector);
        }
        if component.imports_interface("folder") {
            caps.folders = self.folder.prepare(session, connector, settings);
        }
        caps.mcp = self
            .mcp
            .prepare(&session.id, &session.brand, connector, caps.http.as_ref());
        caps.graphql_mutations = authorized.may_mutate();
        caps.fence = Some(self.credentials.fence(session));
        caps
    }

    /// Obtains `server`'s access token for `brand` into `obtained`, where
    /// its credential is one the host obtains (discovery's, outside a call).
    pub(crate) async fn obtain_token(&self, brand: &str, server: &str, obtained: &mut Obtained) {
        self.tokens
            .obtain(&self.credentials, brand, server, obtained)
            .await;
    }

    /// The HTTP client bound to `connector`'s origin with `brand`'s
    /// credential as it resolves now (discovery's, outside a call).
    pub(crate) fn http_capability(
        &self,
        brand: &str,
        connector: &str,
        prepared: &HttpPrepared,
        obtained: &Obtained,
    ) -> Option<Arc<HttpCapability>> {
        let roster = self.credentials.roster();
        self.http.capability(
            &self.credentials,
            &self.tokens,
            &roster,
            brand,
            connector,
            prepared,
            None,
            obtained,
        )
    }
}

/// Where a call's credentials resolve from: the store, through the host's
/// cache, under the catalogue and the roster as they are at that moment;
/// and whether the host may act on them (its lease).
struct Credentials {
    store: Arc<dyn Store>,
    key: [u8; 32],
    resolutions: Arc<ResolutionCache>,
    roster: SharedRoster,
    boundary: Arc<Boundary>,
}

impl Credentials {
    /// The connectors as served now.
    fn roster(&self) -> Arc<Roster> {
        self.roster.read().clone()
    }

    /// `server`'s credential for `brand` as it resolves now.
    fn resolve(&self, brand: &str, server: &str) -> Result<Option<Credential>, StoreError> {
        let catalog = self.boundary.catalog();
        let roster = self.roster();
        self.resolutions.resolve_server(
            || {
                Resolver::new(
                    &*self.store,
                    &catalog,
                    &roster.resolver,
                    self.key,
                    process_env,
                )
            },
            brand,
            server,
        )
    }

    /// Whether this host may start an effect for `session` at this moment:
    /// it holds its lease (in memory, against the deadline) under the
    /// identity the session was opened with.
    fn may_act(&self, session: &Session) -> bool {
        self.store.lease_held() && self.store.lease_generation() == session.generation()
    }

    /// [`Credentials::may_act`] for one call's handles, asked before each request.
    fn fence(&self, session: &Session) -> crate::capabilities::Fence {
        let store = self.store.clone();
        let generation = session.generation();
        Arc::new(move || store.lease_held() && store.lease_generation() == generation)
    }
}

/// The handles of one call of a live session, built once the boundary
/// has authorized it.
pub(crate) struct SessionGranter<'a> {
    pub(crate) grants: &'a Grants,
    pub(crate) session: &'a Session,
    /// The connectors the session is served (a joint tool reads those of
    /// its peers that are among them).
    pub(crate) registered: &'a [String],
    pub(crate) component: &'a LoadedComponent,
}

#[async_trait::async_trait]
impl Granter for SessionGranter<'_> {
    async fn grant(&self, call: &Authorized<'_>) -> Capabilities {
        let grants = self.grants;
        let obtained = if self.component.imports_interface("http") {
            grants
                .tokens
                .prepare(
                    &grants.credentials,
                    self.session,
                    self.component.name(),
                    &call.called().reads_from,
                    self.registered,
                )
                .await
        } else {
            Obtained::default()
        };
        grants.prepare(self, call, obtained)
    }
}

/// The hex SHA-256 of `text`: what a cached client remembers of its secret.
fn digest_hex(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}
