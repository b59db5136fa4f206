//! The `requestState` of a 2026-07-28 `input_required` result that asks a
//! person to approve a call: only a handle to the approval row, sealed with
//! the store key for this purpose and the session, so a client can neither
//! read it nor forge or move one to another session. What it names is
//! never trusted: the retry checks the row itself (the same session, tool
//! and arguments, still pending), see [`super::ByResult`].

use super::Approvals;
use crate::store::ApprovalId;

/// What a `requestState` is sealed for, with the session's id after it.
const PURPOSE: &str = "scout input_required approval v1 ";

impl Approvals {
    /// The `requestState` naming approval `id` of `session`; `None` where
    /// no store key is set (the client then cannot be asked this way).
    pub fn request_state(&self, session: &str, id: ApprovalId) -> Option<String> {
        let key = self.arguments_key.as_ref()?;
        let purpose = format!("{PURPOSE}{session}");
        crate::store::seal_text(key, purpose.as_bytes(), id.0.to_string().as_bytes()).ok()
    }

    /// The approval a `requestState` this host sealed for `session` names;
    /// `None` for anything else (another session, another key, a changed
    /// byte, text that was never one).
    pub fn opened_request_state(&self, session: &str, state: &str) -> Option<ApprovalId> {
        let key = self.arguments_key.as_ref()?;
        let purpose = format!("{PURPOSE}{session}");
        let plain = crate::store::open_text(key, purpose.as_bytes(), state)?;
        std::str::from_utf8(&plain)
            .ok()?
            .parse()
            .ok()
            .map(ApprovalId)
    }

    /// Whether this host can ask a person through `input_required`
    /// results (it seals their `requestState`).
    pub fn asks_by_result(&self) -> bool {
        self.arguments_key.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn approvals_keyed(dir: &tempfile::TempDir, key: [u8; 32]) -> Approvals {
        let store: Arc<dyn crate::store::Store> =
            Arc::new(crate::store::SqliteStore::open(dir.path().join("t.db")).unwrap());
        Approvals::new(store, Duration::from_secs(60)).sealing_arguments(key)
    }

    #[test]
    fn a_request_state_opens_only_for_its_session_and_key_and_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let other_key = approvals_keyed(&dir, [4u8; 32]);
        let approvals = approvals_keyed(&dir, [3u8; 32]);
        // An id of ten digits: the sealed state is random base64, where two
        // digits turn up by chance one time in a hundred or so.
        let id = ApprovalId(4_242_424_242);
        let state = approvals.request_state("s-1", id).unwrap();
        assert!(
            !state.contains("4242424242"),
            "the approval's id is not readable"
        );
        assert_eq!(approvals.opened_request_state("s-1", &state), Some(id));
        assert_eq!(approvals.opened_request_state("s-2", &state), None);
        assert_eq!(other_key.opened_request_state("s-1", &state), None);
        let mut changed = state.clone().into_bytes();
        changed[20] ^= 1;
        let changed = String::from_utf8(changed).unwrap_or_default();
        assert_eq!(approvals.opened_request_state("s-1", &changed), None);
        assert_eq!(approvals.opened_request_state("s-1", "42"), None);
    }
}
