//! The `http` grant: a call's HTTP clients, each bound to one origin of a
//! connector with the brand's credential injected as it resolves now (a
//! token the host obtained for the call, or the stored secret), and the
//! cache that reuses a client while its credential stays the same
//! (connection reuse). A joint tool also gets a client per peer it reads.

use super::tokens::{Obtained, TokenGrant, TokenRenewal};
use super::{Credentials, digest_hex};
use crate::capabilities::Capabilities;
use crate::capabilities::http::HttpCapability;
use crate::credentials::to_http_config;
use crate::deployment::{HttpPrepared, Roster};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// An HTTP handle built for a (brand, connector), with the digest of the
/// secret it injects: reused while the credential stays the same.
type CachedClient = (String, Arc<HttpCapability>);

/// The clients built so far, by (brand, connector or `connector destination`).
#[derive(Default)]
pub(super) struct HttpGrant {
    clients: Mutex<HashMap<(String, String), CachedClient>>,
}

/// What one call's `http` grant is prepared from.
pub(super) struct HttpCall<'a> {
    pub(super) credentials: &'a Credentials,
    pub(super) tokens: &'a TokenGrant,
    pub(super) roster: &'a Roster,
    pub(super) brand: &'a str,
    pub(super) connector: &'a str,
    pub(super) prepared: &'a HttpPrepared,
    /// The peers the called tool reads (a joint tool's), as resolved at load.
    pub(super) reads_from: &'a [String],
    /// The connectors the session is served.
    pub(super) registered: &'a [String],
    pub(super) obtained: &'a Obtained,
}

/// What preparing a call's `http` grant came to.
pub(super) enum Prepared {
    /// Its clients are in the call's capabilities.
    Granted,
    /// Its token could not be obtained: the call gets only the refusal.
    Refused,
    /// No credential for its own origin: no handle at all.
    Nothing,
}

impl HttpGrant {
    /// Puts `call`'s clients in `caps`: its own origin's and each further
    /// destination's, then one per peer a joint tool reads that is live in
    /// this session now, with that peer's origin and credential.
    pub(super) fn prepare(&self, call: HttpCall<'_>, caps: &mut Capabilities) -> Prepared {
        let HttpCall {
            credentials,
            tokens,
            roster,
            brand,
            connector,
            prepared,
            reads_from,
            registered,
            obtained,
        } = call;
        let capability = |connector: &str, prepared: &HttpPrepared, destination: Option<&str>| {
            self.capability(
                credentials,
                tokens,
                roster,
                brand,
                connector,
                prepared,
                destination,
                obtained,
            )
        };
        if prepared.origins.contains_key(&None) {
            if let Some(why) = obtained.refused(connector) {
                caps.refused.insert(None, why.to_string());
                return Prepared::Refused;
            }
            let Some(http) = capability(connector, prepared, None) else {
                return Prepared::Nothing;
            };
            caps.http = Some(http);
            for dest in prepared.origins.keys().flatten() {
                if let Some(http) = capability(connector, prepared, Some(dest)) {
                    caps.destinations.insert(dest.clone(), http);
                }
            }
        }
        for peer in reads_from {
            // Registered for this session, and (in `capability`) offered,
            // with a credential that resolves now.
            let registered = registered.iter().any(|c| c == peer);
            if let Some(why) = obtained.refused(peer) {
                caps.refused.insert(Some(peer.clone()), why.to_string());
                continue;
            }
            if let (true, Some(peer_http)) = (registered, roster.http.get(peer))
                && let Some(http) = capability(peer, peer_http, None)
            {
                caps.destinations.insert(peer.clone(), http);
            }
        }
        Prepared::Granted
    }

    /// The HTTP client bound to the connector's origin with the brand's
    /// credential as it resolves now. Clients are reused while the
    /// credential stays the same (connection reuse).
    /// `destination`: one of the connector's further `origins`, by name.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn capability(
        &self,
        credentials: &Credentials,
        tokens: &TokenGrant,
        roster: &Roster,
        brand: &str,
        connector: &str,
        prepared: &HttpPrepared,
        destination: Option<&str>,
        obtained: &Obtained,
    ) -> Option<Arc<HttpCapability>> {
        if roster.not_offered.contains_key(connector) {
            return None;
        }
        let (origin, sends_credential) = prepared
            .origins
            .get(&destination.map(str::to_string))
            .cloned()?;
        let credential = match credentials.resolve(brand, connector) {
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
        let secret_digest = digest_hex(secret.expose());
        let key = (
            brand.to_string(),
            match destination {
                None => connector.to_string(),
                Some(d) => format!("{connector} {d}"),
            },
        );
        let mut cache = self.clients.lock();
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
                keeper: tokens.keeper(brand, &credential),
                tokens: tokens.tokens(),
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
