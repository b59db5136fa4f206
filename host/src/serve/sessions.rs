//! Sessions as `serve` reaches them: [`crate::host::Host`] decides,
//! records and holds them (over the [`crate::sessions`] service); here a
//! session's MCP endpoints are made, and its views name them under this
//! listener's base URL.

use super::*;
use crate::host::Reach;

impl ServeHost {
    /// Opens a session ([`Host::open_session`]), reached through an MCP
    /// endpoint per server it is served.
    pub fn open_session(self: &Arc<Self>, request: &OpenSession) -> Result<SessionView, HostError> {
        let acting = identity::Acting::now();
        let origin = acting
            .as_ref()
            .map(|acting| acting.origin.clone())
            .unwrap_or_default();
        let endpoint = |session, connector, cancel| {
            endpoint::Endpoint::new(self.clone(), session, connector, cancel)
        };
        let opened =
            self.host
                .open_session(request, origin.clone(), &self.base_url(), &reach(&endpoint));
        if let Err(HostError::Limited(refusal)) = &opened {
            // A brand's limit refused it: traced under the brand, no session.
            let actor = acting.map(|a| a.actor).unwrap_or(serde_json::Value::Null);
            let event = crate::trace::changed(
                "",
                &refusal.brand,
                crate::trace::Change::SessionRefused,
                refusal.detail(),
                actor,
                origin,
            );
            if let Err(e) = crate::store::block(self.host.trace().record(&event)) {
                tracing::error!(error = %e, "a session open was refused by its brand's limit and could not be traced");
            }
        }
        opened
    }

    /// The session `id` for a caller holding `token`, held here or taken
    /// up here now ([`Host::session_for`]).
    pub async fn session_for(self: &Arc<Self>, id: &str, token: &str) -> Option<Arc<LiveSession>> {
        let endpoint = |session, connector, cancel| {
            endpoint::Endpoint::new(self.clone(), session, connector, cancel)
        };
        self.host.session_for(id, token, &reach(&endpoint)).await
    }

    /// Takes up session `id`, kept by the fleet, on this host
    /// ([`Host::take_up`]).
    pub(crate) async fn take_up(
        self: &Arc<Self>,
        id: &str,
        token: Option<&str>,
    ) -> Option<Arc<LiveSession>> {
        let endpoint = |session, connector, cancel| {
            endpoint::Endpoint::new(self.clone(), session, connector, cancel)
        };
        self.host.take_up(id, token, &reach(&endpoint)).await
    }

    /// Every open session of every live host, as the admin API shows it.
    pub(crate) fn all_sessions(&self) -> Result<Vec<Value>, HostError> {
        self.host.all_sessions(&self.base_url())
    }

    /// One open session as the admin API shows it, whichever host serves it.
    pub(crate) fn session_view(&self, id: &str) -> Result<Option<Value>, HostError> {
        self.host.session_view(id, &self.base_url())
    }
}

/// How `serve` reaches a session: its host tools on the `scout` endpoint,
/// and `endpoint` for each server.
fn reach<'a>(
    endpoint: &'a (
            dyn Fn(
        std::sync::Weak<LiveSession>,
        String,
        tokio_util::sync::CancellationToken,
    ) -> endpoint::Endpoint
                + Sync
        ),
) -> Reach<'a, endpoint::Endpoint> {
    Reach {
        host_tools: host_tools::given,
        endpoint,
    }
}
