//! Granting: the handles one call of a session is given once the boundary
//! authorized it (its HTTP client bound to the connector's origin with the
//! brand's credential injected, its meters, folders and log), the access
//! tokens the host obtains for it, and their renewal after a 401. Kept
//! apart from the HTTP handlers so that what a call can touch is read in one
//! place.

use super::*;

impl ServeHost {
    /// The handles for one call: the HTTP client bound to the connector's
    /// origin with the brand's credential as it resolves now; the session's
    /// run meter and folders, where the component imports them and the
    /// session holds them ([`crate::session::holdings`]). No credential, no handle at
    /// all: the boundary denies the call before it runs.
    fn capabilities(
        &self,
        live: &LiveSession,
        component: &LoadedComponent,
        call: &Authorized<'_>,
        obtained: Obtained,
    ) -> Capabilities {
        self.grants
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let connector = component.name();
        let roster = self.roster();
        let (Some(settings), Some(prepared)) =
            (roster.settings.get(connector), roster.http.get(connector))
        else {
            return Capabilities::default();
        };
        let mut caps = Capabilities {
            credential_events: obtained.events.clone(),
            ..Capabilities::default()
        };
        // A connector that does not import `http` gets no client (a folder-
        // only connector still gets its folders).
        let brand = &live.session.brand;
        if component.imports_interface("http") {
            if prepared.origins.contains_key(&None) {
                if let Some(why) = obtained.refused(connector) {
                    // The host could not obtain the credential: the guest is
                    // told so, and nothing is sent.
                    caps.refused.insert(None, why.to_string());
                    return caps;
                }
                // No credential for its own origin: no handle at all, and the
                // boundary denies the call before it runs.
                let Some(http) = self.http_capability(brand, connector, prepared, None, &obtained)
                else {
                    return Capabilities::default();
                };
                caps.http = Some(http);
                for dest in prepared.origins.keys().flatten() {
                    if let Some(http) =
                        self.http_capability(brand, connector, prepared, Some(dest), &obtained)
                    {
                        caps.destinations.insert(dest.clone(), http);
                    }
                }
            }
            // A joint tool reads each connector it names that is live in
            // this session now, with that connector's origin and credential.
            for peer in &call.called().reads_from {
                // Registered for this session, and (in `http_capability`)
                // offered, with a credential that resolves now.
                let registered = live.connectors.iter().any(|c| c == peer);
                if let Some(why) = obtained.refused(peer) {
                    caps.refused.insert(Some(peer.clone()), why.to_string());
                    continue;
                }
                if let (true, Some(peer_http)) = (registered, roster.http.get(peer))
                    && let Some(http) =
                        self.http_capability(brand, peer, peer_http, None, &obtained)
                {
                    caps.destinations.insert(peer.clone(), http);
                }
            }
        }
        // The run starts at the first call the boundary allows: this one.
        if component.imports_interface("meter") {
            caps.meter = live
                .session
                .holdings()
                .and_then(|h| h.meter(&self.ledger, connector))
                .inspect(|meter| {
                    meter.observed_by(|| self.metrics.allowance_observer(connector, meter.unit()))
                });
        }
        if component.imports_interface("folder") {
            caps.folders = live
                .session
                .holdings()
                .map(|h| h.folders(connector, holdings_config(settings)))
                .unwrap_or_default();
        }
        // A remote MCP server is reached only through the session's
        // upstream MCP session, riding on the handle just built.
        if let (Some(server), Some(http)) = (self.remote.get(connector), &caps.http) {
            caps.mcp = Some(server.upstream(&live.session.id, http.clone()));
        }
        caps.graphql_mutations = call.may_mutate();
        caps.fence = Some(self.fence_for(&live.session));
        caps
    }

    /// Whether this host may start an effect for `session` at this moment:
    /// it holds its lease (in memory, against the deadline) under the
    /// identity the session was opened with.
    fn may_act(&self, session: &Session) -> bool {
        self.store.lease_held() && self.store.lease_generation() == session.generation()
    }

