//! Pulling an artifact within a deadline, from inside or outside a runtime:
//! what a deployment's start and a runtime change both use to turn an
//! artifact's name into verified bytes in the cache.

use super::signature::TrustedKeys;
use super::{ArtifactCache, ArtifactError, ArtifactRef, Pulled, RegistryOptions};
use std::time::Duration;

/// How long one artifact's pull may take at start, however slowly a
/// registry answers: a start that cannot have its bytes fails, naming them.
const PULL_DEADLINE: Duration = Duration::from_secs(300);

/// Why an artifact was not pulled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PullError {
    /// The registry refused it, or the bytes failed a check.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// The registry was too slow: nothing was cached.
    #[error("{reference}: the registry did not hand over the artifact within {} s", .deadline.as_secs())]
    Deadline {
        reference: String,
        deadline: Duration,
    },
    /// The pull's own runtime could not start (a start that is not async).
    #[error("cannot start a runtime to pull with: {0}")]
    Runtime(#[source] std::io::Error),
    /// The thread that pulled ended without an answer.
    #[error("the pull stopped unexpectedly")]
    Stopped,
}

/// [`super::pull`] within [`PULL_DEADLINE`].
pub(crate) async fn pull_within(
    reference: &ArtifactRef,
    options: &RegistryOptions,
    cache: &ArtifactCache,
    trust: Option<&TrustedKeys>,
) -> Result<Pulled, PullError> {
    match tokio::time::timeout(PULL_DEADLINE, super::pull(reference, options, cache, trust)).await {
        Ok(pulled) => Ok(pulled?),
        Err(_) => Err(PullError::Deadline {
            reference: reference.to_string(),
            deadline: PULL_DEADLINE,
        }),
    }
}

/// Runs `future` to completion on a runtime of its own, on a thread of its
/// own: callable from inside or outside a runtime.
pub(crate) fn blocking<F>(future: F) -> Result<F::Output, PullError>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map(|runtime| runtime.block_on(future))
                    .map_err(PullError::Runtime)
            })
            .join()
            .unwrap_or(Err(PullError::Stopped))
    })
}
