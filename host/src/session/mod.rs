//! One session's state, in one place: its policy state (identity, brand
//! facts, role and profile or grant, revocations and withdrawals), what it
//! holds ([`holdings`]: its meters and folders), and the surface it is
//! offered, computed once per revision.
//!
//! A session is opened for a brand and a role (with its profile or grant);
//! from then on only two things change what it may do: a revocation or
//! withdrawal of its own, and a change in the world it was decided against
//! (a connector revoked, a connection stored, disabled, shared or
//! unshared, a tool reviewed, a profile saved). Each bumps a revision
//! counter: [`Revision`] pairs the host's counter with the session's.
//! [`crate::boundary::Boundary::offered`] computes the surface once per
//! revision and hands the same [`Offered`] to `tools/list` and to every
//! call, so nothing recomputes the policy per request, and a change is
//! seen by the next request because it bumps the revision before it is
//! acknowledged.

pub mod holdings;
pub mod registry;
pub mod shared;

use crate::policy::{Removal, SessionInput, Surface};
use parking_lot::Mutex;
pub use registry::{Live, Registry};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Which state a surface was decided against: the host's revision (shared
/// by every session) and the session's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Revision {
    /// Bumped by anything that changes what every session may be offered.
    pub host: u64,
    /// Bumped by a revocation or withdrawal of this session's.
    pub session: u64,
}

/// The surface a session is offered at one revision.
#[derive(Debug)]
pub struct Offered {
    /// The state it was computed from.
    pub revision: Revision,
    /// The policy's answer: one for every session given the same
    /// ([`shared`]).
    pub surface: Arc<Surface>,
}

impl Offered {
    /// `surface`, computed at `revision`, shared with every session given
    /// an equal one.
    pub fn new(revision: Revision, surface: Surface) -> Offered {
        static SURFACES: std::sync::LazyLock<shared::Interner<Surface>> =
            std::sync::LazyLock::new(Default::default);
        let hash = SURFACES.hash_of(surface.names());
        Offered {
            revision,
            surface: SURFACES.intern_hashed(hash, surface),
        }
    }
}

/// One session: who it is for, and what the policy was given to decide it.
pub struct Session {
    /// Session id, as the trace and approvals name it.
    pub id: String,
    /// The brand it acts for.
    pub brand: String,
    pub(crate) input: SessionInput,
    revoked: AtomicBool,
    revision: AtomicU64,
    /// What was offered when the session opened: a tool that has since
    /// disappeared was revoked, not never offered. Shared by every session
    /// opened with the same ([`shared`]).
    pub(crate) opened: OnceLock<Arc<BTreeSet<String>>>,
    /// Connectors withdrawn from this session's grant.
    withdrawn: Mutex<BTreeSet<String>>,
    /// The tools it was not given at its start, with the rule that removed
    /// each: a call naming one is traced with that rule. Shared likewise.
    pub(crate) removed: OnceLock<Arc<BTreeMap<String, Removal>>>,
    /// The surface at the last revision it was asked for.
    offered: Mutex<Option<Arc<Offered>>>,
    /// Its meters and folders, once decided ([`holdings`]).
    holdings: OnceLock<holdings::Holdings>,
    /// Refusals by consequence (denial lineage), and whether it is paused.
    refusals: Mutex<std::collections::HashMap<String, u32>>,
    paused: AtomicBool,
    /// Writes and billed calls allowed so far (the delegation's `maxEffects`,
    /// the session's `max_effects`).
    effects: std::sync::atomic::AtomicU32,
    /// Calls allowed to run so far (the session's `max_calls`).
    calls: std::sync::atomic::AtomicU32,
    /// Its delegation expired (its approvals were revoked then, for good).
    delegation_ended: AtomicBool,
    /// The store's lease generation it was opened under: once the host
    /// rejoins under a new identity (another host recovered this session),
    /// it is refused everything.
    generation: AtomicU64,
    /// Where its changing state is kept when the fleet shares it: then the
    /// store decides (effects, refusals) and every host sees the same.
    shared: Option<Arc<dyn SharedState>>,
}

