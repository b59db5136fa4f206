//! A gated call's wait for a person: the approval asked for (or joined),
//! the decision rung by the store's broker, the timeout, and the withdrawal
//! when the caller goes away. Only a gated call reaches this module: its
//! arguments are kept here, for the approvals API to show, while it waits.

use super::{AskedFor, Boundary, Denied};
use crate::policy::Rule;
use crate::session::Session;
use crate::store::{Approval, ApprovalError, ApprovalId, ApprovalState, TraceEvent, TraceState};
use crate::trace::{CallRows, Decided};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often a waiting call reads the store although nothing rang: only a
/// decision made by another process on the same database file is seen this
/// way (one in this process rings at once, see [`crate::store::broker`]).
const STORE_RECHECK: Duration = Duration::from_secs(1);

/// Who the trace and the store say decided an approval nobody answered.
pub(crate) const TIMEOUT_DECIDER: &str = "timeout";

/// The arguments of calls waiting for a person, by session and digest, so
/// the approvals API can show a person what they approve (the store keeps
/// only digests). Counted: two identical calls may wait at once.
#[derive(Default)]
pub(super) struct WaitingArgs {
    waiting: parking_lot::Mutex<HashMap<(String, String), (usize, Value)>>,
}

impl WaitingArgs {
    pub(super) fn get(&self, session: &str, digest: &str) -> Option<Value> {
        self.waiting
            .lock()
            .get(&(session.to_string(), digest.to_string()))
            .map(|(_, args)| args.clone())
    }

    fn show<'w>(&'w self, session: &str, digest: &str, args: &Value) -> Shown<'w> {
        let key = (session.to_string(), digest.to_string());
        self.waiting
            .lock()
            .entry(key.clone())
            .or_insert_with(|| (0, args.clone()))
            .0 += 1;
        Shown { args: self, key }
    }
}

/// Keeps a waiting call's arguments visible until it stops waiting (it may
/// be dropped mid-wait when its client goes away).
struct Shown<'w> {
    args: &'w WaitingArgs,
    key: (String, String),
}

impl Drop for Shown<'_> {
    fn drop(&mut self) {
        let mut waiting = self.args.waiting.lock();
        if let Some(entry) = waiting.get_mut(&self.key) {
            entry.0 -= 1;
            if entry.0 == 0 {
                waiting.remove(&self.key);
            }
        }
    }
}

/// One call's wait.
pub(super) struct Wait<'a> {
    pub(super) session: &'a Session,
    pub(super) call_id: &'a str,
    pub(super) name: &'a str,
    pub(super) digest: &'a str,
    pub(super) args: &'a Value,
    pub(super) gone: &'a CancellationToken,
    pub(super) asked: Option<AskedFor>,
    /// The trace and span the call's rows name (see [`super::trace::CallTrace`]).
    pub(super) origin: &'a crate::store::Origin,
    /// The call's exported span, if spans are exported.
    pub(super) span: Option<&'a crate::telemetry::CallSpan>,
    /// What the call would reach, as its denials are counted by
    /// ([`super::lineage`]).
    pub(super) targets: &'a [String],
    /// For a reservation above the per-call threshold, asked while the call
    /// runs: what the trace's request and decision add (the estimate, its
    /// unit, the threshold). Such a wait records no `denied` event (the
    /// call goes on, and its guest is refused the reservation): the
    /// decision, or the withdrawal, is the wait's last event.
    pub(super) spend: Option<&'a Value>,
    /// A remote MCP server's tool (the connector as the call began, and
    /// the tool): an approval revoked because the tool changed or was
    /// reviewed anew ends the call with the rule that holds it now.
    pub(super) remote: Option<(&'a crate::runtime::LoadedComponent, &'a str)>,
}

/// Where a wait's trace events go once written, besides the trace: a
/// decision and the request for it to the wait's span, a denial to the
/// call's.
#[derive(Clone, Copy, Default)]
struct Spans<'a> {
    call: Option<&'a crate::telemetry::CallSpan>,
    wait: Option<&'a crate::telemetry::WaitSpan>,
    /// The ids the call's rows carry.
    origin: Option<&'a crate::store::Origin>,
}

impl Spans<'_> {
    /// The trace and span a row in `state` names: the wait's span for the
    /// request and the decision, else the call's.
    fn origin(&self, state: TraceState) -> crate::store::Origin {
        match (state, self.wait) {
            (TraceState::Requested | TraceState::Decided, Some(wait)) => wait.origin(),
            _ => self.origin.cloned().unwrap_or_default(),
        }
    }

    fn written(&self, event: &crate::store::TraceEvent) {
        match (event.state, self.wait, self.call) {
            (TraceState::Requested | TraceState::Decided, Some(wait), _) => wait.written(event),
            (_, _, Some(call)) => call.written(std::slice::from_ref(event)),
            _ => {}
        }
    }
}

