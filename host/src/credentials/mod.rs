//! Whose credentials a session uses (DESIGN D4, seed 000).
//!
//! Per brand and connection, in the seed's order:
//! 1. the brand's own stored, enabled connection;
//! 2. a stored, enabled connection the account owner shares with that brand
//!    (only while the share stands; a share lends the stored connection,
//!    never the owner's host environment);
//! 3. for the deployment owner's own brand only, the host environment (the
//!    variable named by [`ResolverConfig::host_env`]). No other brand ever
//!    inherits it, whatever the environment holds.
//!
//! The four Google products (`googleads`, `searchconsole`, `analytics`,
//! `sheets`) share one connection, [`GOOGLE`], whose sealed secret carries the
//! token and the OAuth scopes it was granted ([`GoogleConnection`]). A Google
//! server resolves only when that credential holds its product's scope, and a
//! grant narrows the Google credential to the scopes of the granted products:
//! a narrowing never adds a scope the stored credential lacks.
//!
//! [`Resolver::credential_set_for`] is what a session is handed: nothing for a
//! plain coworker, the goal reviewer or a read-only route; AgentMail's
//! credential only for an inbound email turn; the granted connectors' for a
//! specialist or goal agent; every connector the brand can resolve for person
//! chat. [`Resolver::brand_facts`] feeds the registration filter.
//!
//! A stored connection holds either the secret an upstream takes (a static
//! token, or for Google a token with its scopes) or a [`TokenSource`]: an
//! OAuth refresh-token grant, a client-credentials grant or a token broker's
//! connection, from which the host obtains and renews access tokens itself
//! ([`tokens`]), only for a call the policy allowed. A broker connection
//! resolves only where the deployment configures the broker.
//!
//! No type here prints a secret: [`Secret`], [`Credential`],
//! [`CredentialSet`] and [`TokenSource`] have hand-written `Debug`s.
//!
//! Left to the caller: deciding who may call `share_connection` (the admin
//! API asks for the admin role over both brands: `serve/admin/connections.rs`).

pub mod tokens;
pub use tokens::{TokenError, TokenEvent, TokenRequest, TokenSource, Tokens};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::capabilities::http::{CredentialConfig, CredentialScheme, HttpConfig, SecretSource};
use crate::policy::{BrandFacts, Catalog, Grant, Role, Route};
use crate::store::{ConnectionStore, StoreError};

/// The connection key the four Google products share.
pub const GOOGLE: &str = "google";

/// The AgentMail server, the only connector of an inbound email turn.
pub const AGENTMAIL: &str = "agentmail";

/// A Google product a grant can name, by its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoogleProduct {
    Ads,
    SearchConsole,
    Analytics,
    Sheets,
}

impl GoogleProduct {
    /// Every Google product.
    pub const ALL: [GoogleProduct; 4] = [
        GoogleProduct::Ads,
        GoogleProduct::SearchConsole,
        GoogleProduct::Analytics,
        GoogleProduct::Sheets,
    ];

    /// The server name of the product's connector.
    pub fn server(self) -> &'static str {
        match self {
            GoogleProduct::Ads => "googleads",
            GoogleProduct::SearchConsole => "searchconsole",
            GoogleProduct::Analytics => "analytics",
            GoogleProduct::Sheets => "sheets",
        }
    }

    /// The Google OAuth scope the product's tools need. Sheets uses
    /// `drive.file`: the app works on the spreadsheets it creates.
    pub fn scope(self) -> &'static str {
        match self {
            GoogleProduct::Ads => "https://www.googleapis.com/auth/adwords",
            GoogleProduct::SearchConsole => "https://www.googleapis.com/auth/webmasters.readonly",
            GoogleProduct::Analytics => "https://www.googleapis.com/auth/analytics.readonly",
            GoogleProduct::Sheets => "https://www.googleapis.com/auth/drive.file",
        }
    }

    /// The product served by `server`, if it is a Google one.
    pub fn from_server(server: &str) -> Option<GoogleProduct> {
        GoogleProduct::ALL
            .into_iter()
            .find(|p| p.server() == server)
    }
}

/// The connection (the key credentials are stored and shared under) a server
/// uses: [`GOOGLE`] for the Google products, the server's own name otherwise.
pub fn connection_for_server(server: &str) -> &str {
    if GoogleProduct::from_server(server).is_some() {
        GOOGLE
    } else {
        server
    }
}

