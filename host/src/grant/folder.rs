//! The `folder` grant: the folders the session holds for a connector, as
//! its configuration names them ([`crate::session::holdings`] decides who
//! may read and write them).

use crate::boundary::Session;
use crate::capabilities::folder::FolderCapability;
use crate::config::ConnectorConfig;
use crate::session::holdings::HoldingsConfig;
use std::sync::Arc;

/// Nothing to configure: a session's holdings carry its folders.
pub(super) struct FolderGrant;

impl FolderGrant {
    /// `connector`'s folders in `session`, as `settings` configure them.
    pub(super) fn prepare(
        &self,
        session: &Session,
        connector: &str,
        settings: &ConnectorConfig,
    ) -> Vec<Arc<FolderCapability>> {
        let config = HoldingsConfig {
            folders: &settings.folders,
            person_allowance: settings.person_allowance.as_ref(),
        };
        session
            .holdings()
            .map(|h| h.folders(connector, config))
            .unwrap_or_default()
    }
}

/// Whether `session` holds the configured folders, and may write them
/// (the rule of [`crate::session::holdings`]).
pub(crate) fn rights(session: &Session) -> (bool, bool) {
    session
        .holdings()
        .map_or((false, false), |h| h.folder_rights())
}
