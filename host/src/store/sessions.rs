//! Sessions ([`SessionStore`]): what a host leaves behind, and what a fleet shares.

use super::*;

/// What a host leaves behind when it stops: recovery of the calls and
/// approvals of a host that stopped mid-call.
#[async_trait::async_trait]
pub trait SessionStore: Send + Sync {
    /// Run once by `serve` when it starts, before it takes any call, to close
    /// what a previous host left open when it was killed mid-call. In one
    /// transaction: every approval still `pending`, or approved and not yet
    /// used, is revoked by [`HOST_LOST`] with a `decided` row saying so (the
    /// call that waited for it was in the process that died, so deciding or
    /// spending it later would authorise nothing, or worse, a call it was
    /// not asked for), and every call that has no ending state (`result`,
    /// `denied`, `permission_denied`, `interrupted`), whatever order its
    /// rows were committed in, gets one `interrupted` event at `at_ms`,
    /// saying how far it got by its states (`may_have_run` once it reached
    /// `allowed`). Running it twice changes nothing the second time.
    async fn recover_interrupted(&self, at_ms: i64) -> Result<Recovered, StoreError>;

    /// At a clean stop, once the host has drained: gives up this host's
    /// lease, so no other host counts it as lost, and closes what it still
    /// holds as a recovery would (approvals ended by `host_shutdown`, calls
    /// still open `interrupted`); after it, nothing more of this host is
    /// recorded. `None` when there is no lease to give up (one host on its
    /// own file, whose next start closes what it left; or a host another
    /// already recovered).
    async fn release_lease(&self, _at_ms: i64) -> Result<Option<Recovered>, StoreError> {
        Ok(None)
    }

    /// The host this store speaks for: the id its trace rows carry (a
    /// fleet's `hosts.host_id`, or a single host's id for this start).
    fn host(&self) -> Option<String> {
        None
    }

    /// Whether this host may start an effect at this moment: its lease is
    /// held (checked in memory against the lease's deadline on this host's
    /// clock, with a margin) and it was not fenced. Always, for a store
    /// only this host uses.
    fn lease_held(&self) -> bool {
        true
    }

    /// Which identity of this host's the lease belongs to: bumped each time
    /// the host rejoins after another recovered it, so that what was opened
    /// under an earlier one (recovered then) does nothing more.
    fn lease_generation(&self) -> u64 {
        0
    }

    /// Changes made by other hosts that this host's caches depend on
    /// (connections, profiles, reviews, sessions), as they happen; `None`
    /// for a store only this host uses.
    fn invalidations(&self) -> Option<tokio::sync::broadcast::Receiver<Invalidation>> {
        None
    }

    /// Whether the store answers now (the readiness endpoint).
    async fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Records that this host serves session `id` (`view`: what the admin
    /// API shows of it, never its token), so any host can answer for it.
    async fn session_opened(
        &self,
        _id: &str,
        _brand: &str,
        _view: &serde_json::Value,
        _expires_at_ms: i64,
    ) -> Result<(), StoreError> {
        Ok(())
    }
    /// Records that the host serving session `id` ended it.
    async fn session_closed(&self, _id: &str) -> Result<(), StoreError> {
        Ok(())
    }
    /// A session as recorded, whichever host serves it.
    async fn shared_session(&self, _id: &str) -> Result<Option<SharedSession>, StoreError> {
        Ok(None)
    }
    /// Every session still served by a live host.
    async fn shared_sessions(&self) -> Result<Vec<SharedSession>, StoreError> {
        Ok(Vec::new())
    }
    /// Asks the host serving session `id` to end it (recorded, then rung);
    /// the row as it stands, `None` if no such session was recorded.
    async fn request_session_end(&self, _id: &str) -> Result<Option<SharedSession>, StoreError> {
        Ok(None)
    }

    /// Whether every host of the fleet may serve any session (the store
    /// keeps each one's record and changing state); `false` for a store
    /// only one host uses, whose sessions live in that host.
    fn shares_sessions(&self) -> bool {
        false
    }
    /// Keeps what any host needs to serve session `id`'s next call.
    async fn keep_session(&self, _id: &str, _record: &SessionRecord) -> Result<(), StoreError> {
        Ok(())
    }
    /// Session `id` as the fleet keeps it, if it was kept.
    async fn kept_session(&self, _id: &str) -> Result<Option<KeptSession>, StoreError> {
        Ok(None)
    }
    /// This host serves session `id` from now on (the host that served it
    /// before lets go when rung); `false` if it ended meanwhile.
    async fn take_up_session(&self, _id: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
    /// [`crate::session::SharedState::take_effect`], in the store.
    async fn session_take_effect(&self, _id: &str, _max: Option<u32>) -> Result<bool, StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
    /// [`crate::session::SharedState::take_call`], in the store.
    async fn session_take_call(&self, _id: &str, _max: u32) -> Result<bool, StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
    /// [`crate::session::SharedState::end_delegation`], in the store.
    async fn session_end_delegation(&self, _id: &str) -> Result<bool, StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
    /// [`crate::session::SharedState::count_refusals`], in the store.
    async fn session_count_refusals(
        &self,
        _id: &str,
        _keys: &[String],
    ) -> Result<Vec<u32>, StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
    /// [`crate::session::SharedState::set_paused`], in the store (rung).
    async fn session_set_paused(&self, _id: &str, _paused: bool) -> Result<(), StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
    /// [`crate::session::SharedState::withdraw`], in the store (rung).
    async fn session_withdraw(&self, _id: &str, _connector: &str) -> Result<(), StoreError> {
        Err(StoreError::Config("this store keeps no session".into()))
    }
}

/// What any host of a fleet needs to serve a session's next call, kept
/// when it opens: never its token (a digest of it), and nothing that
/// changes (that is [`SharedStateNow`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// SHA-256 of its bearer token, hex.
    pub token_digest: String,
    /// The role as asked for (`person-chat`).
    pub role: String,
    pub profile: Option<String>,
    /// The policy input it was decided with (brand facts, profile or grant).
    pub input: crate::policy::SessionInput,
    /// What it was offered when it opened.
    pub opened: BTreeSet<String>,
    /// What it was not given at its start, with the rule's name.
    pub removed: BTreeMap<String, String>,
    /// The connectors it is served.
    pub connectors: Vec<String>,
    pub left_out: BTreeMap<String, String>,
    pub allowlist: Vec<String>,
    pub expires_at_ms: i64,
    /// The components loaded for it alone (`oci://…@sha256:…`), which the
    /// host taking it up pulls and verifies itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
}

/// A session as the fleet keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptSession {
    pub id: String,
    pub brand: String,
    /// The host serving it now.
    pub host_id: String,
    pub record: SessionRecord,
    pub state: SharedStateNow,
    /// Someone asked for it to end, or it was closed.
    pub ended: bool,
}

