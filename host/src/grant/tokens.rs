//! The access tokens the host obtains for a call (OAuth, the broker): the
//! connector's own and those of the peers a joint tool reads, only ever for
//! a call the boundary authorized (cached tokens cost nothing); their
//! renewal after an upstream refused one (401); and keeping a grant the
//! endpoint rotated in place of the stored one.

use super::Credentials;
use crate::boundary::Session;
use crate::capabilities::http::HttpCapability;
use crate::credentials::{Credential, ResolutionCache, Secret, TokenError, TokenSource, Tokens};
use crate::store::Store;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The token machinery, configured once at start.
pub(super) struct TokenGrant {
    tokens: Arc<Tokens>,
    store: Arc<dyn Store>,
    key: [u8; 32],
    resolutions: Arc<ResolutionCache>,
    /// The connectors as served now: whose token endpoints may be private
    /// (`allow_private_network`, as a runtime change last set it).
    roster: crate::deployment::SharedRoster,
}

impl TokenGrant {
    pub(super) fn new(
        tokens: Arc<Tokens>,
        store: Arc<dyn Store>,
        key: [u8; 32],
        resolutions: Arc<ResolutionCache>,
        roster: crate::deployment::SharedRoster,
    ) -> TokenGrant {
        TokenGrant {
            tokens,
            store,
            key,
            resolutions,
            roster,
        }
    }

    /// The tokens the host obtains, for a handle's renewal.
    pub(super) fn tokens(&self) -> Arc<Tokens> {
        self.tokens.clone()
    }

    /// Obtains the access tokens of the credentials a call of `connector`
    /// in `session` will use that the host fetches itself: the connector's
    /// own and those of the peers its tool reads (`reads_from`) that are
    /// `registered` for the session.
    pub(super) async fn prepare(
        &self,
        credentials: &Credentials,
        session: &Session,
        connector: &str,
        reads_from: &[String],
        registered: &[String],
    ) -> Obtained {
        let mut obtained = Obtained::default();
        let brand = &session.brand;
        let peers = reads_from
            .iter()
            .filter(|p| registered.iter().any(|c| c == *p));
        for server in std::iter::once(connector).chain(peers.map(String::as_str)) {
            // A token request is an effect on the brand's behalf: none
            // from a host that no longer holds its lease.
            if !credentials.may_act(session) {
                if host_obtains_token(credentials, brand, server) {
                    obtained
                        .tokens
                        .insert(server.to_string(), Err(TokenError::REASON));
                }
                continue;
            }
            self.obtain(credentials, brand, server, &mut obtained).await;
        }
        obtained
    }

    /// Obtains `server`'s access token for `brand` into `obtained`, where
    /// its credential is one the host obtains; a grant the endpoint
    /// rotated is kept in place of the stored one.
    pub(super) async fn obtain(
        &self,
        credentials: &Credentials,
        brand: &str,
        server: &str,
        obtained: &mut Obtained,
    ) {
        let Ok(Some(credential)) = credentials.resolve(brand, server) else {
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
                .roster
                .read()
                .settings
                .get(server)
                .is_some_and(|s| s.allow_private_network),
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
            .insert(server.to_string(), token.map_err(|e| e.reason()));
    }

    /// Where a grant rotated for `credential` (resolved for `brand`) is kept.
    pub(super) fn keeper(&self, brand: &str, credential: &Credential) -> Option<RotationKeeper> {
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
}

/// Whether `server`'s credential for `brand` is one the host obtains.
fn host_obtains_token(credentials: &Credentials, brand: &str, server: &str) -> bool {
    matches!(
        credentials.resolve(brand, server),
        Ok(Some(credential)) if credential.token_source().is_some()
    )
}

/// The access tokens the host obtained for one call, by connector (the
/// call's own and the peers a joint tool reads), and what obtaining them
/// did for the trace.
#[derive(Default)]
pub(crate) struct Obtained {
    /// Each token, or what the call is told of why there is none.
    tokens: HashMap<String, Result<Secret, &'static str>>,
    events: Vec<Value>,
}

impl Obtained {
    pub(super) fn token(&self, connector: &str) -> Option<&Secret> {
        self.tokens.get(connector)?.as_ref().ok()
    }

    /// What obtaining the tokens did, for the trace.
    pub(super) fn events(&self) -> &[Value] {
        &self.events
    }

    /// Why `connector`'s handle is not granted, when its token could not
    /// be obtained.
    pub(super) fn refused(&self, connector: &str) -> Option<&'static str> {
        self.tokens.get(connector)?.as_ref().err().copied()
    }
}

/// Stores the grant an endpoint rotated (its new refresh token, and the
/// access token it came with) in place of the one a credential was
/// resolved from, in the row it came from (the brand's own, or the sharing
/// owner's), so a restart or another host starts from it. Only while that
/// row still holds the old grant: a connection an operator replaced or
/// disabled meanwhile is left as it is.
pub(super) struct RotationKeeper {
    store: Arc<dyn Store>,
    key: [u8; 32],
    resolutions: Arc<ResolutionCache>,
    /// The brand whose row holds the connection.
    brand: String,
    connection: String,
}

impl RotationKeeper {
    fn keep(&self, old: &TokenSource, next: &TokenSource) {
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
pub(super) struct TokenRenewal {
    /// Where a grant the endpoint rotated is kept.
    pub(super) keeper: Option<RotationKeeper>,
    pub(super) tokens: Arc<Tokens>,
    pub(super) brand: String,
    pub(super) connector: String,
    pub(super) source: Arc<TokenSource>,
    pub(super) scopes: BTreeSet<String>,
    pub(super) stale: Secret,
    /// The handle's configuration, given the new token.
    pub(super) config: crate::HttpConfig,
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