    /// [`ServeHost::may_act`] for one call's handles, asked before each request.
    fn fence_for(&self, session: &Session) -> crate::capabilities::Fence {
        let store = self.store.clone();
        let generation = session.generation();
        Arc::new(move || store.lease_held() && store.lease_generation() == generation)
    }

    /// Obtains the access tokens of the credentials `call` will use that the
    /// host fetches itself (OAuth, the broker): the connector's own and
    /// those of the peers a joint tool reads. Only ever for a call the
    /// boundary authorized; cached tokens cost nothing.
    async fn obtain_tokens(
        &self,
        live: &LiveSession,
        component: &LoadedComponent,
        call: &Authorized<'_>,
    ) -> Obtained {
        let mut obtained = Obtained::default();
        if !component.imports_interface("http") {
            return obtained;
        }
        let connector = component.name();
        let brand = &live.session.brand;
        let peers = call
            .called()
            .reads_from
            .iter()
            .filter(|p| live.connectors.iter().any(|c| c == *p));
        for server in std::iter::once(connector).chain(peers.map(String::as_str)) {
            // A token request is an effect on the brand's behalf: none
            // from a host that no longer holds its lease.
            if !self.may_act(&live.session) {
                if self.host_obtains_token(brand, server) {
                    obtained.tokens.insert(server.to_string(), Err(()));
                }
                continue;
            }
            self.obtain_token(brand, server, &mut obtained).await;
        }
        obtained
    }

    /// Whether `server`'s credential for `brand` is one the host obtains.
    fn host_obtains_token(&self, brand: &str, server: &str) -> bool {
        matches!(
            self.resolve_server(brand, server),
            Ok(Some(credential)) if credential.token_source().is_some()
        )
    }

    /// Obtains `server`'s access token for `brand` into `obtained`, where
    /// its credential is one the host obtains; a grant the endpoint
    /// rotated is kept in place of the stored one.
    pub(super) async fn obtain_token(&self, brand: &str, server: &str, obtained: &mut Obtained) {
        let Ok(Some(credential)) = self.resolve_server(brand, server) else {
            return;
        };
        let Some(source) = credential.token_source() else {
            return;
        };
        let no_scopes = BTreeSet::new();
        let request = crate::credentials::TokenRequest {
            brand,
            connector: server,
            source,
            scopes: credential.scopes().unwrap_or(&no_scopes),
            allow_private_network: self
                .config
                .connectors
                .get(server)
                .is_some_and(|c| c.allow_private_network),
        };
        let (token, mut event) = self.tokens.token(&request).await;
        if let (Some(next), Some(keeper)) = (event.rotated.take(), self.keeper(brand, &credential))
        {
            keeper.keep(source, &next);
        }
        if event.outcome != "cached" {
            obtained
                .events
                .push(serde_json::to_value(&event).unwrap_or_default());
        }
        obtained
            .tokens
            .insert(server.to_string(), token.map_err(|_| ()));
    }

    /// Where a grant rotated for `credential` (resolved for `brand`) is kept.
    fn keeper(
        &self,
        brand: &str,
        credential: &crate::credentials::Credential,
    ) -> Option<RotationKeeper> {
        use crate::credentials::Source;
        let row = match credential.source() {
            Source::Own => brand.to_string(),
            Source::SharedByOwner { owner_brand } => owner_brand.clone(),
            Source::HostEnvironment | Source::NoneNeeded => return None,
        };
        Some(RotationKeeper {
            store: self.store.clone(),
            key: self.key,
            resolutions: self.resolutions.clone(),
            brand: row,
            connection: credential.connection().to_string(),
        })
    }