/// A session's changing state as the fleet's store holds it: what a host
/// learns when it takes the session up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedStateNow {
    pub paused: bool,
    pub withdrawn: BTreeSet<String>,
    pub effects: u32,
    pub delegation_ended: bool,
    /// Calls run so far (the session's `max_calls`).
    #[serde(default)]
    pub calls: u32,
}

/// A session as the database records it, for hosts that do not serve it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedSession {
    pub id: String,
    /// The host serving it (the only one holding its MCP endpoints).
    pub host_id: String,
    /// What the admin API shows of it.
    pub view: serde_json::Value,
    /// Someone asked for it to end.
    pub ended: bool,
    /// Its host ended it (or was lost).
    pub closed: bool,
}

/// What another host changed (see [`SessionStore::invalidations`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalidation {
    /// A connection stored, disabled, shared or unshared.
    Connections,
    /// A profile saved or deleted.
    Profiles,
    /// A tool review approved.
    Reviews,
    /// A connector added, upgraded or retired through the admin API.
    Connectors,
    /// An operator policy document stored or deleted through the admin API.
    Policies,
    /// A session ended or revoked by another host's admin API.
    Session(String),
    /// Anything: the listener reconnected and may have missed changes.
    All,
}

/// What [`Store::recover_interrupted`] closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovered {
    /// Approvals that could still have been used (pending, or approved and
    /// not yet used), now revoked.
    pub approvals_revoked: usize,
    /// Calls that had not reached a terminal state, now marked `interrupted`.
    pub calls_interrupted: usize,
    /// Of those, the calls that were allowed (and may have reached their
    /// upstream) but recorded no result: their effect is unknown.
    pub calls_maybe_run: usize,
}

/// The rule that ends the approvals of a host that stopped without
/// draining (killed, or lost to the fleet): the call waiting for each one
/// went with its host, so none may be decided or spent any more. Their
/// `decided_by`, and what deciding one answers (`409`, naming it); beside
/// `host_shutdown`, which ends them at a clean stop.
pub const HOST_LOST: &str = "host_lost";

/// The `decided_by` of an approval revoked by [`Store::recover_interrupted`]
/// on a single host: its previous process was lost like any fleet host.
pub const RESTART_REVOKER: &str = HOST_LOST;

/// The rule a `decided_by` names, when the host (not a person) ended the
/// approval: `host_lost` (also under its older texts) or `host_shutdown`.
pub fn ended_by_rule(decided_by: Option<&str>) -> Option<&'static str> {
    match decided_by? {
        HOST_LOST | "host lost: caller gone" | "host restart: caller gone" => Some(HOST_LOST),
        "host_shutdown" => Some("host_shutdown"),
        _ => None,
    }
}
