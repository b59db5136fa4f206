//! The execution boundary (DESIGN D6): where a requested call becomes an
//! effect, or a recorded, bounded denial.
//!
//! The same policy that decided the offered surface is evaluated again here,
//! at the moment of the call, against the current revocations: a call
//! planned, offered or even approved earlier is denied if its connector or
//! its session was revoked since. Approvals are bound to a digest of the
//! exact arguments and consumed once, in the store's transaction. Every
//! state lands in the trace: requested, allowed or denied (with the rule
//! that decided), executed, result; a name outside the ceiling is a
//! `permission_denied` event.

use crate::capabilities::Capabilities;
use crate::policy::{self, Catalog, Gate, MutationGate, PolicyDenial, SessionInput, Switches};
use crate::runtime::{CallOutcome, LoadedComponent, ToolOutput};
use crate::store::{
    ApprovalError, ApprovalId, ApprovalState, Store, TraceEvent, TraceState, args_digest,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// How often a waiting call reads the store although nothing rang: only a
/// decision made by another process on the same database file is seen this
/// way (one in this process rings at once, see [`crate::store::broker`]).
const STORE_RECHECK: Duration = Duration::from_secs(1);

/// HTTP exchanges of one call recorded in its `executed` event; more are counted.
const TRACED_EXCHANGES: usize = 256;

/// Who the trace and the store say decided an approval nobody answered.
pub(crate) const TIMEOUT_DECIDER: &str = "timeout";

/// Told the approval a call asked a person for, so its caller can put the
/// question (MCP elicitation) while the call waits.
pub type AskedFor = tokio::sync::oneshot::Sender<ApprovalId>;

/// One session: who it is for, and what the policy was given to decide it.
pub struct Session {
    /// Session id, as the trace and approvals name it.
    pub id: String,
    /// The brand it acts for.
    pub brand: String,
    input: SessionInput,
    revoked: AtomicBool,
    /// What was offered when the session opened: a tool that has since
    /// disappeared was revoked, not never offered.
    opened: Mutex<BTreeSet<String>>,
    /// Connectors withdrawn from this session's grant.
    withdrawn: Mutex<BTreeSet<String>>,
    /// The tools it was not given at its start, with the rule that removed
    /// each: a call naming one is traced with that rule.
    removed: Mutex<BTreeMap<String, String>>,
}

impl Session {
    /// A session for `brand` with the policy input of its role.
    pub fn new(id: impl Into<String>, brand: impl Into<String>, input: SessionInput) -> Session {
        Session {
            id: id.into(),
            brand: brand.into(),
            input,
            revoked: AtomicBool::new(false),
            opened: Mutex::new(BTreeSet::new()),
            withdrawn: Mutex::new(BTreeSet::new()),
            removed: Mutex::new(BTreeMap::new()),
        }
    }
}

/// Why a call did not run. `reason` is what the agent sees: bounded, safe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .denial.safe_reason())]
pub struct Denied {
    /// The decision.
    pub denial: PolicyDenial,
}

/// A tool call that passed the boundary.
#[derive(Debug)]
pub enum Executed {
    /// The guest ran; its answer (a tool error included) is in the outcome.
    Ran(CallOutcome),
    /// The host could not run it (deadline, trap, bad arguments...).
    Failed(crate::CallError),
}

/// Which of `candidates` (connector server names) still resolve for a brand
/// right now. Only the session's own connectors are asked about, so a call
/// re-resolves one or two credentials, not the whole catalogue.
pub type LiveConnections = Box<dyn Fn(&str, &BTreeSet<String>) -> BTreeSet<String> + Send + Sync>;

/// Decides, at execution time, whether each requested call may run.
pub struct Boundary {
    store: Arc<dyn Store>,
    catalog: Catalog,
    switches: Switches,
    revoked_connectors: Mutex<BTreeSet<String>>,
    live_connections: Option<LiveConnections>,
    require_review: bool,
    /// The connectors this host runs: what a session could be given, for
    /// the `removed` events at its start.
    hosted: BTreeSet<String>,
    next_call: AtomicU64,
}

impl Boundary {
    /// A boundary over `store`, deciding with `catalog` and `switches`.
    pub fn new(store: Arc<dyn Store>, catalog: Catalog, switches: Switches) -> Boundary {
        Boundary {
            store,
            catalog,
            switches,
            revoked_connectors: Mutex::new(BTreeSet::new()),
            live_connections: None,
            require_review: false,
            hosted: BTreeSet::new(),
            next_call: AtomicU64::new(1),
        }
    }

    /// Holds every tool that an operator has not approved as it is now
    /// (see [`crate::review`]): a new or changed tool is not offered.
    pub fn require_review(mut self) -> Boundary {
        self.require_review = true;
        self
    }

    /// Names the connectors this host runs, so a session's start traces a
    /// `removed` event for each of their tools it is not given.
    pub fn hosting<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        connectors: I,
    ) -> Boundary {
        self.hosted = connectors.into_iter().map(Into::into).collect();
        self
    }

    /// Re-resolves a brand's connections at every boundary (for instance
    /// with [`crate::credentials::Resolver::connected`]), so a connection
    /// disabled in the store denies the next call.
    pub fn with_live_connections(mut self, live: LiveConnections) -> Boundary {
        self.live_connections = Some(live);
        self
    }

    /// The store the boundary records into.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The tools `session` is offered now, given current revocations.
    pub fn offered(&self, session: &Session) -> Result<policy::Surface, policy::PolicyError> {
        policy::surface(&self.current_input(session), &self.catalog, &self.switches)
    }

    /// Opens a session: decides its surface now and records what was
    /// registered (the connectors whose credentials resolve) and what is
    /// offered, so the trace can explain every later decision.
    pub fn open_session(&self, session: &Session) -> Result<policy::Surface, policy::PolicyError> {
        self.open_session_with(session, &[])
    }

    /// [`Boundary::open_session`] for a session served by `components`: a
    /// tool the policy allows but an operator has not reviewed (when
    /// [`Boundary::require_review`] is on) is eligible, not offered, and the
    /// trace records a `denied` event with the rule that held it.
    pub(crate) fn open_session_with(
        &self,
        session: &Session,
        components: &[&LoadedComponent],
    ) -> Result<policy::Surface, policy::PolicyError> {
        let input = self.current_input(session);
        let surface = policy::surface(&input, &self.catalog, &self.switches)?;
        *session.opened.lock().unwrap_or_else(|e| e.into_inner()) =
            surface.names().into_iter().map(str::to_string).collect();
        let connected: Vec<&String> = input.brand.connected.iter().collect();
        self.trace(
            session,
            "session",
            "",
            TraceState::Registered,
            None,
            json!({ "connectors": connected }),
        );
        self.trace(
            session,
            "session",
            "",
            TraceState::Eligible,
            None,
            json!({ "tools": surface.names().len() }),
        );
        let mut held = BTreeSet::new();
        if self.require_review {
            for component in components {
                for tool in component.tools() {
                    let name = policy::names::mcp(component.name(), &tool.name);
                    if surface.get(&name).is_some()
                        && let Some(rule) = self.unreviewed(component, &tool.name)
                    {
                        self.trace(
                            session,
                            "session",
                            &name,
                            TraceState::Denied,
                            Some(rule),
                            json!({"held": "not offered until an operator reviews it"}),
                        );
                        held.insert(name);
                    }
                }
            }
        }
        let offered: Vec<&str> = surface
            .names()
            .into_iter()
            .filter(|n| !held.contains(*n))
            .collect();
        // Every tool it could have had and was not given, with the rule that
        // removed it, in one transaction; then what it is offered.
        let removed = policy::removed(&input, &self.catalog, &self.switches, &self.hosted);
        *session.removed.lock().unwrap_or_else(|e| e.into_inner()) = removed
            .iter()
            .map(|r| (r.name.clone(), r.rule.clone()))
            .collect();
        let removed: Vec<TraceEvent> = removed
            .into_iter()
            .map(|r| {
                trace_event(
                    session,
                    "session",
                    &r.name,
                    TraceState::Removed,
                    Some(r.rule),
                    Value::Null,
                )
            })
            .collect();
        if !removed.is_empty()
            && let Err(e) = self.store.record_all(&removed)
        {
            tracing::error!(error = %e, "cannot record the tools a session was not given");
        }
        self.trace(
            session,
            "session",
            "",
            TraceState::Offered,
            None,
            json!({ "tools": offered }),
        );
        Ok(surface)
    }

    /// The tools of `component` that `session` is offered now: allowed by
    /// the policy given current revocations and, when review is required,
    /// approved by an operator as they are now. This is what an MCP
    /// `tools/list` returns.
    pub(crate) fn offered_tools<'c>(
        &self,
        session: &Session,
        component: &'c LoadedComponent,
    ) -> Vec<&'c crate::runtime::Tool> {
        let Ok(surface) = self.offered(session) else {
            return Vec::new();
        };
        if session.revoked.load(Ordering::SeqCst) || self.is_revoked(session, component.name()) {
            return Vec::new();
        }
        component
            .tools()
            .iter()
            .filter(|t| {
                surface
                    .get(&policy::names::mcp(component.name(), &t.name))
                    .is_some()
            })
            .filter(|t| !self.require_review || self.unreviewed(component, &t.name).is_none())
            .collect()
    }

    /// Disables a connector (its connection or its grant) for every session,
    /// from the next execution boundary on; unused approvals for its tools
    /// are revoked and never revive.
    pub fn revoke_connector(&self, connector: &str, sessions: &[&Session]) {
        self.revoked_connectors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(connector.to_string());
        for session in sessions {
            let _ = self.store.revoke_session_approvals(&session.id);
        }
    }

    /// Withdraws a connector from one session's grant (a person edited the
    /// coworker's grant): its tools are denied from the next boundary on,
    /// and the session's unused approvals are revoked.
    pub fn withdraw_grant(&self, session: &Session, connector: &str) {
        session
            .withdrawn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(connector.to_string());
        let _ = self.store.revoke_session_approvals(&session.id);
    }

    /// Re-enables a connector. Approvals revoked with it stay revoked.
    pub fn restore_connector(&self, connector: &str) {
        self.revoked_connectors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(connector);
    }

    /// Ends a session's authority: every later call is denied.
    pub fn revoke_session(&self, session: &Session) {
        session.revoked.store(true, Ordering::SeqCst);
        let _ = self.store.revoke_session_approvals(&session.id);
    }

    fn current_input(&self, session: &Session) -> SessionInput {
        let mut input = session.input.clone();
        let revoked = self
            .revoked_connectors
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        input.brand.connected.retain(|c| !revoked.contains(c));
        let withdrawn = session.withdrawn.lock().unwrap_or_else(|e| e.into_inner());
        input.brand.connected.retain(|c| !withdrawn.contains(c));
        if let Some(live) = &self.live_connections {
            let now = live(&session.brand, &input.brand.connected);
            input.brand.connected.retain(|c| now.contains(c));
        }
        input
    }

    fn is_revoked(&self, session: &Session, connector: &str) -> bool {
        session.revoked.load(Ordering::SeqCst)
            || self
                .revoked_connectors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(connector)
    }

    /// Runs `tool` (its wire name, e.g. `github_create_branch`) of `component`
    /// for `session` if the policy allows it now, waiting for a person's
    /// approval where the gate asks for one.
    pub async fn call(
        &self,
        session: &Session,
        component: &LoadedComponent,
        tool: &str,
        args: &Value,
        caps: &Capabilities,
    ) -> Result<Executed, Denied> {
        self.call_while_present(
            session,
            component,
            tool,
            args,
            caps,
            &CancellationToken::new(),
        )
        .await
    }

    /// [`Boundary::call`] for a caller that can go away (an MCP request
    /// cancelled, its stream closed): when `gone` fires while the call waits
    /// for a person, its approval is withdrawn (revoked, and the trace says
    /// so) and the call is denied. Once allowed, a call runs to its end
    /// whatever the caller does: an effect is never cut off halfway.
    pub async fn call_while_present(
        &self,
        session: &Session,
        component: &LoadedComponent,
        tool: &str,
        args: &Value,
        caps: &Capabilities,
        gone: &CancellationToken,
    ) -> Result<Executed, Denied> {
        self.call_asking(session, component, tool, args, caps, gone, None)
            .await
    }

    /// [`Boundary::call_while_present`] that also tells `asked` which
    /// approval the call asked a person for, when it asks one, so the
    /// caller can put the question itself (MCP elicitation).
    #[allow(clippy::too_many_arguments)]
    pub async fn call_asking(
        &self,
        session: &Session,
        component: &LoadedComponent,
        tool: &str,
        args: &Value,
        caps: &Capabilities,
        gone: &CancellationToken,
        asked: Option<AskedFor>,
    ) -> Result<Executed, Denied> {
        let connector = component.name().to_string();
        let name = policy::names::mcp(&connector, tool);
        let call_id = format!(
            "{}-{}",
            session.id,
            self.next_call.fetch_add(1, Ordering::Relaxed)
        );
        let digest = args_digest(args);
        // A call's steps are written together where they happen together:
        // what was requested and allowed is durable before the effect, what
        // ran and its result right after; a denial with its request.
        let mut trace = CallTrace {
            boundary: self,
            session,
            caps,
            call_id: call_id.clone(),
            name: name.clone(),
            events: Vec::new(),
        };
        trace.push(
            TraceState::Requested,
            None,
            json!({ "args_digest": digest }),
        );

        let gate = match self.decide(session, &connector, &name) {
            Ok(gate) => gate,
            // A tool the session was not given: the trace names the rule
            // that removed it (a switch, registration, the ceiling); the
            // agent is told only that it is not offered.
            Err(PolicyDenial::NotOffered) => {
                let rule = session
                    .removed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&name)
                    .cloned();
                return Err(trace.deny_as(PolicyDenial::NotOffered, rule).await);
            }
            Err(denial) => return Err(trace.deny(denial).await),
        };
        if self.require_review
            && let Some(held) = self.unreviewed(component, tool)
        {
            // Not offered, whatever the policy says; the trace says why, the agent does not.
            trace.push(
                TraceState::PermissionDenied,
                Some(held),
                json!({"reason": PolicyDenial::NotOffered.safe_reason()}),
            );
            return Err(Denied {
                denial: PolicyDenial::NotOffered,
            });
        }
        // Fails closed: a gate whose finer rule is not built yet (the spend
        // thresholds of seed 000's budgets page) asks a person on every call.
        // An allowance is enforced by the `meter` handle on every reservation.
        // Shopify Admin GraphQL: the host parses the operation the tool will
        // send (its `query` argument) to tell a query, which runs, from a
        // mutation, which follows the mutation gate; the `http` handle then
        // refuses a body holding more than was decided here.
        let mut mutation = false;
        let asks = match (&gate, graphql_operation(&gate, args)) {
            (_, Some(Err(why))) => {
                trace.push(
                    TraceState::PermissionDenied,
                    Some("graphql_unreadable".to_string()),
                    json!({ "reason": why }),
                );
                return Err(Denied {
                    denial: PolicyDenial::InvalidArguments,
                });
            }
            (_, Some(Ok(false))) => false,
            (Gate::ReadsRunMutationsGated { mutations }, Some(Ok(true))) => match mutations {
                MutationGate::AsksPerson => {
                    mutation = true;
                    true
                }
                MutationGate::Refuses(r) => return Err(trace.deny(r.denial()).await),
            },
            _ => match asks_person(&gate) {
                Ok(asks) => asks,
                Err(denial) => return Err(trace.deny(denial).await),
            },
        };
        if asks {
            trace.flush_async().await;
            self.await_approval(session, &call_id, &name, &digest, gone, asked)
                .await?;
            // The world may have changed while a person was deciding (for a
            // mutation: its switch turned off).
            match self.decide(session, &connector, &name) {
                Err(denial) => return Err(trace.deny(denial).await),
                Ok(now) if mutation && now.refusal().is_some() => {
                    let denial = now
                        .refusal()
                        .map(|r| r.denial())
                        .unwrap_or(PolicyDenial::ApprovalRequired);
                    return Err(trace.deny(denial).await);
                }
                Ok(_) => {}
            }
        }
        let rule = match &gate {
            Gate::ReadsRunMutationsGated { .. } if !mutation => "graphql_query".to_string(),
            Gate::ReadsRunMutationsGated { .. } => {
                "graphql_mutation_approved_by_person".to_string()
            }
            other => gate_rule(other),
        };
        trace.push(TraceState::Allowed, Some(rule), Value::Null);
        // Fails closed: the intent is durable before the effect, or there is no effect.
        if let Err(e) = trace.write_async().await {
            tracing::error!(error = %e, call = %call_id, "cannot record the call's intent; not running it");
            trace.events.pop();
            return Err(trace.deny(PolicyDenial::Unrecorded).await);
        }

        // A `(graphql)` route carries a mutation only in a call a person
        // approved: a Shopify mutation, or a write tool gated by approval.
        // A metered connector's run starts here, at a call the policy allowed.
        let mut caps = caps.allowed();
        if asks {
            caps.to_mut().graphql_mutations = true;
        }
        let result = component.call(tool, args, &caps).await;
        let executed = match result {
            Ok(outcome) => {
                // What the guest did, exchange by exchange (method, declared
                // route, status, bytes; never headers or bodies) and what it
                // logged; scrubbed with the rest of the call's events.
                trace.push(TraceState::Executed, None, executed_detail(&outcome));
                let detail = match &outcome.output {
                    ToolOutput::Ok(_) => json!({"ok": true, "requests": outcome.http.len()}),
                    ToolOutput::Err(e) => {
                        json!({"ok": false, "tool_error": e, "requests": outcome.http.len()})
                    }
                };
                trace.push(TraceState::Result, None, detail);
                Executed::Ran(outcome)
            }
            Err(e) => {
                trace.push(TraceState::Executed, None, Value::Null);
                trace.push(
                    TraceState::Result,
                    None,
                    json!({"ok": false, "host_error": e.to_string()}),
                );
                Executed::Failed(e)
            }
        };
        // The outcome is durable before the caller hears it.
        if let Err(e) = trace.write_async().await {
            tracing::error!(error = %e, call = %call_id, "cannot record the call's outcome");
        }
        Ok(executed)
    }

    /// `Some("unreviewed_new" | "unreviewed_changed")` when the operator has
    /// not approved the tool as the component describes it now.
    fn unreviewed(&self, component: &LoadedComponent, tool: &str) -> Option<String> {
        let Some(t) = component.tool(tool) else {
            return Some("unknown_tool".to_string());
        };
        use crate::review::ReviewStatus;
        // Fails closed: a store error holds the tool too.
        let held = match crate::review::status_of(self.store.as_ref(), component.name(), t)
            .map(|r| r.status)
        {
            Ok(ReviewStatus::Reviewed) => return None,
            Ok(ReviewStatus::New) => "unreviewed_new",
            Ok(ReviewStatus::Changed) => "unreviewed_changed",
            Err(_) => "unreviewed_store_unavailable",
        };
        Some(held.to_string())
    }

    /// The policy's answer for `name` now.
    fn decide(&self, session: &Session, connector: &str, name: &str) -> Result<Gate, PolicyDenial> {
        if self.is_revoked(session, connector) {
            return Err(PolicyDenial::Revoked);
        }
        let surface = self
            .offered(session)
            .map_err(|_| PolicyDenial::OutsideRole)?;
        match policy::check_call(&surface, name) {
            Err(PolicyDenial::NotOffered)
                if session
                    .opened
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .contains(name) =>
            {
                Err(PolicyDenial::Revoked)
            }
            other => other,
        }
    }

    async fn await_approval(
        &self,
        session: &Session,
        call_id: &str,
        name: &str,
        digest: &str,
        gone: &CancellationToken,
        mut asked: Option<AskedFor>,
    ) -> Result<(), Denied> {
        if !session.input.approval_channel {
            return Err(self.deny(session, call_id, name, PolicyDenial::ApprovalRequired));
        }
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + self.switches.approval_timeout();
        // Withdraws the approval this call asked for if the call goes away
        // (its MCP request cancelled, its stream closed) before it is
        // decided and used: nobody is waiting for it, so nothing may run it.
        let mut withdraw = WithdrawIfGone {
            boundary: self,
            session,
            call_id,
            name,
            approval: None,
        };
        // Subscribe, then read: a decision committed in between rings.
        let mut bell = self.store.watch_approval(&session.id, name, digest);
        let mut watched = match self.store.consume_approval(&session.id, name, digest) {
            Ok(id) => {
                self.trace_decision(session, call_id, name, id, started, None);
                return Ok(());
            }
            // Another call with the same arguments asked already: wait for
            // the same answer.
            Err(ApprovalError::Pending) => self
                .store
                .pending(&session.id)
                .unwrap_or_default()
                .into_iter()
                .find(|a| a.tool == name && a.args_digest == digest)
                .map(|a| a.id),
            // Never asked, or an earlier answer that cannot serve this call
            // (used, denied, revoked): ask again.
            Err(_) => {
                let id = self
                    .store
                    .request_approval(&session.id, name, digest)
                    .map_err(|_| Denied {
                        denial: PolicyDenial::ApprovalRequired,
                    })?;
                self.trace(
                    session,
                    call_id,
                    name,
                    TraceState::Requested,
                    Some("approval_requested".into()),
                    json!({"approval": id.0}),
                );
                withdraw.approval = Some(id);
                if let Some(tx) = asked.take() {
                    let _ = tx.send(id);
                }
                Some(id)
            }
        };
        loop {
            tokio::select! {
                () = bell.rung() => {}
                // Only for a decision made by another process on the same file.
                () = tokio::time::sleep(STORE_RECHECK) => {}
                () = tokio::time::sleep_until(deadline) => {}
                () = gone.cancelled() => {
                    // `withdraw` revokes this call's own approval and
                    // records why as it drops; a call that joined
                    // another's request just records that it left.
                    if withdraw.approval.is_none() {
                        self.trace(session, call_id, name, TraceState::Denied, Some("caller_gone".into()), json!({"reason": "the caller went away while waiting for a person"}));
                    }
                    return Err(Denied { denial: PolicyDenial::ApprovalWithdrawn });
                }
            }
            bell = self.store.watch_approval(&session.id, name, digest);
            let consumed = self.store.consume_approval(&session.id, name, digest);
            if !matches!(consumed, Err(ApprovalError::Pending)) {
                // Decided one way or the other: nothing left to withdraw.
                withdraw.approval = None;
            }
            match consumed {
                Ok(id) => {
                    self.trace_decision(session, call_id, name, id, started, None);
                    return Ok(());
                }
                Err(ApprovalError::Pending) if tokio::time::Instant::now() < deadline => {
                    if watched.is_none() {
                        watched = self
                            .store
                            .pending(&session.id)
                            .unwrap_or_default()
                            .into_iter()
                            .find(|a| a.tool == name && a.args_digest == digest)
                            .map(|a| a.id);
                    }
                }
                Err(ApprovalError::Pending) => {
                    // Timed out: the pending request must not be approvable later.
                    for approval in self.store.pending(&session.id).unwrap_or_default() {
                        if approval.tool == name && approval.args_digest == digest {
                            let _ = self.store.decide(approval.id, false, TIMEOUT_DECIDER);
                            watched = Some(approval.id);
                        }
                    }
                    if let Some(id) = watched {
                        self.trace_decision(
                            session,
                            call_id,
                            name,
                            id,
                            started,
                            Some(TIMEOUT_DECIDER),
                        );
                    }
                    return Err(self.deny(session, call_id, name, PolicyDenial::ApprovalTimedOut));
                }
                Err(other) => {
                    if let Some(id) = watched {
                        self.trace_decision(session, call_id, name, id, started, None);
                    }
                    let denial = match other {
                        ApprovalError::Revoked => PolicyDenial::Revoked,
                        ApprovalError::Denied => PolicyDenial::ApprovalDenied,
                        // Required, already used, unknown, no longer
                        // pending, or the store failing: nobody approved
                        // this call in time.
                        _ => PolicyDenial::ApprovalTimedOut,
                    };
                    return Err(self.deny(session, call_id, name, denial));
                }
            }
        }
    }

    /// Records who decided approval `id` for this call, and when: a person
    /// through the approvals API or MCP elicitation (as `by` says), the
    /// timeout, or a revocation; and how long the call waited.
    fn trace_decision(
        &self,
        session: &Session,
        call_id: &str,
        name: &str,
        id: ApprovalId,
        started: Instant,
        by: Option<&str>,
    ) {
        let approval = self.store.approval(id).ok().flatten();
        let outcome = match approval.as_ref().map(|a| a.state) {
            Some(ApprovalState::Approved) => "approved",
            Some(ApprovalState::Denied) if by == Some(TIMEOUT_DECIDER) => "timed_out",
            Some(ApprovalState::Denied) => "denied",
            Some(ApprovalState::Revoked) => "revoked",
            Some(ApprovalState::Pending) | None => "unknown",
        };
        let detail = json!({
            "approval": id.0,
            "by": by.map(str::to_string).or_else(|| approval.as_ref().and_then(|a| a.decided_by.clone())),
            "decided_at_ms": approval.as_ref().and_then(|a| a.decided_at_ms),
            "waited_ms": started.elapsed().as_millis() as u64,
        });
        self.trace(
            session,
            call_id,
            name,
            TraceState::Decided,
            Some(outcome.to_string()),
            detail,
        );
    }

    fn deny(&self, session: &Session, call_id: &str, name: &str, denial: PolicyDenial) -> Denied {
        let (state, rule, detail) = denial_event(denial);
        self.trace(session, call_id, name, state, rule, detail);
        Denied { denial }
    }

    fn trace(
        &self,
        session: &Session,
        call_id: &str,
        tool: &str,
        state: TraceState,
        rule: Option<String>,
        detail: Value,
    ) {
        let event = trace_event(session, call_id, tool, state, rule, detail);
        if let Err(e) = self.store.record(&event) {
            tracing::error!(error = %e, "cannot record a trace event");
        }
    }
}

