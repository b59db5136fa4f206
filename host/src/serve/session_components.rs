//! Components loaded for single sessions, where what is served meets the
//! sessions held here: [`crate::deployments`] loads, pins and drops them;
//! this side tells it which names the open sessions hold.

use super::*;
use crate::deployments::{Pinned, SessionComponentError};

impl From<SessionComponentError> for HostError {
    fn from(e: SessionComponentError) -> HostError {
        match e {
            SessionComponentError::NotSelectable(why) => HostError::NotSelectable(why),
            SessionComponentError::Store(e) => HostError::Store(e),
        }
    }
}

impl ServeHost {
    /// The session components the sessions open here hold.
    fn held_session_components(&self) -> BTreeSet<String> {
        self.sessions
            .all()
            .iter()
            .flat_map(|live| live.connectors.iter().cloned())
            .collect()
    }

    /// `GET /v1/session-components`: every template, and the sessions here
    /// holding each.
    pub(crate) fn session_component_views(&self) -> Result<Vec<Value>, HostError> {
        let sessions = self.sessions.all();
        let holding = |name: &str| {
            sessions
                .iter()
                .filter(|s| s.connectors.iter().any(|c| c == name))
                .count()
        };
        Ok(self.deployments.session_component_views(holding)?)
    }

    /// Loads, for a session being opened or taken up here, each component
    /// `references` names ([`Deployments::load_session_components`]): none
    /// is dropped while the answer is held.
    pub(crate) async fn load_session_components(
        &self,
        references: &[String],
    ) -> Result<Pinned<'_>, HostError> {
        Ok(self
            .deployments
            .load_session_components(references, || self.held_session_components())
            .await?)
    }

    /// Whether `name` is a component loaded here for the sessions that
    /// named it.
    pub(crate) fn is_session_only(&self, name: &str) -> bool {
        self.deployments.is_session_only(name)
    }

    /// Drops every session component no session here holds (nor one being
    /// opened).
    pub(crate) fn drop_unused_session_components(&self) {
        self.deployments
            .drop_unused_session_components(&|| self.held_session_components());
    }
}
