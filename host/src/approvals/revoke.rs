//! Approvals revoked before anyone decided or used them: one whose caller
//! went away or whose host stops, a session's when it loses its authority,
//! and a connector's tools' when they change or are reviewed anew (a person
//! asked about the tool as it was did not approve it as it is). A revoked
//! approval never comes back; the store rings the host whose call waits.

use super::Approvals;
use crate::store::{ApprovalId, StoreError};
use std::collections::BTreeSet;

impl Approvals {
    /// Revokes approval `id` if it is still unused (pending, or approved
    /// and not yet spent), recording `by` as who withdrew it; whether it
    /// was revoked now.
    pub async fn revoke(&self, id: ApprovalId, by: &str) -> Result<bool, StoreError> {
        self.store.revoke_approval(id, by).await
    }

    /// Revokes every unused approval of `session` (it ended, or lost a
    /// connector or its delegation); how many.
    pub fn revoke_session(&self, session: &str) -> Result<usize, StoreError> {
        crate::store::block(self.store.revoke_session_approvals(session))
    }

    /// Revokes every pending approval of `tools` of `connector`, whichever
    /// host's call waits on it, recorded as decided by `by`; their ids. A
    /// call whose approval this misses (the store not answering) is still
    /// checked again before it runs.
    pub fn revoke_tools(&self, connector: &str, tools: &[String], by: &str) -> Vec<i64> {
        if tools.is_empty() {
            return Vec::new();
        }
        let names: BTreeSet<String> = tools
            .iter()
            .map(|t| crate::policy::names::mcp(connector, t))
            .collect();
        let pending = match crate::store::block(self.store.all_pending()) {
            Ok(pending) => pending,
            Err(e) => {
                tracing::error!(connector = %connector, error = %e, "cannot read the pending approvals to revoke; a call waiting on one is checked again before it runs");
                return Vec::new();
            }
        };
        pending
            .into_iter()
            .filter(|a| names.contains(&a.tool))
            .filter(
                |a| match crate::store::block(self.store.revoke_approval(a.id, by)) {
                    Ok(revoked) => revoked,
                    Err(e) => {
                        tracing::error!(approval = a.id.0, error = %e, "cannot revoke an approval of a changed tool; its call is checked again before it runs");
                        false
                    }
                },
            )
            .map(|a| a.id.0)
            .collect()
    }
}