fn trace_event(
    session: &Session,
    call_id: &str,
    tool: &str,
    state: TraceState,
    rule: Option<String>,
    detail: Value,
) -> TraceEvent {
    TraceEvent {
        session: session.id.clone(),
        brand: session.brand.clone(),
        call_id: Some(call_id.to_string()),
        tool: (!tool.is_empty()).then(|| tool.to_string()),
        state,
        rule,
        detail,
        at_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0),
    }
}

/// The `executed` event's detail: the call's HTTP exchanges, guest logs and
/// captured output (each already capped by the runtime), and its duration.
fn executed_detail(outcome: &CallOutcome) -> Value {
    // A guest may make as many requests as its deadline allows: the trace
    // keeps the first ones and counts the rest.
    let shown = &outcome.http[..outcome.http.len().min(TRACED_EXCHANGES)];
    let mut detail = json!({ "micros": outcome.micros, "http": shown, "logs": outcome.logs });
    if let Value::Object(map) = &mut detail {
        if outcome.http.len() > shown.len() {
            map.insert(
                "http_not_shown".to_string(),
                json!(outcome.http.len() - shown.len()),
            );
        }
        for (key, text) in [("stdout", &outcome.stdout), ("stderr", &outcome.stderr)] {
            if !text.is_empty() {
                map.insert(key.to_string(), Value::String(text.clone()));
            }
        }
        if outcome.output_dropped > 0 {
            map.insert("output_dropped".to_string(), json!(outcome.output_dropped));
        }
    }
    detail
}