/// The token source a deployment configures for `server`'s connection, as
/// the permissions page states it (`scout-host docs`). Every connection
/// takes any source the admin API accepts; this is the one the upstream's
/// own documentation describes.
pub fn token_source_note(server: &str) -> &'static str {
    match server {
        "googleads" | "searchconsole" | "analytics" | "sheets" => {
            "the shared `google` connection: `oauth` (a refresh token exchanged at Google's token endpoint; each token asks only for the scopes of the products the session holds, never more than were stored), or a stored token with its `scopes`"
        }
        "tailscale" => {
            "`client_credentials` (a Tailscale OAuth client; its scopes must all be read scopes), or a stored API access token"
        }
        "figma" => {
            "`broker`: the connection's current access token from Nango, with the deployment's `NANGO_SECRET_KEY` (without it Figma is never offered)"
        }
        "microsoftads" => {
            "`oauth` (a Microsoft identity platform refresh token), with the deployment's `MICROSOFT_ADS_DEVELOPER_TOKEN` header"
        }
        _ => "a stored secret (`secret`), injected as configured",
    }
}

/// The scopes of `products` that `stored` holds: a narrowing never adds a
/// scope the stored credential lacks.
pub fn narrow_scopes(
    stored: &BTreeSet<String>,
    products: impl IntoIterator<Item = GoogleProduct>,
) -> BTreeSet<String> {
    products
        .into_iter()
        .map(GoogleProduct::scope)
        .filter(|s| stored.contains(*s))
        .map(str::to_owned)
        .collect()
}

/// A secret value. Its `Debug` and the `Debug` of everything holding it
/// print `[REDACTED]`; read it with [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself, for injecting into a request.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// What a stored Google connection seals: the token and the scopes it was
/// granted. Write it with [`GoogleConnection::encode`] into `put_connection`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoogleConnection {
    pub token: String,
    pub scopes: BTreeSet<String>,
}

impl GoogleConnection {
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(
        token: impl Into<String>,
        scopes: I,
    ) -> GoogleConnection {
        GoogleConnection {
            token: token.into(),
            scopes: scopes.into_iter().map(Into::into).collect(),
        }
    }

    /// The string to seal with `Store::put_connection(brand, GOOGLE, ..)`.
    pub fn encode(&self) -> String {
        // A struct of a string and a set of strings always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    fn decode(sealed: &str) -> Result<GoogleConnection, StoreError> {
        serde_json::from_str(sealed).map_err(|_| {
            StoreError::Corrupt("stored Google connection is not a token with scopes".into())
        })
    }
}

impl fmt::Debug for GoogleConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GoogleConnection")
            .field("token", &"[REDACTED]")
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// Where a credential came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The brand's own stored connection.
    Own,
    /// A stored connection `owner_brand` shares with the brand.
    SharedByOwner { owner_brand: String },
    /// The host environment (deployment owner's brand only).
    HostEnvironment,
    /// None is needed: the operator declared the API public
    /// (`credential = "none"`); nothing is injected.
    NoneNeeded,
}

/// One resolved credential.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    connection: String,
    source: Source,
    secret: Secret,
    /// `Some` for the Google connection: the scopes this credential carries.
    scopes: Option<BTreeSet<String>>,
    /// Where the host obtains the access token, when `secret` is not it
    /// (`secret` is then empty).
    token_source: Option<std::sync::Arc<TokenSource>>,
}

