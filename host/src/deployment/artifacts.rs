//! A deployment's artifact connectors resolved to bytes: pulled and verified
//! at `serve`'s start (a tag pinned in the store to the digest the first
//! host resolved), or found in the cache by the offline audit. The
//! configuration only names the artifacts; this is what talks to the
//! registries and records the pins.

use crate::artifact::signature::TrustedKeys;
use crate::artifact::{ArtifactCache, ArtifactError, PullError, blocking, pull_within};
use crate::config::ServeConfig;
use crate::store::{ReviewStore, StoreError};

/// Why a connector's artifact could not be resolved at start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The keys its signature is checked against could not be read.
    #[error(transparent)]
    Keys(ArtifactError),
    /// The store's pin of its tag could not be read or written.
    #[error(transparent)]
    Pins(StoreError),
    #[error(transparent)]
    Pull(#[from] PullError),
}

/// Pulls every connector's artifact of `config` into `cache` and points its
/// `component` at the verified bytes. A tag is resolved through `pins`: to
/// the digest recorded for it when there is one, else to what the registry
/// answers now, which is then recorded (the first host to record wins;
/// every other host runs its bytes). An error names the connector.
///
/// Synchronous, as `serve`'s start is: the store is waited for with
/// [`crate::store::block`] and each pull runs on a runtime of its own.
pub fn resolve_artifacts(
    config: &mut ServeConfig,
    pins: &dyn ReviewStore,
    cache: &ArtifactCache,
) -> Result<(), (String, ResolveError)> {
    let options = config.registry_options();
    let host_requires_signature = config.require_signature;
    let mut keys: Option<TrustedKeys> = None;
    for (name, connector) in config.connectors.iter_mut() {
        let Some(named) = connector.artifact.clone() else {
            continue;
        };
        let failed = |reason: ResolveError| (name.clone(), reason);
        let trust = if host_requires_signature || connector.require_signature {
            if keys.is_none() {
                keys = Some(
                    TrustedKeys::load(&config.signature_keys)
                        .map_err(|e| failed(ResolveError::Keys(e)))?,
                );
            }
            keys.as_ref()
        } else {
            None
        };
        let tag = named.digest().is_none().then(|| named.to_string());
        let recorded = match &tag {
            Some(tag) => crate::store::block(pins.pinned_artifact(tag))
                .map_err(|e| failed(ResolveError::Pins(e)))?,
            None => None,
        };
        let wanted = recorded
            .as_deref()
            .map_or(named.clone(), |d| named.pinned(d));
        let mut pulled = blocking(pull_within(&wanted, &options, cache, trust))
            .and_then(|pulled| pulled)
            .map_err(|e| failed(e.into()))?;
        if let (Some(tag), None) = (&tag, &recorded) {
            let kept = crate::store::block(pins.pin_artifact(tag, &pulled.digest, "serve"))
                .map_err(|e| failed(ResolveError::Pins(e)))?;
            if kept != pulled.digest {
                // Another host recorded the tag first: its bytes.
                pulled = blocking(pull_within(&named.pinned(&kept), &options, cache, trust))
                    .and_then(|pulled| pulled)
                    .map_err(|e| failed(e.into()))?;
            }
        }
        connector.component = pulled.path;
        connector.artifact_digest = Some(pulled.digest);
    }
    Ok(())
}

/// Points each artifact connector of `config` at the bytes `cache` holds for
/// the digest it names, or that `pins` recorded for its tag, asking no
/// registry (the audit reads a deployment offline). One the cache does not
/// hold is left unresolved, and is refused by name.
pub async fn use_cached_artifacts(
    config: &mut ServeConfig,
    pins: &dyn ReviewStore,
    cache: &ArtifactCache,
) -> Result<(), StoreError> {
    for connector in config.connectors.values_mut() {
        let Some(named) = &connector.artifact else {
            continue;
        };
        let digest = match named.digest() {
            Some(digest) => Some(digest.to_string()),
            None => pins.pinned_artifact(&named.to_string()).await?,
        };
        if let Some(digest) = digest
            && let Some((path, _)) = cache.component(&digest)
        {
            connector.component = path;
            connector.artifact_digest = Some(digest);
        }
    }
    Ok(())
}