/// Where a session's changing state is kept when every host of a fleet may
/// serve it: the store's answer is the one that counts (an effect taken, a
/// refusal counted), and what one host sets (a pause, a withdrawal) every
/// other host reads. An error fails closed: no effect is taken, a refusal
/// is counted here, a pause holds here.
pub trait SharedState: Send + Sync {
    /// Takes one effect of `max` (none: unlimited); `false` when none is left.
    fn take_effect(&self, session: &str, max: Option<u32>) -> Result<bool, String>;
    /// Takes one call of `max`; `false` when none is left.
    fn take_call(&self, session: &str, max: u32) -> Result<bool, String>;
    /// Marks its delegation ended; `true` the first time.
    fn end_delegation(&self, session: &str) -> Result<bool, String>;
    /// Counts one refusal under each of `keys`; each key's count after.
    fn count_refusals(&self, session: &str, keys: &[String]) -> Result<Vec<u32>, String>;
    /// Pauses it, or resumes it (its refusals count afresh).
    fn set_paused(&self, session: &str, paused: bool) -> Result<(), String>;
    /// Withdraws `connector` from its grant.
    fn withdraw(&self, session: &str, connector: &str) -> Result<(), String>;
}

/// What a host learns of a session the fleet shares when it takes it up.
pub use crate::store::SharedStateNow;

/// A session's changing state kept in the fleet's store (see
/// [`SharedState`]).
pub struct FleetSessions(pub Arc<dyn crate::store::Store>);

impl SharedState for FleetSessions {
    fn take_effect(&self, session: &str, max: Option<u32>) -> Result<bool, String> {
        crate::store::block(self.0.session_take_effect(session, max)).map_err(|e| e.to_string())
    }
    fn take_call(&self, session: &str, max: u32) -> Result<bool, String> {
        crate::store::block(self.0.session_take_call(session, max)).map_err(|e| e.to_string())
    }
    fn end_delegation(&self, session: &str) -> Result<bool, String> {
        crate::store::block(self.0.session_end_delegation(session)).map_err(|e| e.to_string())
    }
    fn count_refusals(&self, session: &str, keys: &[String]) -> Result<Vec<u32>, String> {
        crate::store::block(self.0.session_count_refusals(session, keys)).map_err(|e| e.to_string())
    }
    fn set_paused(&self, session: &str, paused: bool) -> Result<(), String> {
        crate::store::block(self.0.session_set_paused(session, paused)).map_err(|e| e.to_string())
    }
    fn withdraw(&self, session: &str, connector: &str) -> Result<(), String> {
        crate::store::block(self.0.session_withdraw(session, connector)).map_err(|e| e.to_string())
    }
}

impl Session {
    /// A session for `brand` with the policy input of its role.
    pub fn new(id: impl Into<String>, brand: impl Into<String>, input: SessionInput) -> Session {
        Session {
            id: id.into(),
            brand: brand.into(),
            input,
            revoked: AtomicBool::new(false),
            revision: AtomicU64::new(0),
            opened: OnceLock::new(),
            withdrawn: Mutex::new(BTreeSet::new()),
            removed: OnceLock::new(),
            offered: Mutex::new(None),
            holdings: OnceLock::new(),
            refusals: Mutex::new(Default::default()),
            paused: AtomicBool::new(false),
            effects: Default::default(),
            calls: Default::default(),
            delegation_ended: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            shared: None,
        }
    }

    /// Its changing state kept in `shared` from now on (a fleet's session).
    pub fn shared_in(mut self, shared: Arc<dyn SharedState>) -> Session {
        self.shared = Some(shared);
        self
    }

    /// A session the fleet shares, taken up by this host: what it was
    /// offered and not given at its start, and its state now.
    pub fn taken_up(
        self,
        opened: BTreeSet<String>,
        removed: BTreeMap<String, Removal>,
        now: &SharedStateNow,
    ) -> Session {
        self.set_opened(opened);
        self.set_removed(removed);
        self.apply(now);
        self
    }

    /// Keeps what it was offered when it opened (once).
    pub(crate) fn set_opened(&self, opened: BTreeSet<String>) {
        static OPENED: std::sync::LazyLock<shared::Interner<BTreeSet<String>>> =
            std::sync::LazyLock::new(Default::default);
        let _ = self.opened.set(OPENED.intern(opened));
    }