impl Boundary {
    /// Waits for a person to approve this exact call; the approval it
    /// consumed, or why it may not run.
    pub(super) async fn await_approval(&self, wait: Wait<'_>) -> Result<ApprovalId, Denied> {
        let Wait {
            session,
            call_id,
            name,
            digest,
            args,
            gone,
            mut asked,
            span,
            origin,
            targets,
            spend,
            remote,
        } = wait;
        let during_call = spend.is_some();
        if !session.input.approval_channel {
            let spans = Spans {
                call: span,
                wait: None,
                origin: Some(origin),
            };
            return Err(self.refuse(
                session,
                call_id,
                name,
                Rule::ApprovalRequired,
                spans,
                during_call,
                targets,
            ));
        }
        let wait_span = span.map(|s| s.wait(name));
        let spans = Spans {
            call: span,
            wait: wait_span.as_ref(),
            origin: Some(origin),
        };
        let _shown = self.waiting_args.show(&session.id, digest, args);
        // The exact arguments, sealed with the store key, for the row of the
        // decision: an auditor can read what was approved or denied.
        let sealed = self.sealed_for_audit(&session.id, name, digest, args);
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
            spans,
            during_call,
        };
        // Subscribe, then read: a decision committed in between rings.
        let mut bell = self.store.watch_approval(&session.id, name, digest);
        let mut watched = match self.store.consume_approval(&session.id, name, digest).await {
            Ok(id) => {
                self.trace_decision(
                    session,
                    call_id,
                    name,
                    id,
                    started,
                    None,
                    spans,
                    spend,
                    sealed.as_ref(),
                );
                return Ok(id);
            }
            // Another call with the same arguments asked already: wait for
            // the same answer.
            Err(ApprovalError::Pending) => self
                .store
                .pending(&session.id)
                .await
                .unwrap_or_default()
                .into_iter()
                .find(|a| a.tool == name && a.args_digest == digest)
                .map(|a| a.id),
            // Never asked, or an earlier answer that cannot serve this call
            // (used, denied, revoked): ask again.
            Err(_) => {
                let requested = match &self.arguments_key {
                    Some(key) => {
                        self.store
                            .request_approval_showing(&session.id, name, digest, args, key)
                            .await
                    }
                    None => self.store.request_approval(&session.id, name, digest).await,
                };
                let id = match requested {
                    Ok(id) => id,
                    // The request could not be recorded (the store is away):
                    // nothing runs, and the call's end is in its trace (kept
                    // to be written once the store takes it).
                    Err(e) => {
                        tracing::error!(error = %e, call = %call_id, "cannot ask for an approval; not running the call");
                        return Err(self.refuse(
                            session,
                            call_id,
                            name,
                            Rule::Unrecorded,
                            spans,
                            during_call,
                            targets,
                        ));
                    }
                };
                if let Some(metrics) = &self.metrics {
                    metrics.approval_asked();
                }
                let request = with_spend(json!({"approval": id.0}), spend);
                self.trace(CallRows::new(session, call_id, name).approval_asked(request), spans);
                withdraw.approval = Some(id);
                if let Some(tx) = asked.take() {
                    let _ = tx.send(id);
                }
                Some(id)
            }
        };
        // Whether the store failed to answer during the wait.
        let mut store_failed = false;
        loop {
            tokio::select! {
                () = bell.rung() => {}
                // Only for a decision made by another process on the same file.
                () = tokio::time::sleep(STORE_RECHECK) => {}
                () = tokio::time::sleep_until(deadline) => {}
                () = self.shutdown.cancelled() => {
                    // Nobody may approve it once this host is gone: revoked
                    // with its own rule, and the call ends without running.
                    if let Some(id) = withdraw.approval.take() {
                        match self.store.revoke_approval(id, Rule::HostShutdown.name().as_ref()).await {
                            Ok(_) => {}
                            Err(e) => tracing::error!(error = %e, approval = id.0, "cannot revoke an approval at shutdown"),
                        }
                        watched = Some(id);
                    }
                    if let Some(id) = watched {
                        self.trace_decision(session, call_id, name, id, started, Some(Rule::HostShutdown.name().as_ref()), spans, spend, sealed.as_ref());
                    }
                    return Err(self.refuse(session, call_id, name, Rule::HostShutdown, spans, during_call, targets));
                }
                () = gone.cancelled() => {
                    // `withdraw` revokes this call's own approval and
                    // records why as it drops; a call that joined
                    // another's request just records that it left.
                    if withdraw.approval.is_none() {
                        return Err(self.refuse(session, call_id, name, Rule::CallerGone, spans, during_call, targets));
                    }
                    return Err(Denied::by(Rule::ApprovalWithdrawn));
                }
            }
            bell = self.store.watch_approval(&session.id, name, digest);
            let consumed = self.store.consume_approval(&session.id, name, digest).await;
            // The store away for a moment (a database restarting): the
            // approval waits as it was, and a person may still decide it
            // once the store is back, until the deadline.
            if let Err(ApprovalError::Store(e)) = &consumed
                && tokio::time::Instant::now() < deadline
            {
                // Once per wait: the store's own outage is logged where it starts.
                if !store_failed {
                    tracing::warn!(error = %e, call = %call_id, "cannot read the approval this call waits for; waiting on");
                }
                store_failed = true;
                continue;
            }
            if !matches!(consumed, Err(ApprovalError::Pending)) {
                // Decided one way or the other: nothing left to withdraw.
                withdraw.approval = None;
            }
            match consumed {
                Ok(id) => {
                    self.trace_decision(
                        session,
                        call_id,
                        name,
                        id,
                        started,
                        None,
                        spans,
                        spend,
                        sealed.as_ref(),
                    );
                    return Ok(id);
                }
                Err(ApprovalError::Pending) if tokio::time::Instant::now() < deadline => {
                    if watched.is_none() {
                        watched = self
                            .store
                            .pending(&session.id)
                            .await
                            .unwrap_or_default()
                            .into_iter()
                            .find(|a| a.tool == name && a.args_digest == digest)
                            .map(|a| a.id);
                    }
                }
                Err(ApprovalError::Pending) => {
                    // Timed out: the pending request must not be approvable later.
                    for approval in self.store.pending(&session.id).await.unwrap_or_default() {
                        if approval.tool == name && approval.args_digest == digest {
                            let _ = self.store.decide(approval.id, false, TIMEOUT_DECIDER).await;
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
                            spans,
                            spend,
                            sealed.as_ref(),
                        );
                    }
                    return Err(self.refuse(
                        session,
                        call_id,
                        name,
                        Rule::ApprovalTimedOut,
                        spans,
                        during_call,
                        targets,
                    ));
                }
                Err(other) => {
                    if let Some(id) = watched {
                        self.trace_decision(
                            session,
                            call_id,
                            name,
                            id,
                            started,
                            None,
                            spans,
                            spend,
                            sealed.as_ref(),
                        );
                    }
                    let rule = match other {
                        // Revoked because the tool changed (the server's
                        // listing, its review): the rule that holds it now.
                        ApprovalError::Revoked => match remote {
                            Some((component, tool)) => self
                                .remote_review_now(component, tool)
                                .await
                                .err()
                                .unwrap_or(Rule::Revoked),
                            None => Rule::Revoked,
                        },
                        ApprovalError::Denied => Rule::ApprovalDenied,
                        // Spent while the store did not answer: perhaps by
                        // this very call's spend whose answer was lost, so
                        // it does not run; asking again is safe.
                        ApprovalError::AlreadyUsed if store_failed => Rule::Unrecorded,
                        // Required, already used, unknown, no longer
                        // pending, or the store failing: nobody approved
                        // this call in time.
                        _ => Rule::ApprovalTimedOut,
                    };
                    return Err(self.refuse(
                        session,
                        call_id,
                        name,
                        rule,
                        spans,
                        during_call,
                        targets,
                    ));
                }
            }
        }
    }

    /// `arguments` sealed with the store key for the audit record
    /// (`{"nonce", "ciphertext"}`, base64), bound to the session, tool and
    /// digest; `None` without a key.
    fn sealed_for_audit(
        &self,
        session: &str,
        tool: &str,
        digest: &str,
        arguments: &Value,
    ) -> Option<Value> {
        use base64::Engine;
        let key = self.arguments_key.as_ref()?;
        let (nonce, ciphertext) =
            crate::store::seal_arguments(key, session, tool, digest, arguments).ok()?;
        let b64 = base64::engine::general_purpose::STANDARD;
        Some(
            json!({"args_digest": digest, "nonce": b64.encode(nonce), "ciphertext": b64.encode(ciphertext)}),
        )
    }

    /// Records who decided approval `id` for this call, and when: a person
    /// through the approvals API or MCP elicitation (as `by` says), the
    /// timeout, or a revocation; and how long the call waited (and, for a
    /// reservation above the threshold, its estimate).
    #[allow(clippy::too_many_arguments)]
    fn trace_decision(
        &self,
        session: &Session,
        call_id: &str,
        name: &str,
        id: ApprovalId,
        started: Instant,
        by: Option<&str>,
        spans: Spans<'_>,
        spend: Option<&Value>,
        sealed: Option<&Value>,
    ) {
        let approval = crate::store::block(self.store.approval(id)).ok().flatten();
        let outcome = match approval.as_ref().map(|a| a.state) {
            Some(ApprovalState::Approved) => Decided::Approved,
            Some(ApprovalState::Denied) if by == Some(TIMEOUT_DECIDER) => Decided::TimedOut,
            Some(ApprovalState::Denied) => Decided::Denied,
            Some(ApprovalState::Revoked) => Decided::Revoked,
            Some(ApprovalState::Pending) | None => Decided::Unknown,
        };
        if let Some(metrics) = &self.metrics {
            metrics.approval_decided(outcome.name(), started.elapsed());
        }
        // Who decided, as fields: the person's verified identity when the
        // decision kept it, else the host (a timeout, a revocation, a
        // restart), named by `by`.
        let actor = match (by, approval.as_ref()) {
            (
                None,
                Some(Approval {
                    decided_actor: Some(actor),
                    ..
                }),
            ) => actor.clone(),
            // Decided by someone who gave no fields (a store's own caller):
            // the text it gave is the subject.
            (None, Some(a))
                if matches!(a.state, ApprovalState::Approved | ApprovalState::Denied) =>
            {
                json!({"kind": "person", "subject": a.decided_by, "sub": null, "issuer": null, "via": null, "role": null})
            }
            _ => json!({
                "kind": "host",
                "subject": null,
                "sub": null,
                "issuer": null,
                "via": if by == Some(TIMEOUT_DECIDER) { "timeout" } else { "host" },
                "role": null,
            }),
        };
        let detail = json!({
            "approval": id.0,
            "actor": actor,
            "by": by.map(str::to_string).or_else(|| approval.as_ref().and_then(|a| a.decided_by.clone())),
            "decided_at_ms": approval.as_ref().and_then(|a| a.decided_at_ms),
            "waited_ms": started.elapsed().as_millis() as u64,
        });
        let mut detail = with_spend(detail, spend);
        if let Some(sealed) = sealed {
            detail["sealed_arguments"] = sealed.clone();
        }
        self.trace(CallRows::new(session, call_id, name).decided(outcome, detail), spans);
    }

    /// [`Boundary::deny`], or for a wait during a call (a reservation above
    /// the threshold) the refusal alone: the call goes on, so no `denied`
    /// event, which would end its story in the trace.
    #[allow(clippy::too_many_arguments)]
    fn refuse(
        &self,
        session: &Session,
        call_id: &str,
        name: &str,
        rule: Rule,
        spans: Spans<'_>,
        during_call: bool,
        targets: &[String],
    ) -> Denied {
        if during_call {
            return Denied::by(rule);
        }
        self.deny(session, call_id, name, rule, spans, targets)
    }

    #[allow(clippy::too_many_arguments)]
    fn deny(
        &self,
        session: &Session,
        call_id: &str,
        name: &str,
        rule: Rule,
        spans: Spans<'_>,
        targets: &[String],
    ) -> Denied {
        let lineage = super::lineage::record(session, targets, rule, self.pause_after);
        let refused = CallRows::new(session, call_id, name).refused(rule, lineage.as_ref());
        self.trace(refused, spans);
        Denied { rule, lineage }
    }

    /// Writes one row of the wait, naming the span `spans` give its state.
    fn trace(&self, mut event: TraceEvent, spans: Spans<'_>) {
        event.origin = spans.origin(event.state);
        if self.write_or_owe(std::slice::from_ref(&event), "a trace event") {
            spans.written(&event);
        }
    }
}