    /// How many calls were granted handles. A call the boundary refuses is
    /// never granted any: no handle is built, no credential resolved for
    /// it, no run started.
    pub fn handles_granted(&self) -> u64 {
        self.grants.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether session `id` holds the configured folders, and may write
    /// them (the rule of [`crate::session::holdings`]), if it is open.
    pub fn folder_rights(&self, id: &str) -> Option<(bool, bool)> {
        self.session(id).map(|live| {
            live.session
                .holdings()
                .map_or((false, false), |h| h.folder_rights())
        })
    }

    /// The HTTP client bound to the connector's origin with the brand's
    /// credential as it resolves now. Clients are reused while the
    /// credential stays the same (connection reuse).
    /// `destination`: one of the connector's further `origins`, by name.
    pub(super) fn http_capability(
        &self,
        brand: &str,
        connector: &str,
        prepared: &crate::deployment::HttpPrepared,
        destination: Option<&str>,
        obtained: &Obtained,
    ) -> Option<Arc<HttpCapability>> {
        if self.roster().not_offered.contains_key(connector) {
            return None;
        }
        let (origin, sends_credential) = prepared
            .origins
            .get(&destination.map(str::to_string))
            .cloned()?;
        let credential = match self.resolve_server(brand, connector) {
            Ok(Some(credential)) => credential,
            // No credential: the boundary denies the call before it runs.
            _ => return None,
        };
        // A token the host obtained for this call, or the stored secret.
        let token = match credential.token_source() {
            Some(_) => Some(obtained.token(connector)?.clone()),
            None => None,
        };
        let secret = token.as_ref().unwrap_or(credential.secret());
        let secret_digest = hex::encode(digest(secret.expose()));
        let key = (
            brand.to_string(),
            match destination {
                None => connector.to_string(),
                Some(d) => format!("{connector} {d}"),
            },
        );
        let mut cache = self.http.lock();
        if let Some((d, http)) = cache.get(&key)
            && *d == secret_digest
        {
            return Some(http.clone());
        }
        let base = match &prepared.scheme {
            Some(scheme) if sends_credential && !credential.is_none_needed() => {
                let mut config = to_http_config(&credential, origin, scheme.clone());
                if let (Some(token), Some(source), Some(injected)) = (
                    &token,
                    credential.token_source(),
                    config.credential.as_mut(),
                ) {
                    injected.secret = crate::SecretSource::Value(token.expose().to_string());
                    config.scrub_also = source.secrets().into_iter().map(str::to_string).collect();
                }
                config
            }
            // A public API, or a destination spelled `credential = "none"`.
            _ => crate::HttpConfig::new(origin),
        };
        let mut http_config = base
            .allow_private_network(prepared.allow_private_network)
            .strip_headers(prepared.strip_headers.iter().cloned());
        http_config.destination = destination.map(str::to_string);
        // Deployment secrets go to the connector's own origins, never to an
        // origin spelled out without the credential.
        if sends_credential {
            http_config
                .secret_headers
                .extend(prepared.secret_headers.clone()?);
        }
        if let (Some(token), Some(source)) = (&token, credential.token_source())
            && sends_credential
        {
            http_config.renewal = Some(Arc::new(TokenRenewal {
                keeper: self.keeper(brand, &credential),
                tokens: self.tokens.clone(),
                brand: brand.to_string(),
                connector: connector.to_string(),
                source: Arc::new(source.clone()),
                scopes: credential.scopes().cloned().unwrap_or_default(),
                stale: token.clone(),
                config: http_config.clone(),
            }));
        }
        if let Some(deadline) = prepared.remote_deadline {
            // A remote tool's answer may take the call's whole deadline.
            http_config.read_timeout = deadline;
            http_config.total_timeout = deadline;
        }
        match HttpCapability::new(http_config) {
            Ok(http) => {
                cache.insert(key, (secret_digest, http.clone()));
                Some(http)
            }
            Err(e) => {
                tracing::error!(connector, error = %e, "cannot build the HTTP handle");
                None
            }
        }
    }
}

/// The handles of one call of a live session, built once the boundary
/// has authorized it ([`ServeHost::capabilities`]).
pub(super) struct SessionGranter<'a> {
    pub(super) host: &'a ServeHost,
    pub(super) live: &'a LiveSession,
    pub(super) component: &'a LoadedComponent,
}

#[async_trait::async_trait]
impl Granter for SessionGranter<'_> {
    async fn grant(&self, call: &Authorized<'_>) -> Capabilities {
        let obtained = self
            .host
            .obtain_tokens(self.live, self.component, call)
            .await;
        self.host
            .capabilities(self.live, self.component, call, obtained)
    }
}