impl Credential {
    /// The connection key (`github`, [`GOOGLE`], ...).
    pub fn connection(&self) -> &str {
        &self.connection
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    pub fn secret(&self) -> &Secret {
        &self.secret
    }

    /// The source the host obtains this credential's access tokens from,
    /// if it is not a stored token.
    pub fn token_source(&self) -> Option<&TokenSource> {
        self.token_source.as_deref()
    }

    /// A public API's: there is no secret to inject.
    pub fn is_none_needed(&self) -> bool {
        self.source == Source::NoneNeeded
    }

    /// The OAuth scopes, for a Google credential.
    pub fn scopes(&self) -> Option<&BTreeSet<String>> {
        self.scopes.as_ref()
    }

    /// This Google credential narrowed to `products`' scopes (only those it
    /// holds), or `None` if none is left or this is not a Google credential.
    pub fn narrowed(
        &self,
        products: impl IntoIterator<Item = GoogleProduct>,
    ) -> Option<Credential> {
        let scopes = narrow_scopes(self.scopes.as_ref()?, products);
        if scopes.is_empty() {
            return None;
        }
        Some(Credential {
            scopes: Some(scopes),
            ..self.clone()
        })
    }

    fn has_scope(&self, product: GoogleProduct) -> bool {
        self.scopes
            .as_ref()
            .is_some_and(|s| s.contains(product.scope()))
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Credential");
        d.field("connection", &self.connection)
            .field("source", &self.source)
            .field("secret", &self.secret);
        if let Some(scopes) = &self.scopes {
            d.field("scopes", scopes);
        }
        if let Some(source) = &self.token_source {
            d.field("token_source", &source.kind());
        }
        d.finish()
    }
}

/// The HTTP handle configuration injecting `credential` with `scheme` into
/// every request to `origin` (default limits).
pub fn to_http_config(
    credential: &Credential,
    origin: impl Into<String>,
    scheme: CredentialScheme,
) -> HttpConfig {
    let mut config = HttpConfig::new(origin);
    config.credential = Some(CredentialConfig {
        scheme,
        secret: SecretSource::Value(credential.secret.expose().to_owned()),
    });
    config
}

/// The credentials handed to one session, by server name. Every Google
/// server in the set holds the same Google credential, narrowed.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CredentialSet {
    by_server: BTreeMap<String, Credential>,
}

impl CredentialSet {
    pub fn is_empty(&self) -> bool {
        self.by_server.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_server.len()
    }

    /// The servers that have a credential (these, and only these, register).
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.by_server.keys().map(String::as_str)
    }

    /// The credential for `server`.
    pub fn get(&self, server: &str) -> Option<&Credential> {
        self.by_server.get(server)
    }

    /// The Google credential the session is handed, if any.
    pub fn google(&self) -> Option<&Credential> {
        GoogleProduct::ALL
            .into_iter()
            .find_map(|p| self.by_server.get(p.server()))
    }

    /// The servers with a credential, as `BrandFacts::connected` takes them.
    pub fn connected(&self) -> BTreeSet<String> {
        self.by_server.keys().cloned().collect()
    }
}

impl fmt::Debug for CredentialSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.by_server.iter()).finish()
    }
}

/// The host's part of resolution.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolverConfig {
    /// The deployment owner's own brand: the only one the host environment serves.
    pub deployment_owner_brand: Option<String>,
    /// Connection key to the host environment variable holding its secret
    /// (`github` → `GITHUB_TOKEN`, [`GOOGLE`] → a token variable, ...).
    pub host_env: BTreeMap<String, String>,
    /// The scopes of the Google token in the host environment.
    pub host_env_google_scopes: BTreeSet<String>,
    /// Connections to public APIs (`credential = "none"`): they resolve for
    /// every brand, to a credential that carries no secret.
    pub public: BTreeSet<String>,
    /// The deployment configures a token broker: only then does a broker
    /// connection resolve.
    #[serde(default)]
    pub broker: bool,
}

type EnvLookup<'a> = Box<dyn Fn(&str) -> Option<String> + Send + Sync + 'a>;

/// Each (brand, server)'s resolved credential, `None` where none resolves.
type Resolutions = HashMap<(String, String), Option<Credential>>;

/// Resolves credentials for brands against one store, catalogue and config.
pub struct Resolver<'a> {
    store: &'a dyn ConnectionStore,
    catalog: &'a Catalog,
    config: &'a ResolverConfig,
    key: [u8; 32],
    env: EnvLookup<'a>,
}

/// Credentials as they last resolved, per (brand, server), for a host that
/// changes connections only through itself (`serve`).
///
/// Resolving opens a sealed connection: a SQLite read and a
/// ChaCha20-Poly1305 decryption, and a call needs one answer per connector
/// its session holds (the policy's registration filter) and one per HTTP
/// handle. With this cache a call resolves each at most once, and usually
/// not at all. Whoever changes a connection (stores, disables, shares or
/// unshares it) calls [`ResolutionCache::invalidate`] after the store
/// committed the change and before answering: the next call resolves afresh.
/// A resolution that raced an invalidation is not kept. Errors are never
/// cached.
#[derive(Default)]
pub struct ResolutionCache {
    resolved: parking_lot::RwLock<(u64, Resolutions)>,
}