/// `detail` with the fields of a reservation above the threshold added.
fn with_spend(mut detail: Value, spend: Option<&Value>) -> Value {
    if let (Some(Value::Object(extra)), Value::Object(fields)) = (spend, &mut detail) {
        for (k, v) in extra {
            fields.insert(k.clone(), v.clone());
        }
    }
    detail
}

/// An approval request whose call may still go away while it waits: on
/// drop, an approval still unused is revoked and the trace says why.
struct WithdrawIfGone<'a> {
    boundary: &'a Boundary,
    session: &'a Session,
    call_id: &'a str,
    name: &'a str,
    approval: Option<ApprovalId>,
    spans: Spans<'a>,
    /// Asked while the call runs: the withdrawal is the wait's decision,
    /// not the call's end.
    during_call: bool,
}

impl Drop for WithdrawIfGone<'_> {
    fn drop(&mut self) {
        let Some(id) = self.approval.take() else {
            return;
        };
        match crate::store::block(self.boundary.store.revoke_approval(id, "withdrawn: the caller went away")) {
            Ok(true) => self.boundary.trace(
                CallRows::new(self.session, self.call_id, self.name).withdrawn(id, self.during_call),
                self.spans,
            ),
            // Decided or used in the meantime: it served (or refused) this call.
            Ok(false) => {}
            Err(e) => tracing::error!(error = %e, approval = id.0, "cannot withdraw an approval whose caller went away"),
        }
    }
}