    /// Keeps what it was not given at its start, with why (once).
    pub(crate) fn set_removed(&self, removed: BTreeMap<String, Removal>) {
        static REMOVED: std::sync::LazyLock<shared::Interner<BTreeMap<String, Removal>>> =
            std::sync::LazyLock::new(Default::default);
        let _ = self.removed.set(REMOVED.intern(removed));
    }

    /// Takes in its state as another host left it (a pause, a withdrawal,
    /// an ended delegation); the next request decides afresh.
    pub fn apply(&self, now: &SharedStateNow) {
        self.paused.store(now.paused, Ordering::SeqCst);
        self.effects.fetch_max(now.effects, Ordering::SeqCst);
        self.calls.fetch_max(now.calls, Ordering::SeqCst);
        if now.delegation_ended {
            self.delegation_ended.store(true, Ordering::SeqCst);
        }
        let changed = {
            let mut withdrawn = self.withdrawn.lock();
            let before = withdrawn.len();
            withdrawn.extend(now.withdrawn.iter().cloned());
            withdrawn.len() != before
        };
        if changed {
            self.bump();
        }
    }

    /// What it was offered when it opened, and what it was not given, with why.
    pub fn opened_and_removed(&self) -> (BTreeSet<String>, BTreeMap<String, Removal>) {
        (
            self.opened.get().map(|o| (**o).clone()).unwrap_or_default(),
            self.removed
                .get()
                .map(|r| (**r).clone())
                .unwrap_or_default(),
        )
    }

    /// Opened under the store's lease generation `generation`.
    pub fn held_under(self, generation: u64) -> Session {
        self.generation.store(generation, Ordering::SeqCst);
        self
    }

    /// The lease generation it was opened under.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The delegation (profile grant) this session's run works under.
    pub(crate) fn delegation(&self) -> Option<&crate::policy::Grant> {
        self.input
            .profile
            .as_ref()
            .map(|p| &p.grant)
            .filter(|g| g.expires_at.is_some() || g.max_effects.is_some())
    }

    /// Writes and billed calls allowed in this run so far.
    pub fn effects(&self) -> u32 {
        self.effects.load(Ordering::SeqCst)
    }

