//! The upstream session a session reads a remote server's resources and
//! prompts through: the one its tool calls use, over the handle bound to
//! the server's origin with the session's brand's credential as it
//! resolves now (a token the host obtains, obtained now), so a read is
//! sent exactly as a call of the server's tools would be.

use super::Host;
use crate::grant::Obtained;
use crate::remote::Upstream;
use crate::session::Session;
use std::sync::Arc;

impl<E> Host<E> {
    /// `session`'s upstream session with remote connector `connector`;
    /// `None` when the brand has no usable credential for it (nothing is
    /// sent).
    pub(crate) async fn content_upstream(
        &self,
        session: &Session,
        connector: &str,
    ) -> Option<Arc<Upstream>> {
        let server = self.deployments.remote(connector)?.clone();
        let prepared = self.deployments.roster().http.get(connector).cloned()?;
        let mut obtained = Obtained::default();
        self.grants
            .obtain_token(&session.brand, connector, &mut obtained)
            .await;
        let http = self
            .grants
            .http_capability(&session.brand, connector, &prepared, &obtained)?;
        Some(server.upstream(&session.id, &session.brand, http))
    }
}