/// The access tokens the host obtained for one call, by connector (the
/// call's own and the peers a joint tool reads), and what obtaining them
/// did for the trace.
#[derive(Default)]
pub(super) struct Obtained {
    tokens: HashMap<String, Result<crate::credentials::Secret, ()>>,
    events: Vec<Value>,
}

impl Obtained {
    fn token(&self, connector: &str) -> Option<&crate::credentials::Secret> {
        self.tokens.get(connector)?.as_ref().ok()
    }

    /// Why `connector`'s handle is not granted, when its token could not
    /// be obtained.
    fn refused(&self, connector: &str) -> Option<&'static str> {
        matches!(self.tokens.get(connector), Some(Err(())))
            .then_some(crate::credentials::TokenError::REASON)
    }
}

/// Stores the grant an endpoint rotated (its new refresh token, and the
/// access token it came with) in place of the one a credential was
/// resolved from, in the row it came from (the brand's own, or the sharing
/// owner's), so a restart or another host starts from it. Only while that
/// row still holds the old grant: a connection an operator replaced or
/// disabled meanwhile is left as it is.
struct RotationKeeper {
    store: Arc<dyn Store>,
    key: [u8; 32],
    resolutions: Arc<ResolutionCache>,
    /// The brand whose row holds the connection.
    brand: String,
    connection: String,
}

impl RotationKeeper {
    fn keep(&self, old: &crate::credentials::TokenSource, next: &crate::credentials::TokenSource) {
        use crate::credentials::TokenSource;
        let (brand, connection) = (self.brand.as_str(), self.connection.as_str());
        let lost = "the rotated refresh token cannot be stored: the connection needs authorizing again if this host restarts";
        match crate::store::block(self.store.get_connection(brand, connection, &self.key)) {
            Ok(Some(sealed)) if TokenSource::from_sealed(&sealed) == Some(Ok(old.clone())) => {}
            Ok(_) => {
                tracing::warn!(
                    brand,
                    connection,
                    "the endpoint rotated the refresh token of a connection that changed meanwhile: the stored connection is left as it is"
                );
                return;
            }
            Err(e) => {
                tracing::error!(brand, connection, error = %e, "{lost}");
                return;
            }
        }
        if let Err(e) = crate::store::block(self.store.put_connection(
            brand,
            connection,
            &next.seal_text(),
            &self.key,
        )) {
            tracing::error!(brand, connection, error = %e, "{lost}");
            return;
        }
        self.resolutions.invalidate();
    }
}

/// Renews a handle's token after the upstream refused it (401).
struct TokenRenewal {
    /// Where a grant the endpoint rotated is kept.
    keeper: Option<RotationKeeper>,
    tokens: Arc<crate::credentials::Tokens>,
    brand: String,
    connector: String,
    source: Arc<crate::credentials::TokenSource>,
    scopes: BTreeSet<String>,
    stale: crate::credentials::Secret,
    /// The handle's configuration, given the new token.
    config: crate::HttpConfig,
}

#[async_trait::async_trait]
impl crate::capabilities::http::Renewal for TokenRenewal {
    async fn renewed(&self) -> crate::capabilities::http::Renewed {
        let request = crate::credentials::TokenRequest {
            brand: &self.brand,
            connector: &self.connector,
            source: &self.source,
            scopes: &self.scopes,
            allow_private_network: self.config.allow_private_network,
        };
        let (token, mut event) = self.tokens.renew(&request, &self.stale).await;
        if let (Some(next), Some(keeper)) = (event.rotated.take(), &self.keeper) {
            keeper.keep(&self.source, &next);
        }
        let event = serde_json::to_value(&event).unwrap_or_default();
        let Ok(token) = token else {
            return crate::capabilities::http::Renewed { http: None, event };
        };
        let mut config = self.config.clone();
        if let Some(injected) = config.credential.as_mut() {
            injected.secret = crate::SecretSource::Value(token.expose().to_string());
        }
        config.renewal = None;
        let http = HttpCapability::new(config)
            .inspect_err(|e| tracing::error!(connector = %self.connector, error = %e, "cannot build the renewed HTTP handle"))
            .ok();
        crate::capabilities::http::Renewed { http, event }
    }
}