fn denial_event(denial: PolicyDenial) -> (TraceState, Option<String>, Value) {
    let state = if denial == PolicyDenial::NotOffered {
        TraceState::PermissionDenied
    } else {
        TraceState::Denied
    };
    let rule = Some(denial.rule()).filter(|r| !r.is_empty());
    (state, rule, json!({"reason": denial.safe_reason()}))
}

/// An approval request whose call may still go away while it waits: on
/// drop, an approval still unused is revoked and the trace says why.
struct WithdrawIfGone<'a> {
    boundary: &'a Boundary,
    session: &'a Session,
    call_id: &'a str,
    name: &'a str,
    approval: Option<ApprovalId>,
}

impl Drop for WithdrawIfGone<'_> {
    fn drop(&mut self) {
        let Some(id) = self.approval.take() else {
            return;
        };
        match self.boundary.store.revoke_approval(id, "withdrawn: the caller went away") {
            Ok(true) => self.boundary.trace(
                self.session,
                self.call_id,
                self.name,
                TraceState::Denied,
                Some("approval_withdrawn".to_string()),
                json!({"approval": id.0, "reason": "the call's caller went away before a person decided; the approval was revoked"}),
            ),
            // Decided or used in the meantime: it served (or refused) this call.
            Ok(false) => {}
            Err(e) => tracing::error!(error = %e, approval = id.0, "cannot withdraw an approval whose caller went away"),
        }
    }
}