impl ResolutionCache {
    /// [`Resolver::resolve_server`], answered from the cache when it can be
    /// (`resolver` is built only when it cannot).
    pub fn resolve_server<'r>(
        &self,
        resolver: impl FnOnce() -> Resolver<'r>,
        brand: &str,
        server: &str,
    ) -> Result<Option<Credential>, StoreError> {
        let key = (brand.to_string(), server.to_string());
        let generation = {
            let cache = self.resolved.read();
            if let Some(found) = cache.1.get(&key) {
                return Ok(found.clone());
            }
            cache.0
        };
        let found = resolver().resolve_server(brand, server)?;
        let mut cache = self.resolved.write();
        if cache.0 == generation {
            cache.1.insert(key, found.clone());
        }
        Ok(found)
    }

    /// Forgets every resolution: a connection changed.
    pub fn invalidate(&self) {
        let mut cache = self.resolved.write();
        cache.0 += 1;
        cache.1.clear();
    }
}

/// Reads the host process's environment (for [`Resolver::new`]).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl<'a> Resolver<'a> {
    /// `key` opens the sealed connections; `env` looks a host environment
    /// variable up (pass [`process_env`] in the host, a map in tests).
    pub fn new(
        store: &'a dyn ConnectionStore,
        catalog: &'a Catalog,
        config: &'a ResolverConfig,
        key: [u8; 32],
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'a,
    ) -> Resolver<'a> {
        Resolver {
            store,
            catalog,
            config,
            key,
            env: Box::new(env),
        }
    }

    fn is_deployment_owner(&self, brand: &str) -> bool {
        self.config.deployment_owner_brand.as_deref() == Some(brand)
    }

    /// Resolves one connection (`github`, [`GOOGLE`], ...) for `brand` in the
    /// seed's order, afresh from the store each time.
    pub fn resolve(&self, brand: &str, connection: &str) -> Result<Option<Credential>, StoreError> {
        if self.config.public.contains(connection) {
            return Ok(Some(Credential {
                connection: connection.to_owned(),
                source: Source::NoneNeeded,
                secret: Secret(String::new()),
                scopes: None,
                token_source: None,
            }));
        }
        let found =
            match crate::store::block(self.store.get_connection(brand, connection, &self.key))? {
                Some(sealed) => Some((Source::Own, sealed)),
                None => self.shared(brand, connection)?,
            };
        let found = match found {
            Some(found) => Some(found),
            None if self.is_deployment_owner(brand) => self
                .config
                .host_env
                .get(connection)
                .and_then(|var| (self.env)(var))
                .filter(|v| !v.is_empty())
                .map(|v| (Source::HostEnvironment, v)),
            None => None,
        };
        let Some((source, value)) = found else {
            return Ok(None);
        };
        let connection = connection.to_owned();
        // A stored token source: the host obtains the token at each call.
        if !matches!(source, Source::HostEnvironment)
            && let Some(token_source) = TokenSource::from_sealed(&value)
        {
            let token_source = token_source.map_err(|e| StoreError::Corrupt(e.to_string()))?;
            if matches!(token_source, TokenSource::Broker(_)) && !self.config.broker {
                return Ok(None);
            }
            return Ok(Some(Credential {
                scopes: (connection == GOOGLE).then(|| token_source.scopes().clone()),
                connection,
                source,
                secret: Secret(String::new()),
                token_source: Some(std::sync::Arc::new(token_source)),
            }));
        }
        if connection != GOOGLE {
            return Ok(Some(Credential {
                connection,
                source,
                secret: Secret(value),
                scopes: None,
                token_source: None,
            }));
        }
        let google = match source {
            Source::HostEnvironment => GoogleConnection {
                token: value,
                scopes: self.config.host_env_google_scopes.clone(),
            },
            _ => GoogleConnection::decode(&value)?,
        };
        Ok(Some(Credential {
            connection,
            source,
            secret: Secret(google.token),
            scopes: Some(google.scopes),
            token_source: None,
        }))
    }

    fn shared(
        &self,
        brand: &str,
        connection: &str,
    ) -> Result<Option<(Source, String)>, StoreError> {
        for owner in crate::store::block(self.store.shared_with(brand, connection))? {
            if owner == brand {
                continue;
            }
            if let Some(sealed) =
                crate::store::block(self.store.get_connection(&owner, connection, &self.key))?
            {
                return Ok(Some((Source::SharedByOwner { owner_brand: owner }, sealed)));
            }
        }
        Ok(None)
    }

    /// The credential for one server of the catalogue: a Google product's is
    /// the Google credential narrowed to that product, and only if it holds
    /// its scope. A server the catalogue does not offer never resolves.
    pub fn resolve_server(
        &self,
        brand: &str,
        server: &str,
    ) -> Result<Option<Credential>, StoreError> {
        if self.catalog.connector(server).is_none() {
            return Ok(None);
        }
        let credential = self.resolve(brand, connection_for_server(server))?;
        Ok(match GoogleProduct::from_server(server) {
            Some(product) => credential.and_then(|c| c.narrowed([product])),
            None => credential,
        })
    }

    /// The catalogue's servers whose credentials resolve for `brand`.
    pub fn connected(&self, brand: &str) -> Result<BTreeSet<String>, StoreError> {
        Ok(self.all_for(brand)?.connected())
    }

    /// The brand's facts as far as credentials go: `connected` (the
    /// registration filter's input) and whether it is the deployment owner's.
    /// The rest is left at its default for the caller to fill in.
    pub fn brand_facts(&self, brand: &str) -> Result<BrandFacts, StoreError> {
        Ok(BrandFacts {
            connected: self.connected(brand)?,
            is_deployment_owner: self.is_deployment_owner(brand),
            ..BrandFacts::default()
        })
    }

    /// Every catalogue server `brand` can resolve; the Google credential unnarrowed.
    fn all_for(&self, brand: &str) -> Result<CredentialSet, StoreError> {
        let mut set = CredentialSet::default();
        let mut google: Option<Option<Credential>> = None;
        for spec in self.catalog.connectors() {
            let server = spec.name.as_str();
            let credential = match GoogleProduct::from_server(server) {
                Some(product) => {
                    if google.is_none() {
                        google = Some(self.resolve(brand, GOOGLE)?);
                    }
                    google
                        .as_ref()
                        .and_then(Option::as_ref)
                        .filter(|c| c.has_scope(product))
                        .cloned()
                }
                None => self.resolve(brand, server)?,
            };
            if let Some(credential) = credential {
                set.by_server.insert(server.to_owned(), credential);
            }
        }
        Ok(set)
    }

    /// The credential set a session of `role` for `brand` is handed. `grant`
    /// is the profile's grant (specialist and goal agent; ignored otherwise).
    pub fn credential_set_for(
        &self,
        role: Role,
        grant: Option<&Grant>,
        brand: &str,
    ) -> Result<CredentialSet, StoreError> {
        match role {
            Role::PersonChat => self.all_for(brand),
            Role::InboundEmailTurn => {
                let mut set = CredentialSet::default();
                if let Some(c) = self.resolve_server(brand, AGENTMAIL)? {
                    set.by_server.insert(AGENTMAIL.to_owned(), c);
                }
                Ok(set)
            }
            Role::SpecialistRun {
                route: Route::Standard,
            }
            | Role::GoalAgentStep => match grant {
                Some(grant) => self.granted(brand, grant),
                None => Ok(CredentialSet::default()),
            },
            // A plain coworker, a specialist on a read-only route (no grant
            // tool is added there), the reviewer and a read-only route.
            Role::CoworkerRun { .. }
            | Role::SpecialistRun {
                route: Route::ReadOnly,
            }
            | Role::GoalReviewer
            | Role::ReadOnlyRoute { .. } => Ok(CredentialSet::default()),
        }
    }

    fn granted(&self, brand: &str, grant: &Grant) -> Result<CredentialSet, StoreError> {
        let mut set = CredentialSet::default();
        let products: BTreeSet<GoogleProduct> = grant
            .connectors
            .iter()
            .filter(|c| self.catalog.connector(c).is_some())
            .filter_map(|c| GoogleProduct::from_server(c))
            .collect();
        let google = if products.is_empty() {
            None
        } else {
            self.resolve(brand, GOOGLE)?
                .and_then(|c| c.narrowed(products.iter().copied()))
        };
        for server in &grant.connectors {
            let credential = match GoogleProduct::from_server(server) {
                Some(product) => {
                    if self.catalog.connector(server).is_none() {
                        None
                    } else {
                        google.as_ref().filter(|c| c.has_scope(product)).cloned()
                    }
                }
                None => self.resolve_server(brand, server)?,
            };
            if let Some(credential) = credential {
                set.by_server.insert(server.clone(), credential);
            }
        }
        Ok(set)
    }
}