    /// Takes one effect of `max` (none: unlimited); `false` when none is left.
    pub(crate) fn take_effect(&self, max: Option<u32>) -> bool {
        if let Some(shared) = &self.shared {
            return match shared.take_effect(&self.id, max) {
                Ok(taken) => {
                    if taken {
                        self.effects.fetch_add(1, Ordering::SeqCst);
                    }
                    taken
                }
                Err(e) => {
                    tracing::error!(session = %self.id, error = %e, "cannot take an effect in the store; refused");
                    false
                }
            };
        }
        match max {
            None => {
                self.effects.fetch_add(1, Ordering::SeqCst);
                true
            }
            Some(max) => self
                .effects
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    (n < max).then_some(n + 1)
                })
                .is_ok(),
        }
    }

    /// Calls allowed to run so far.
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    /// The limits its orchestrator set on it.
    pub fn limits(&self) -> crate::policy::SessionLimits {
        self.input.limits
    }

    /// Takes one call of `max`; `false` when none is left.
    pub(crate) fn take_call(&self, max: u32) -> bool {
        if let Some(shared) = &self.shared {
            return match shared.take_call(&self.id, max) {
                Ok(taken) => {
                    if taken {
                        self.calls.fetch_add(1, Ordering::SeqCst);
                    }
                    taken
                }
                Err(e) => {
                    tracing::error!(session = %self.id, error = %e, "cannot take a call in the store; refused");
                    false
                }
            };
        }
        self.calls
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Marks the delegation ended; `true` the first time.
    pub(crate) fn end_delegation(&self) -> bool {
        let first_here = !self.delegation_ended.swap(true, Ordering::SeqCst);
        match &self.shared {
            Some(shared) => shared.end_delegation(&self.id).unwrap_or_else(|e| {
                tracing::error!(session = %self.id, error = %e, "cannot record the delegation's end");
                first_here
            }),
            None => first_here,
        }
    }

    /// Counts one refusal under each of `keys`; the highest count, and the
    /// (first) key that reached it.
    pub(crate) fn count_refusal(&self, keys: &[String]) -> (u32, String) {
        if let Some(shared) = &self.shared {
            match shared.count_refusals(&self.id, keys) {
                Ok(counts) => {
                    let mut most = (0, String::new());
                    for (key, n) in keys.iter().zip(counts) {
                        if n > most.0 {
                            most = (n, key.clone());
                        }
                    }
                    return most;
                }
                Err(e) => {
                    tracing::error!(session = %self.id, error = %e, "cannot count a refusal in the store; counted here");
                }
            }
        }
        let mut refusals = self.refusals.lock();
        let mut most = (0, String::new());
        for key in keys {
            let n = refusals.entry(key.clone()).or_insert(0);
            *n += 1;
            if *n > most.0 {
                most = (*n, key.clone());
            }
        }
        most
    }

    /// Pauses the session: every call is refused until [`Session::resume`].
    pub(crate) fn pause(&self) {
        self.paused.store(true, Ordering::SeqCst);
        if let Some(shared) = &self.shared
            && let Err(e) = shared.set_paused(&self.id, true)
        {
            tracing::error!(session = %self.id, error = %e, "cannot record the pause for the fleet; paused on this host");
        }
    }

    /// A person resumed it: calls are decided again, and its refusals
    /// count afresh.
    pub fn resume(&self) -> bool {
        self.refusals.lock().clear();
        if let Some(shared) = &self.shared
            && let Err(e) = shared.set_paused(&self.id, false)
        {
            tracing::error!(session = %self.id, error = %e, "cannot record the resume for the fleet; it stays paused");
            return false;
        }
        self.paused.swap(false, Ordering::SeqCst)
    }

    /// Whether repeated refusals paused it.
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// Gives the session the meters and folders decided for it; once.
    pub(crate) fn hold(&self, holdings: holdings::Holdings) {
        let _ = self.holdings.set(holdings);
    }

    /// Its meters and folders, if it holds any.
    pub fn holdings(&self) -> Option<&holdings::Holdings> {
        self.holdings.get()
    }

    /// The policy input it was opened with.
    pub fn input(&self) -> &SessionInput {
        &self.input
    }

    /// Whether its authority has ended.
    pub fn is_revoked(&self) -> bool {
        self.revoked.load(Ordering::SeqCst)
    }

    /// Ends its authority: every later call is denied.
    pub(crate) fn revoke(&self) {
        self.revoked.store(true, Ordering::SeqCst);
        self.bump();
    }

    /// Withdraws `connector` from its grant.
    pub(crate) fn withdraw(&self, connector: &str) {
        self.withdrawn.lock().insert(connector.to_string());
        self.bump();
        if let Some(shared) = &self.shared
            && let Err(e) = shared.withdraw(&self.id, connector)
        {
            tracing::error!(session = %self.id, error = %e, "cannot record the withdrawal for the fleet; withdrawn on this host");
        }
    }

    /// Whether `connector` was withdrawn from its grant.
    pub(crate) fn is_withdrawn(&self, connector: &str) -> bool {
        self.withdrawn.lock().contains(connector)
    }

    /// Its revision now, beside the host's.
    pub(crate) fn revision(&self, host: u64) -> Revision {
        Revision {
            host,
            session: self.revision.load(Ordering::SeqCst),
        }
    }

    /// The surface computed at `revision`, if that is the one kept.
    pub(crate) fn offered_at(&self, revision: Revision) -> Option<Arc<Offered>> {
        self.offered
            .lock()
            .as_ref()
            .filter(|o| o.revision == revision)
            .cloned()
    }

    /// Keeps `offered` unless a newer revision is kept already.
    pub(crate) fn keep(&self, offered: Arc<Offered>) {
        let mut kept = self.offered.lock();
        let newer = kept.as_ref().is_some_and(|k| {
            k.revision.host > offered.revision.host || k.revision.session > offered.revision.session
        });
        if !newer {
            *kept = Some(offered);
        }
    }

    fn bump(&self) {
        self.revision.fetch_add(1, Ordering::SeqCst);
    }
}