/// The trace events of one call not yet written. Whatever is buffered when
/// the call ends (returns, is denied, or its future is dropped) is written,
/// scrubbed of the secrets the call's handles carry.
struct CallTrace<'a> {
    boundary: &'a Boundary,
    session: &'a Session,
    caps: &'a Capabilities,
    call_id: String,
    name: String,
    events: Vec<TraceEvent>,
}

impl CallTrace<'_> {
    fn push(&mut self, state: TraceState, rule: Option<String>, detail: Value) {
        self.events.push(trace_event(
            self.session,
            &self.call_id,
            &self.name,
            state,
            rule,
            detail,
        ));
    }

    async fn deny(&mut self, denial: PolicyDenial) -> Denied {
        self.deny_as(denial, None).await
    }

    /// [`CallTrace::deny`] recording `rule` (when known) as the deciding rule.
    async fn deny_as(&mut self, denial: PolicyDenial, rule: Option<String>) -> Denied {
        let (state, default_rule, detail) = denial_event(denial);
        self.push(state, rule.or(default_rule), detail);
        self.flush_async().await;
        Denied { denial }
    }

    fn scrub(&mut self) {
        for event in &mut self.events {
            self.caps.scrub_json(&mut event.detail);
        }
    }

    /// Writes the buffered events (scrubbed); on error they stay buffered.
    fn write(&mut self) -> Result<(), crate::store::StoreError> {
        if self.events.is_empty() {
            return Ok(());
        }
        self.scrub();
        self.boundary.store.record_all(&self.events)?;
        self.events.clear();
        Ok(())
    }

    /// [`CallTrace::write`] without holding a runtime worker while the disk works.
    async fn write_async(&mut self) -> Result<(), crate::store::StoreError> {
        if self.events.is_empty() {
            return Ok(());
        }
        self.scrub();
        // Out of the buffer before the await: if this future is dropped once
        // the rows are handed to the writer, the trace's drop does not write
        // them a second time. On an error they go back.
        let events = std::mem::take(&mut self.events);
        match self.boundary.store.record_all_async(&events).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.events = events;
                Err(e)
            }
        }
    }

    /// [`CallTrace::flush`] without holding a runtime worker (a denial, or
    /// the request before an approval wait, is written as the call goes on).
    async fn flush_async(&mut self) {
        if let Err(e) = self.write_async().await {
            tracing::error!(error = %e, "cannot record trace events");
            self.events.clear();
        }
    }

    fn flush(&mut self) {
        if let Err(e) = self.write() {
            tracing::error!(error = %e, "cannot record trace events");
            self.events.clear();
        }
    }
}

impl Drop for CallTrace<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// For a tool whose gate tells reads from mutations: whether the GraphQL
/// document in its `query` argument holds anything but queries, or why it
/// cannot be read (no `query` string, a parse error). `None` for other gates.
fn graphql_operation(gate: &Gate, args: &Value) -> Option<Result<bool, String>> {
    matches!(gate, Gate::ReadsRunMutationsGated { .. })
        .then(|| crate::capabilities::graphql::argument_mutates(args))
}

/// Whether a call through `gate` waits for a person, or is refused.
fn asks_person(gate: &Gate) -> Result<bool, PolicyDenial> {
    match gate {
        Gate::Open | Gate::Allowance { .. } => Ok(false),
        Gate::AsksPerson | Gate::Spend { .. } | Gate::ReadsRunMutationsGated { .. } => Ok(true),
        Gate::Refuses(r) => Err(r.denial()),
    }
}

fn gate_rule(gate: &Gate) -> String {
    match gate {
        Gate::Open => "open".to_string(),
        Gate::AsksPerson | Gate::Spend { .. } | Gate::ReadsRunMutationsGated { .. } => {
            "approved_by_person".to_string()
        }
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| {
                v.as_object()
                    .and_then(|o| o.keys().next().cloned())
                    .or_else(|| v.as_str().map(str::to_string))
            })
            .unwrap_or_else(|| "gated".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{AboveThreshold, Refusal};

    #[test]
    fn the_executed_event_keeps_the_first_exchanges_and_counts_the_rest() {
        let exchange = crate::capabilities::http::HttpExchange {
            destination: None,
            method: "GET".into(),
            path: "/items/1".into(),
            route: Some("GET /items/{id}".into()),
            status: Some(200),
            request_bytes: 0,
            response_bytes: 12,
            error: None,
            micros: 5,
        };
        let outcome = CallOutcome {
            output: ToolOutput::Ok(Value::Null),
            stdout: String::new(),
            stderr: "a line\n".into(),
            output_dropped: 0,
            logs: Vec::new(),
            http: vec![exchange; TRACED_EXCHANGES + 44],
            micros: 9,
        };
        let detail = executed_detail(&outcome);
        assert_eq!(detail["http"].as_array().unwrap().len(), TRACED_EXCHANGES);
        assert_eq!(detail["http_not_shown"], 44);
        assert_eq!(detail["http"][0]["route"], "GET /items/{id}");
        assert_eq!(detail["stderr"], "a line\n");
        assert!(detail.get("stdout").is_none(), "empty output is left out");
    }

    #[test]
    fn gates_not_built_in_detail_fail_closed() {
        assert_eq!(asks_person(&Gate::Open), Ok(false));
        assert_eq!(asks_person(&Gate::AsksPerson), Ok(true));
        let spend = Gate::Spend {
            connector: "firecrawl".into(),
            above_threshold: AboveThreshold::AsksPerson,
        };
        assert_eq!(
            asks_person(&spend),
            Ok(true),
            "every billed call asks until thresholds exist"
        );
        let graphql = Gate::ReadsRunMutationsGated {
            mutations: MutationGate::AsksPerson,
        };
        assert_eq!(
            asks_person(&graphql),
            Ok(true),
            "a mutation cannot slip through as a read"
        );
        assert_eq!(
            asks_person(&Gate::Refuses(Refusal::NoApprovalChannel)),
            Err(PolicyDenial::ApprovalRequired)
        );
    }
}
